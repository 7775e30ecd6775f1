package history

import (
	"math/bits"

	"github.com/lockharness/lockharness/internal/hugepages"
)

// tokenTable numbers (key, token) pairs densely. It is an open-addressing
// table over FNV-1a hashes rather than a map: a soak's history looks up a
// token for every operation, and a Go map of strings spent most of the
// time of pairing a million of them.
type tokenTable struct {
	slots []tokenSlot // a power of two of them, at most three quarters used
	n     int32
}

// tokenSlot is one pair; id is its number plus one, 0 for an empty slot.
type tokenSlot struct {
	token string
	key   int32
	id    int32
}

// newTokenTable makes room for about pairs pairs.
func newTokenTable(pairs int) tokenTable {
	n := 1 << max(10, bits.Len(uint(pairs)))
	return tokenTable{slots: hugepages.Make[tokenSlot](n, n)}
}

func hashPair(key int32, token string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(token); i++ {
		h = (h ^ uint64(token[i])) * 1099511628211
	}
	return (h ^ uint64(uint32(key))) * 1099511628211
}

// number returns the pair's number, giving the next one to a new pair.
func (t *tokenTable) number(key int32, token string) int32 {
	if 4*int(t.n+1) > 3*len(t.slots) {
		t.grow()
	}
	mask := uint64(len(t.slots) - 1)
	for i := hashPair(key, token) & mask; ; i = (i + 1) & mask {
		s := &t.slots[i]
		switch {
		case s.id == 0:
			t.n++
			*s = tokenSlot{token: token, key: key, id: t.n}
			return t.n - 1
		case s.key == key && s.token == token:
			return s.id - 1
		}
	}
}

func (t *tokenTable) grow() {
	old := t.slots
	n := max(1024, 2*len(old))
	t.slots = hugepages.Make[tokenSlot](n, n)
	mask := uint64(len(t.slots) - 1)
	for _, s := range old {
		if s.id == 0 {
			continue
		}
		i := hashPair(s.key, s.token) & mask
		for t.slots[i].id != 0 {
			i = (i + 1) & mask
		}
		t.slots[i] = s
	}
}
