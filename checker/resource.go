package checker

import (
	"fmt"
	"sort"
	"strings"

	"github.com/lockharness/lockharness/history"
)

// auditResource checks what the protected resource accepted: writes from
// superseded holders (stale-write), writes fencing refused, and the counter.
func (c *checker) auditResource() {
	for i := range c.ops {
		if o := &c.ops[i]; o.F == history.Write && o.Type == history.Fail {
			c.res.Fencing.Rejected++
		}
	}
	accepted := c.acceptedWrites()
	if c.opts.Tables == nil && c.opts.Database && len(accepted) > 0 {
		c.resourceUnjudged = true
		c.note("the writes went to a database whose final rows are missing (resource.json): the resource was not audited")
		return
	}
	if c.opts.Tables != nil {
		accepted = c.acceptedByDatabase()
		c.auditStaleWrites(accepted)
		c.auditExpiredWrites(accepted)
		c.auditRefusedWrites(accepted)
		c.fenceOrderMargins(accepted)
		return
	}
	accepted = c.auditCounterWrites(accepted)
	c.auditCounter(accepted)
	c.auditRefusedWrites(accepted)
	c.fenceOrderMargins(accepted)
}

// acceptedWrites are the writes the resource answered ok, in invoke order.
// An info write never reached the resource: nothing to audit.
func (c *checker) acceptedWrites() []*history.Op {
	var accepted []*history.Op
	for i := range c.ops {
		if o := &c.ops[i]; o.F == history.Write && o.Type == history.OK {
			accepted = append(accepted, o)
		}
	}
	return accepted
}

// auditCounterWrites audits the in-memory counter's accepted writes for
// stale and expired ones, and returns them in the counter's order: the
// order of its acceptances, which the recorder stamps together with the
// effect.
func (c *checker) auditCounterWrites(accepted []*history.Op) []*history.Op {
	sort.Slice(accepted, func(i, j int) bool { return accepted[i].Done < accepted[j].Done })
	c.auditStaleWrites(accepted)
	c.auditExpiredWrites(accepted)
	return accepted
}

// auditExpiredWrites flags an accepted write that landed after its lease
// had certainly expired on the servers: the client acted on a lock it no
// longer held, whatever it (or its library) believed.
//
// A resource that checked the write's fence (Op.FenceChecked) and found it
// no lower than any it had accepted before on the key kept the holders'
// writes in their grants' order itself: Kleppmann's storage accepts token
// 33 until it has seen 34. Such a write is not an anomaly, however late;
// a later holder's write that came first makes it a stale write, and a
// read it invalidated a lost update.
//
// The resource's claim is held to its own record: on a key where it ever
// accepted a lower fence after a higher one, it did not keep them in
// order, and no write of that key is excused.
func (c *checker) auditExpiredWrites(accepted []*history.Op) {
	highest := map[string]int64{}
	unordered := map[string]bool{}
	for _, w := range accepted {
		if w.Fence > 0 && w.Fence < highest[w.Key] {
			unordered[w.Key] = true
		}
		highest[w.Key] = max(highest[w.Key], w.Fence)
	}
	clear(highest)
	excused := 0
	for _, w := range accepted {
		inOrder := w.FenceChecked && !unordered[w.Key] && w.Fence > 0 && w.Fence >= highest[w.Key]
		highest[w.Key] = max(highest[w.Key], w.Fence)
		g := c.grantOf(w)
		if g == nil {
			continue
		}
		l := c.leaseOf[w.TokenID]
		// The counter accepts a write at its completion; a database
		// somewhere between invoke and answer, so only a write sent
		// after the lease ended certainly landed after it.
		at := w.DoneT
		if c.opts.Tables != nil {
			at = w.InvT
		}
		if l == nil || l.hi == history.Forever {
			continue
		}
		if !inOrder && c.horizon == 0 && !c.renewsUnseen(w.TokenID) {
			c.writeValidityMargin(w, g, l, at)
		}
		if at <= l.hi {
			continue
		}
		if inOrder {
			excused++
			continue
		}
		accepted := "the resource accepted its write"
		if c.opts.Tables != nil {
			accepted = "it sent the write the database accepted"
		}
		narrative := fmt.Sprintf("%s %s acquired %s; its lease had certainly %s; %s %s (stored %s)%s, %s after that",
			Secs(g.DoneT), who(g), grantee(g), c.expiredBy(l.hi, l.hiBy, g), Secs(at), accepted, value(w.Stored), c.where(w), Secs(at-l.hi))
		c.report(ExpiredWrite, w.Key, positions(g, l.hiBy, w), narrative)
	}
	if excused > 0 && c.horizon == 0 {
		c.note("%s accepted after the writer's lease had expired: the resource checked each one's fence and found it no lower than any it had accepted before on the key, so the fence kept the holders' writes in order and none is an expired-write",
			count(int64(excused), "write"))
	}
}

// auditStaleWrites flags an accepted write whose grant is certainly older
// than that of a write the resource had already accepted for the same key:
// the newer grant's acquire began after the older one's had completed, so
// the older holder's lease was over by the time the newer holder wrote.
func (c *checker) auditStaleWrites(accepted []*history.Op) {
	type newest struct{ grant, write *history.Op }
	// latest is each key's accepted write whose acquire began last;
	// fenced the one with the highest fence.
	latest := make(map[string]newest)
	fenced := make(map[string]newest)
	for _, w := range accepted {
		g := c.grantOf(w)
		if g == nil {
			continue
		}
		n, seen := latest[w.Key]
		stale := seen && n.grant.InvT > g.DoneT
		order := "after the first grant"
		// A lower fence accepted after a higher one is stale by the
		// lock's own order, however the grants' times overlap; unless
		// this grant began after the higher one was over, which a fence
		// counter that started again (a node restarted empty) does.
		if f, ok := fenced[w.Key]; !stale && ok && g.Fence > 0 && f.grant.Fence > g.Fence && g.InvT <= f.grant.DoneT {
			stale, n, order = true, f, "with the higher fence"
		}
		if stale {
			narrative := fmt.Sprintf("%s %s acquired %s; %s %s acquired %s, asking at %s, %s; "+
				"%s the resource accepted the second holder's write (stored %s)%s; "+
				"%s the resource accepted the first holder's write (stored %s)%s after the newer holder's",
				Secs(g.DoneT), who(g), grantee(g),
				Secs(n.grant.DoneT), who(n.grant), grantee(n.grant), Secs(n.grant.InvT), order,
				Secs(n.write.DoneT), value(n.write.Stored), c.where(n.write),
				Secs(w.DoneT), value(w.Stored), c.where(w))
			c.report(StaleWrite, w.Key, positions(g, n.grant, n.write, w), narrative)
		}
		if !seen || g.InvT > latest[w.Key].grant.InvT {
			latest[w.Key] = newest{g, w}
		}
		if f, ok := fenced[w.Key]; g.Fence > 0 && (!ok || g.Fence > f.grant.Fence) {
			fenced[w.Key] = newest{g, w}
		}
	}
}

// grantOf is the granted acquire a write claims to hold, or nil.
func (c *checker) grantOf(w *history.Op) *history.Op {
	if w.Token == "" {
		return nil
	}
	if g := c.acquires[w.TokenID]; g != nil && g.Type == history.OK {
		return g
	}
	return nil
}

// auditCounter compares the number of acknowledged increments with the
// value the counter ended at (each lock key has its own counter; their
// final values are added). Each write stores the value it read plus one,
// so two acknowledged writes under one key that stored the same value
// overwrote each other.
func (c *checker) auditCounter(accepted []*history.Op) {
	c.res.Counter.Acknowledged = len(accepted)
	if len(accepted) == 0 {
		return
	}
	last := accepted[len(accepted)-1]
	lastOf := map[string]*history.Op{}
	for _, w := range accepted {
		lastOf[w.Key] = w
	}
	for _, w := range lastOf {
		if w.Stored == nil {
			c.note("the last acknowledged write under %s (event %d) carries no stored value; its counter is taken as 0", w.Key, w.Done)
			continue
		}
		c.res.Counter.Final += *w.Stored
	}
	lost := int64(len(accepted)) - c.res.Counter.Final
	if lost <= 0 {
		return
	}
	c.res.Anomalies[LostUpdate] = int(lost)

	const examples = 3
	type stored struct {
		key   string
		value int64
	}
	first := make(map[stored]*history.Op)
	var overwrites []string
	ps := positions(last)
	for _, w := range accepted {
		if w.Stored == nil {
			continue
		}
		f, dup := first[stored{w.Key, *w.Stored}]
		if !dup {
			first[stored{w.Key, *w.Stored}] = w
			continue
		}
		if len(overwrites) < examples {
			overwrites = append(overwrites, fmt.Sprintf("value %d was stored by %s at %s and again by %s at %s",
				*w.Stored, who(f), Secs(f.DoneT), who(w), Secs(w.DoneT)))
			ps = append(ps, positions(f, w)...)
		}
	}
	ends := fmt.Sprintf("the counter ends at %d", c.res.Counter.Final)
	if len(lastOf) > 1 {
		ends = fmt.Sprintf("the counters of %d keys end at %d in all", len(lastOf), c.res.Counter.Final)
	}
	narrative := fmt.Sprintf("%s acknowledged but %s (last write at %s): %s lost",
		count(int64(len(accepted)), "write"), ends, Secs(last.DoneT), count(lost, "update"))
	if len(overwrites) > 0 {
		narrative += "; " + strings.Join(overwrites, "; ")
	}
	c.list(LostUpdate, "", ps, narrative)
}
