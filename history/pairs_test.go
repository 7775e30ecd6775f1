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

func TestFaultWindows(t *testing.T) {
	nem := func(i int, f, target, p string) Event {
		return Event{Index: i, Type: Info, Process: Nemesis, F: f, Target: target, Phase: p}
	}
	events := []Event{
		nem(0, "pause-node", "n1", End), // an end without a start: ignored
		nem(1, "pause-node", "n1", Start),
		nem(2, "pause-node", "n2", Start),
		{Index: 3, Type: Invoke, Process: 0, F: Acquire},
		nem(4, "pause-node", "n1", Start), // a second window on n1, opened before the first closed
		nem(5, "pause-node", "n2", End),
		nem(6, "pause-node", "n1", End),
		nem(7, "kill-node", "n1", End), // another fault's end does not close pause-node
		nem(8, "pause-node", "n1", End),
		nem(9, "partition", "", Start), // never healed
	}
	got := FaultWindows(events)
	want := []FaultWindow{{1, 6}, {2, 5}, {4, 8}, {9, -1}}
	if len(got) != len(want) {
		t.Fatalf("windows %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("window %d = %v, want %v", i, got[i], want[i])
		}
	}
}
