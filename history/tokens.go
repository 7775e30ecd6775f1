package history

import (
	"math/bits"

	"github.com/lockharness/lockharness/internal/hugepages"
)

// tokenTable numbers (key, token) pairs densely. It is an open-addressing
// table over FNV-1a hashes rather than a map: a soak's history looks up a
// token for every operation, and a Go map of strings spent most of the
// time of pairing a million of them. A slot holds only a hash and a
// number, and the pairs themselves are kept in the order of their
// numbers: probed at random, a table of whole pairs was 400 MB of a
// 10M-operation history's check, and a third of its time went to cache
// misses and page faults in it.
type tokenTable struct {
	slots []tokenSlot // a power of two of them, at most three quarters used
	pairs []tokenPair // by number
	huge  bool        // the slots are asked for on huge pages
}

// tokenSlot is a pair's hash and its number plus one, 0 for an empty slot.
type tokenSlot struct {
	hash uint32
	id   int32
}

type tokenPair struct {
	token string
	key   int32
}

// newTokenTable makes room for about pairs pairs, on huge pages if huge
// (NewOfflineOpsBuilder).
func newTokenTable(pairs int, huge bool) tokenTable {
	n := 1 << max(10, bits.Len(uint(pairs+pairs/3)))
	t := tokenTable{slots: make([]tokenSlot, n), pairs: make([]tokenPair, 0, pairs), huge: huge}
	if huge {
		hugepages.Advise(t.slots)
		hugepages.Advise(t.pairs)
	}
	return t
}

func hashPair(key int32, token string) uint32 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(token); i++ {
		h = (h ^ uint64(token[i])) * 1099511628211
	}
	h = (h ^ uint64(uint32(key))) * 1099511628211
	return uint32(h ^ h>>32)
}

// number returns the pair's number, giving the next one to a new pair.
func (t *tokenTable) number(key int32, token string) int32 {
	if 4*(len(t.pairs)+1) > 3*len(t.slots) {
		t.grow()
	}
	h := hashPair(key, token)
	mask := uint32(len(t.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		s := &t.slots[i]
		switch {
		case s.id == 0:
			t.pairs = append(t.pairs, tokenPair{token: token, key: key})
			*s = tokenSlot{hash: h, id: int32(len(t.pairs))}
			return s.id - 1
		case s.hash == h:
			if p := &t.pairs[s.id-1]; p.key == key && p.token == token {
				return s.id - 1
			}
		}
	}
}

// len is how many pairs are numbered.
func (t *tokenTable) len() int { return len(t.pairs) }

func (t *tokenTable) grow() {
	old := t.slots
	n := max(1024, 2*len(old))
	t.slots = make([]tokenSlot, n)
	if t.huge {
		hugepages.Advise(t.slots)
	}
	mask := uint32(n - 1)
	for _, s := range old {
		if s.id == 0 {
			continue
		}
		i := s.hash & mask
		for t.slots[i].id != 0 {
			i = (i + 1) & mask
		}
		t.slots[i] = s
	}
}
