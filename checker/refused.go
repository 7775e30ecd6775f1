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
// certainly live from the write's invoke to its answer, and no other grant
// of the key may have been live at any instant of that interval, so no
// newer fence could rightly exist. A refusal because a newer holder may
// exist stays a correct refusal, counted under fencing.rejected only.
// accepted are the writes the resource accepted, in its order, for what it
// held when it refused.
//
// An acquire of unknown outcome is not counted as a grant that may have
// been live: it could have landed only while the key was free, so either
// before the writer's grant and expired by it, or after the writer's lease
// ended, or as a double grant the lock made; and its worker, replaced, never
// writes. A grant that succeeded counts while it may have been live: from
// its invoke until its lease certainly ended on the server or its release
// certainly landed (lease.mayEnd).
func (c *checker) auditRefusedWrites(accepted []*history.Op) {
	var live map[string]*liveIndex
	for i := range c.ops {
		w := &c.ops[i]
		if w.F != history.Write || w.Type != history.Fail {
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
		if idx.otherLive(l, w.InvT, w.DoneT) {
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
		"no other grant of %s may have been live from %s to %s, so no newer fence could rightly exist",
		history.Secs(g.DoneT), who(g), grantee(g), c.certainUntil(l),
		history.Secs(w.InvT), w.Fence, refuser, history.Secs(w.DoneT), why,
		w.Key, history.Secs(w.InvT), history.Secs(w.DoneT))
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
		return fmt.Sprintf("the done table's last row for a write answered before it was sent is row %d, by %s", lastRow.seq, who(last)), last
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
		return fmt.Sprintf("the resource had accepted no fenced write of %s before it (the last, %s's at %s, carried no fence)", w.Key, who(best), history.Secs(best.DoneT)), best
	}
	return fmt.Sprintf("the highest fence the resource had accepted on %s before it was %d, %s's write at %s", w.Key, best.Fence, who(best), history.Secs(best.DoneT)), best
}

// liveIndex finds, for one key, whether a grant may have been live at some
// instant of an interval: its leases by acquire invoke, and for each
// prefix the two that may have ended last.
type liveIndex struct {
	ls []*lease
	// top[i] are the two leases of ls[:i+1] with the latest mayEnd (-1:
	// none); two, so that one can be the writer's own.
	top [][2]int
	// byStart are the leases by grant, for around.
	byStart []*lease
}

func newLiveIndex(byStart []*lease) *liveIndex {
	ls := slices.Clone(byStart)
	sort.SliceStable(ls, func(i, j int) bool { return ls[i].acq.InvT < ls[j].acq.InvT })
	x := &liveIndex{ls: ls, top: make([][2]int, len(ls)), byStart: byStart}
	best := [2]int{-1, -1}
	for i, l := range ls {
		switch {
		case best[0] < 0 || l.mayEnd > ls[best[0]].mayEnd:
			best = [2]int{i, best[0]}
		case best[1] < 0 || l.mayEnd > ls[best[1]].mayEnd:
			best[1] = i
		}
		x.top[i] = best
	}
	return x
}

// otherLive reports whether a grant other than mine may have been live at
// some instant of [from, to]: invoked before to, not certainly over by
// from.
func (x *liveIndex) otherLive(mine *lease, from, to int64) bool {
	n := sort.Search(len(x.ls), func(i int) bool { return x.ls[i].acq.InvT >= to })
	if n == 0 {
		return false
	}
	for _, j := range x.top[n-1] {
		if j >= 0 && x.ls[j] != mine {
			return x.ls[j].mayEnd > from
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
		s := fmt.Sprintf("%s %s %s", history.Secs(o.start), who(o.acq), token(o.acq))
		switch {
		case o == l:
			s += " (the writer's)"
		case o.mayEnd == history.Forever:
			s += ", which may have lasted indefinitely"
		default:
			s += ", certainly over by " + history.Secs(o.mayEnd)
		}
		if o != l {
			others = append(others, o)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; "), others
}
