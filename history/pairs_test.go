package history

import "testing"

func TestPairs(t *testing.T) {
	events := []Event{
		{Index: 0, Type: Invoke, Process: 0, F: Acquire},
		{Index: 1, Type: Info, Process: Nemesis, F: "partition", Phase: Start},
		{Index: 2, Type: Invoke, Process: 1, F: Acquire},
		{Index: 3, Type: OK, Process: 0, F: Acquire},
	}
	pairs, err := Pairs(events)
	if err != nil {
		t.Fatal(err)
	}
	if len(pairs) != 2 || pairs[0] != (Pair{Inv: 0, Done: 3}) || pairs[1] != (Pair{Inv: 2, Done: -1}) {
		t.Fatalf("pairs %+v", pairs)
	}
	for _, bad := range [][]Event{
		{{Index: 0, Type: OK, Process: 0, F: Acquire}},
		{{Index: 0, Type: Invoke, Process: 0, F: Acquire}, {Index: 1, Type: Invoke, Process: 0, F: Release}},
		{{Index: 0, Type: Invoke, Process: 0, F: Acquire}, {Index: 1, Type: OK, Process: 0, F: Release}},
	} {
		if _, err := Pairs(bad); err == nil {
			t.Errorf("Pairs(%+v) accepted a malformed history", bad)
		}
	}
}
