package checker

import (
	"fmt"
	"slices"

	"github.com/lockharness/lockharness/history"
)

// auditLiveness judges the closing check: after the faults heal, every key
// the final acquires ask for must be granted to one of them.
func (c *checker) auditLiveness() {
	attempts := make(map[string][]*history.Op)
	var keys []string
	anyFinal := false
	for i := range c.ops {
		o := &c.ops[i]
		if !o.Final {
			continue
		}
		anyFinal = true
		if o.F != history.Acquire {
			continue
		}
		if _, seen := attempts[o.Key]; !seen {
			keys = append(keys, o.Key)
		}
		attempts[o.Key] = append(attempts[o.Key], o)
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
		if !slices.ContainsFunc(attempts[key], func(o *history.Op) bool { return o.Type == history.OK }) {
			c.res.Liveness = LivenessStuck
			c.reportStuck(key, attempts[key])
		}
	}
}

func (c *checker) reportStuck(key string, attempts []*history.Op) {
	from, to := history.Forever, int64(0)
	failed, unknown := 0, 0
	historyEnd := c.end
	for _, o := range attempts {
		from = min(from, o.InvT)
		end := historyEnd // still waiting when the history ended
		if o.Finished() {
			end = o.DoneT
		}
		to = max(to, end)
		if o.Type == history.Fail {
			failed++
		} else {
			unknown++
		}
	}
	narrative := fmt.Sprintf("after healing, no acquire of %s succeeded between %s and %s (%s: %d failed, %d unknown)",
		key, Secs(from), Secs(to), count(int64(len(attempts)), "attempt"), failed, unknown)
	ps := positions(attempts...)
	if ls := c.leases[key]; len(ls) > 0 {
		l := ls[len(ls)-1]
		narrative += fmt.Sprintf("; the last grant of %s was %s to %s at %s", key, token(l.acq), who(l.acq), Secs(l.start))
		switch r := l.release; {
		case r == nil:
			narrative += ", which was never released"
		case !r.Finished():
			narrative += fmt.Sprintf(", whose release asked at %s never completed", Secs(r.InvT))
		default:
			narrative += fmt.Sprintf(", whose release asked at %s ended %s", Secs(r.InvT), r.Type)
		}
		ps = append(ps, positions(l.acq, l.release)...)
	} else {
		narrative += fmt.Sprintf("; %s was never granted in this run", key)
	}
	c.report(StuckLock, key, ps, narrative)
}
