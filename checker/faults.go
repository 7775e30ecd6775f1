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

// faultWindows lists the history's fault windows as the narratives use them.
func faultWindows(events []history.Event) []fault {
	var faults []fault
	for _, w := range history.FaultWindows(events) {
		e := &events[w.Start]
		f := fault{name: e.F, target: e.Subject(), detail: e.Detail, start: e.Time, end: history.Forever}
		if w.End >= 0 {
			f.end = events[w.End].Time
		}
		faults = append(faults, f)
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
		if f.end != history.Forever {
			end = Secs(f.end)
		}
		names = append(names, fmt.Sprintf("%s (%s to %s)", s, Secs(f.start), end))
	}
	if len(names) == 0 {
		return ""
	}
	if more > 0 {
		names = append(names, fmt.Sprintf("%d more", more))
	}
	return ". Faults meanwhile: " + strings.Join(names, ", ")
}
