package history

import "cmp"

// FaultWindow is one nemesis fault: the positions in a history of its start
// event and of the end event paired with it (End is -1 when the history
// never ended it).
type FaultWindow struct {
	Start, End int
}

// FaultWindows pairs each nemesis start with the next end of the same fault
// and subject (Facts.Subject), and returns the windows in start order. An end without an
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
		// A window's end carries its start's subject; a history from
		// elsewhere whose targets say none pairs by its words.
		k := id{e.F, cmp.Or(e.Subject(), e.Target)}
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
