package history

import "fmt"

// Pair is one client operation: the positions in a history of its invoke
// and of its completion (Done is -1 when it never completed, which counts
// as info: it may still take effect).
type Pair struct {
	Inv, Done int
}

// Pairs matches every completion to its process's outstanding invoke and
// returns the operations in invoke order; nemesis events are skipped. A
// completion without an outstanding invoke, a second invoke while one is
// outstanding, or a completion of another kind than its invoke is an error
// naming the event's index.
func Pairs(events []Event) ([]Pair, error) {
	pairs := make([]Pair, 0, len(events)/2+1)
	open := make(map[Process]int) // process -> its outstanding pair
	for i := range events {
		e := &events[i]
		if e.IsNemesis() {
			continue
		}
		switch e.Type {
		case Invoke:
			if j, busy := open[e.Process]; busy {
				inv := &events[pairs[j].Inv]
				return nil, fmt.Errorf("event %d: process %s invokes %s while its %s invoked at event %d is still outstanding",
					e.Index, e.Process, e.F, inv.F, inv.Index)
			}
			open[e.Process] = len(pairs)
			pairs = append(pairs, Pair{Inv: i, Done: -1})
		case OK, Fail, Info:
			j, busy := open[e.Process]
			if !busy {
				return nil, fmt.Errorf("event %d: %s completion of %s by process %s has no outstanding invoke",
					e.Index, e.Type, e.F, e.Process)
			}
			if inv := &events[pairs[j].Inv]; e.F != inv.F {
				return nil, fmt.Errorf("event %d: %s completion of %s by process %s does not match its outstanding %s invoked at event %d",
					e.Index, e.Type, e.F, e.Process, inv.F, inv.Index)
			}
			pairs[j].Done = i
			delete(open, e.Process)
		default:
			return nil, fmt.Errorf("event %d: type %q is not one of invoke, ok, fail, info", e.Index, e.Type)
		}
	}
	return pairs, nil
}

// FaultWindow is one nemesis fault: the positions in a history of its start
// event and of the end event paired with it (End is -1 when the history
// never ended it).
type FaultWindow struct {
	Start, End int
}

// FaultWindows pairs each nemesis start with the next end of the same fault
// and target, and returns the windows in start order. An end without an
// open start is ignored: it says nothing a reader could place.
func FaultWindows(events []Event) []FaultWindow {
	type id struct{ fault, target string }
	var windows []FaultWindow
	open := make(map[id][]int)
	for i := range events {
		e := &events[i]
		if !e.IsNemesis() {
			continue
		}
		k := id{e.F, e.Target}
		switch e.Phase {
		case Start:
			open[k] = append(open[k], len(windows))
			windows = append(windows, FaultWindow{Start: i, End: -1})
		case End:
			if q := open[k]; len(q) > 0 {
				windows[q[0]].End = i
				open[k] = q[1:]
			}
		}
	}
	return windows
}
