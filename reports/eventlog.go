package reports

import (
	"slices"
	"time"

	"github.com/lockharness/lockharness/history"
)

// eventLog is a run's history as the pages read it. The pages draw the
// clients' operations from the checker's (history.Op), so of the events
// they need in full only those they tell one by one: the nemesis's (the
// fault bands, the probes, the outages), the findings' and the margins'.
// A log read from a file keeps only those, so that a soak's pages do not
// hold its million events; one made from events in memory keeps them all.
type eventLog struct {
	// kept are the events held in full, in history order.
	kept []history.Event
	// pos is each kept event's position in the history; nil when kept is
	// the whole history.
	pos []int
	// n is how many events the history has.
	n int
	// byIndex finds an index's position in a history whose indexes are
	// not their positions (one made by hand); nil where they are, as in
	// every history that validates.
	byIndex map[int]int
	// end is the time of the last event but the probes of where grants
	// live: a probe of the last grants may land after everything else,
	// and does not make the run longer.
	end time.Duration
}

// extend counts e into the log's end.
func (l *eventLog) extend(e *history.Event) {
	if !(e.IsNemesis() && e.F == history.GrantSeen) {
		l.end = max(l.end, e.At())
	}
}

// wholeLog holds every event.
func wholeLog(events []history.Event) eventLog {
	l := eventLog{kept: events, n: len(events)}
	for i := range events {
		l.extend(&events[i])
	}
	for i := range events {
		if events[i].Index != i {
			l.byIndex = make(map[int]int, len(events))
			for j := range events {
				l.byIndex[events[j].Index] = j
			}
			break
		}
	}
	return l
}

// readLog reads a history that validates, keeping in full the nemesis's
// events and those the results name (their findings' and margins'). The
// events before a malformed line are kept with its error.
func readLog(histPath string, res Results) (eventLog, error) {
	named := map[int]bool{}
	for _, f := range res.Checker.Findings {
		for _, i := range f.Events {
			named[i] = true
		}
	}
	for _, m := range res.Margins {
		for _, i := range m.Events {
			named[i] = true
		}
	}
	f, err := history.Open(histPath)
	if err != nil {
		return eventLog{}, err
	}
	defer f.Close()
	l := eventLog{pos: []int{}}
	err = history.Stream(f, func(e *history.Event) error {
		l.extend(e)
		if e.IsNemesis() || named[e.Index] {
			l.kept = append(l.kept, *e)
			l.pos = append(l.pos, l.n)
		}
		l.n++
		return nil
	})
	return l, err
}

// position is where the event of index i is in the history.
func (l *eventLog) position(i int) (int, bool) {
	if l.byIndex != nil {
		p, ok := l.byIndex[i]
		return p, ok
	}
	return i, i >= 0 && i < l.n
}

// at is the event at position p, nil when it is not kept.
func (l *eventLog) at(p int) *history.Event {
	if l.pos == nil {
		if p < 0 || p >= len(l.kept) {
			return nil
		}
		return &l.kept[p]
	}
	i, found := slices.BinarySearch(l.pos, p)
	if !found {
		return nil
	}
	return &l.kept[i]
}

// index is the index of the event at position p.
func (l *eventLog) index(p int) int {
	if e := l.at(p); e != nil {
		return e.Index
	}
	return p
}

// fits reports whether ops were paired from this history: their positions
// lie within it.
func (l *eventLog) fits(ops []history.Op) bool {
	for _, o := range ops {
		if int(o.Inv) >= l.n || int(o.Done) >= l.n {
			return false
		}
	}
	return true
}
