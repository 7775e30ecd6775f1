package checker

import (
	"fmt"
	"slices"

	"github.com/lockharness/lockharness/history"
)

// auditLiveness judges the closing check: after the faults heal, every key
// the final acquires ask for must be granted to one of them.
func (c *checker) auditLiveness() {
	attempts := make(map[string][]*op)
	var keys []string
	anyFinal := false
	for i := range c.ops {
		o := &c.ops[i]
		if !o.final {
			continue
		}
		anyFinal = true
		if o.kind != history.Acquire {
			continue
		}
		if _, seen := attempts[o.key]; !seen {
			keys = append(keys, o.key)
		}
		attempts[o.key] = append(attempts[o.key], o)
	}
	switch {
	case !anyFinal:
		c.res.Liveness = LivenessNotChecked
		c.note("liveness was not checked: the history has no final operations")
		return
	case len(keys) == 0:
		c.res.Liveness = LivenessNotChecked
		c.note("liveness was not checked: the final operations include no acquire")
		return
	}
	slices.Sort(keys)
	c.res.Liveness = LivenessOK
	for _, key := range keys {
		if !slices.ContainsFunc(attempts[key], func(o *op) bool { return o.outcome == history.OK }) {
			c.res.Liveness = LivenessStuck
			c.reportStuck(key, attempts[key])
		}
	}
}

func (c *checker) reportStuck(key string, attempts []*op) {
	from, to := forever, int64(0)
	failed, unknown := 0, 0
	historyEnd := c.events[len(c.events)-1].Time
	for _, o := range attempts {
		from = min(from, o.invT)
		end := historyEnd // still waiting when the history ended
		if o.finished() {
			end = o.doneT
		}
		to = max(to, end)
		if o.outcome == history.Fail {
			failed++
		} else {
			unknown++
		}
	}
	narrative := fmt.Sprintf("after healing, no acquire of %s succeeded between %s and %s (%s: %d failed, %d unknown)",
		key, secs(from), secs(to), count(int64(len(attempts)), "attempt"), failed, unknown)
	ps := positions(attempts...)
	if ls := c.leases[key]; len(ls) > 0 {
		l := ls[len(ls)-1]
		narrative += fmt.Sprintf("; the last grant of %s was %s to %s at %s", key, token(l.acq), who(l.acq), secs(l.start))
		switch r := l.release; {
		case r == nil:
			narrative += ", which was never released"
		case !r.finished():
			narrative += fmt.Sprintf(", whose release asked at %s never completed", secs(r.invT))
		default:
			narrative += fmt.Sprintf(", whose release asked at %s ended %s", secs(r.invT), r.outcome)
		}
		ps = append(ps, positions(l.acq, l.release)...)
	} else {
		narrative += fmt.Sprintf("; %s was never granted in this run", key)
	}
	c.report(StuckLock, key, ps, narrative)
}
