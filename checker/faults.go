package checker

import (
	"fmt"
	"strings"

	"github.com/lockharness/lockharness/history"
)

// fault is one nemesis window. The audits ignore faults; narratives mention
// the ones around a finding because they are usually its cause.
type fault struct {
	name, target, detail string
	start, end           int64 // end is forever if the history never ended it
}

// faultWindows pairs each nemesis start with the next end of the same fault
// and target.
func faultWindows(events []history.Event) []fault {
	type id struct{ name, target string }
	var faults []fault
	open := make(map[id][]int)
	for i := range events {
		e := &events[i]
		if !e.IsNemesis() {
			continue
		}
		k := id{e.F, e.Target}
		switch e.Phase {
		case history.Start:
			open[k] = append(open[k], len(faults))
			faults = append(faults, fault{name: e.F, target: e.Target, detail: e.Detail, start: e.Time, end: forever})
		case history.End:
			if q := open[k]; len(q) > 0 {
				faults[q[0]].end = e.Time
				open[k] = q[1:]
			}
		}
	}
	return faults
}

// faultsDuring describes the faults active at some point in [from, to], as a
// sentence to append to a narrative, or "" if there were none.
func (c *checker) faultsDuring(from, to int64) string {
	const most = 5
	var names []string
	more := 0
	for _, f := range c.faults {
		if f.start > to || f.end < from {
			continue
		}
		if len(names) == most {
			more++
			continue
		}
		s := f.name
		if f.target != "" {
			s += " " + f.target
		}
		end := "not healed"
		if f.end != forever {
			end = secs(f.end)
		}
		names = append(names, fmt.Sprintf("%s (%s to %s)", s, secs(f.start), end))
	}
	if len(names) == 0 {
		return ""
	}
	if more > 0 {
		names = append(names, fmt.Sprintf("%d more", more))
	}
	return ". Faults meanwhile: " + strings.Join(names, ", ")
}
