package history

import (
	"fmt"
	"testing"
)

// The table numbers each (key, token) pair once, through its growth and
// through pairs whose hashes share a slot or are equal.
func TestTokenTableNumbersEachPairOnce(t *testing.T) {
	tab := newTokenTable(4, false)
	want := map[tokenPair]int32{}
	pair := func(i int) tokenPair { return tokenPair{token: fmt.Sprintf("t%d", i%5000), key: int32(i % 3)} }
	for i := range 20000 {
		p := pair(i)
		got := tab.number(p.key, p.token)
		if n, seen := want[p]; seen && n != got {
			t.Fatalf("%v was %d and is now %d", p, n, got)
		} else if !seen {
			if got != int32(len(want)) {
				t.Fatalf("new pair %v got %d; want the next number, %d", p, got, len(want))
			}
			want[p] = got
		}
	}
	if tab.len() != len(want) {
		t.Errorf("the table counts %d pairs; there are %d", tab.len(), len(want))
	}
	// Pairs whose hash is another's: each is told from (1, "a") by its
	// token or its key.
	for _, other := range []tokenPair{{"b", 1}, {"a", 2}} {
		tab = newTokenTable(4, false)
		h := hashPair(other.key, other.token)
		// (1, "a") numbered 0, in the slot where other's probe starts,
		// as if it hashed alike.
		tab.slots[h&uint32(len(tab.slots)-1)] = tokenSlot{hash: h, id: 1}
		tab.pairs = append(tab.pairs, tokenPair{"a", 1})
		if b := tab.number(other.key, other.token); b != 1 {
			t.Errorf("%v got %d; want 1, for 0 is (1, a), whose hash it shares", other, b)
		}
	}
}
