package checker

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/lockharness/lockharness/history"
)

// auditRefusedWrites flags a write the resource refused although its
// writer was the one legitimate holder (RefusedWrite): its lease was
// certainly live from the write's invoke to its answer, and no grant of the
// key that could have made the resource refuse may have been live then
// (newerMayBeLive). A refusal because a newer holder
// may exist, even one the lock should never have granted (a double grant,
// which the lease audit names), stays a correct refusal, counted under
// fencing.rejected only. accepted are the writes the resource accepted, in
// its order, for what it held when it refused.
//
// An acquire of unknown outcome is not counted as a grant that may have
// been live: it could have landed only while the key was free, so either
// before the writer's grant and expired by it, or after the writer's lease
// ended, or as a double grant the lock made; and its worker, replaced,
// never writes. A grant that succeeded counts while it may have been live:
// from its invoke until its lease certainly ended on the server or its
// release certainly landed (lease.mayEnd). Where the resource compared
// fences (Op.FenceChecked), only a grant whose fence is higher than the
// writer's (or either unknown) could have made it refuse; where it did not
// (cas compares versions, a writer that may still hold may have written
// between), any grant could.
func (c *checker) auditRefusedWrites(accepted []*history.Op) {
	var live map[string]*liveIndex
	for i := range c.ops {
		w := &c.ops[i]
		// Only the resource's refusal: a worker's own "not held" for a
		// write is no fence's answer.
		if w.F != history.Write || w.Type != history.Fail || w.Reason != history.ReasonRejected {
			continue
		}
		g := c.grantOf(w)
		if g == nil {
			continue
		}
		l := c.leaseOf[w.TokenID]
		if l == nil || l.start > w.InvT || w.DoneT >= l.certEnd {
			continue
		}
		if live == nil {
			live = map[string]*liveIndex{}
		}
		idx := live[w.Key]
		if idx == nil {
			idx = newLiveIndex(c.leases[w.Key])
			live[w.Key] = idx
		}
		if idx.newerMayBeLive(l, w) {
			continue
		}
		if c.listed[RefusedWrite] >= maxFindings {
			// Counted, not told: the story scans the resource's order.
			c.report(RefusedWrite, w.Key, positions(g, w), "")
			continue
		}
		c.reportRefused(w, l, idx, accepted)
	}
}

func (c *checker) reportRefused(w *history.Op, l *lease, idx *liveIndex, accepted []*history.Op) {
	g := l.acq
	refuser := "the resource"
	if c.opts.Tables != nil || c.opts.Database {
		refuser = "the database"
	}
	why := ""
	if w.Error != "" {
		why = fmt.Sprintf(" (%q)", w.Error)
	}
	narrative := fmt.Sprintf("%s %s acquired %s, %s; %s it sent a write with fence %d, which %s refused at %s%s; "+
		"no other grant of %s that could have made it refuse may have been live (%s), so no newer fence could rightly exist",
		Secs(g.DoneT), who(g), grantee(g), c.certainUntil(l),
		Secs(w.InvT), w.Fence, refuser, Secs(w.DoneT), why, w.Key, liveSpan(l, w))
	ps := positions(g, w)
	held, by := c.heldBefore(w, accepted)
	narrative += "; " + held
	ps = append(ps, positions(by)...)
	grants, others := idx.around(l)
	narrative += "; grants of " + w.Key + ": " + grants
	for _, o := range others {
		ps = append(ps, positions(o.acq)...)
	}
	c.report(RefusedWrite, w.Key, ps, narrative)
}

// liveSpan says which grants could have made the resource refuse w, as
// newerMayBeLive judges them.
func liveSpan(l *lease, w *history.Op) string {
	if w.FenceChecked {
		return fmt.Sprintf("none with a higher fence from its grant at %s to the refusal at %s", Secs(l.start), Secs(w.DoneT))
	}
	return fmt.Sprintf("none from the write's invoke at %s to the refusal at %s", Secs(w.InvT), Secs(w.DoneT))
}

// heldBefore says what the resource held when the refused write w was
// sent: the database's last row written for an answer already given, or
// the counter's highest fence accepted on w's key before it; and the
// write behind it, if any.
func (c *checker) heldBefore(w *history.Op, accepted []*history.Op) (string, *history.Op) {
	if t := c.opts.Tables; t != nil {
		var last *history.Op
		var lastRow databaseRow
		for _, a := range accepted {
			if r, ok := c.rowOf[a]; ok && a.Finished() && a.DoneT < w.InvT && (last == nil || r.seq > lastRow.seq) {
				last, lastRow = a, r
			}
		}
		if last == nil {
			return "the database held no row of an accepted write answered before it was sent", nil
		}
		for _, r := range t.Ledger {
			if r.Seq == lastRow.seq {
				return fmt.Sprintf("the ledger's last row for a write answered before it was sent is row %d, by %s with fence %d (lock_token %d to %d, quantity %d to %d)",
					r.Seq, who(last), r.Fence, r.LockTokenBefore, r.LockTokenAfter, r.QuantityBefore, r.QuantityAfter), last
			}
		}
		return fmt.Sprintf("the %s table's last row for a write answered before it was sent is row %d, by %s", t.Table, lastRow.seq, who(last)), last
	}
	var best *history.Op
	for _, a := range accepted {
		if a.Key == w.Key && a.Done < w.Done && (best == nil || a.Fence > best.Fence) {
			best = a
		}
	}
	switch {
	case best == nil:
		return "the resource had accepted no write of " + w.Key + " before it", nil
	case best.Fence == 0:
		return fmt.Sprintf("the resource had accepted no fenced write of %s before it (the last, %s's at %s, carried no fence)", w.Key, who(best), Secs(best.DoneT)), best
	}
	return fmt.Sprintf("the highest fence the resource had accepted on %s before it was %d, %s's write at %s", w.Key, best.Fence, who(best), Secs(best.DoneT)), best
}

// liveIndex finds, for one key, whether a grant may have been live at some
// instant of an interval: its leases by acquire invoke, the longest a
// lease that ends at all may last from its invoke, and apart those that
// may last indefinitely; a search then looks back from the interval's end
// only as far as a lease could reach.
type liveIndex struct {
	ls      []*lease
	reach   int64
	forever []*lease
	// byStart are the leases by grant, for around.
	byStart []*lease
}

func newLiveIndex(byStart []*lease) *liveIndex {
	x := &liveIndex{byStart: byStart}
	for _, l := range byStart {
		if l.mayEnd == history.Forever {
			x.forever = append(x.forever, l)
			continue
		}
		x.ls = append(x.ls, l)
		x.reach = max(x.reach, l.mayEnd-l.acq.InvT)
	}
	sort.SliceStable(x.ls, func(i, j int) bool { return x.ls[i].acq.InvT < x.ls[j].acq.InvT })
	return x
}

// newerMayBeLive reports whether a grant other than mine that could have
// made the resource refuse w may have been live: where the resource
// compared fences, one with a fence higher than w's (or either unknown)
// at some instant from mine's grant to w's answer, for it may have written
// then; elsewhere any grant, during the write itself, for it may have
// written in between. Live means invoked before the interval's end and
// not certainly over by its start.
func (x *liveIndex) newerMayBeLive(mine *lease, w *history.Op) bool {
	from, to := w.InvT, w.DoneT
	if w.FenceChecked {
		from = mine.start
	}
	newer := func(o *lease) bool {
		higher := !w.FenceChecked || o.acq.Fence == 0 || w.Fence == 0 || o.acq.Fence > w.Fence
		return o != mine && o.acq.InvT < to && o.mayEnd > from && higher
	}
	for _, o := range x.forever {
		if newer(o) {
			return true
		}
	}
	n := sort.Search(len(x.ls), func(i int) bool { return x.ls[i].acq.InvT >= to })
	// One invoked more than reach before from was over by from.
	for i := n - 1; i >= 0 && x.ls[i].acq.InvT >= from-x.reach; i-- {
		if newer(x.ls[i]) {
			return true
		}
	}
	return false
}

// around tells the grants of the key next to l: up to three before it and
// the one after, each with when it was certainly over.
func (x *liveIndex) around(l *lease) (string, []*lease) {
	i := slices.Index(x.byStart, l)
	if i < 0 {
		return "none", nil
	}
	lo, hi := max(0, i-3), min(len(x.byStart), i+2)
	var parts []string
	var others []*lease
	for _, o := range x.byStart[lo:hi] {
		s := fmt.Sprintf("%s %s %s", Secs(o.start), who(o.acq), token(o.acq))
		switch {
		case o == l:
			s += " (the writer's)"
		case o.mayEnd == history.Forever:
			s += ", which may have lasted indefinitely"
		default:
			s += ", certainly over by " + Secs(o.mayEnd)
		}
		if o != l {
			others = append(others, o)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; "), others
}
