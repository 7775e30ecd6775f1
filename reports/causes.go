package reports

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/history"
)

// Causes says in words what made a finding possible, from the history
// alone: a replica promoted while a grant had not reached it, a node that
// restarted empty, a fence counter that went back, a clock moved, a client
// frozen past its lease. Each sentence rests on events the page shows; a
// finding no rule explains gets the faults around it, and one without
// faults none.
func Causes(events []history.Event, f checker.Finding) []string {
	return analyse(events).causes(f)
}

// leasesOf are the leases of ops, in order.
func (a *analysis) leasesOf(ops []int) []*leaseInfo {
	var leases []*leaseInfo
	for _, o := range ops {
		if l := a.leaseOf[o]; l != nil {
			leases = append(leases, l)
		}
	}
	return leases
}

// reach is how far a finding's page tells it: its events and the leases it
// involves, as their clients believed them. The causes speak of what
// happened within it, and the story shows every fault within it, so that a
// cause never names a fault the story leaves out.
func (a *analysis) reach(f checker.Finding) (from, to time.Duration, ok bool) {
	if from, to, ok = a.span(f); !ok {
		return from, to, false
	}
	for _, l := range a.leasesOf(a.findingOps(f)) {
		from, to = min(from, l.Start), max(to, l.End)
	}
	return from, to, true
}

// Cause kinds: what made a finding possible, as the rules that tell it
// name it. A catalog row may show a remedy for a kind (Remedies).
const (
	CauseUnreplicated  = "unreplicated"    // a replica promoted without the grant
	CauseEmptyRestart  = "empty-restart"   // a node that held the lease restarted empty
	CauseFenceWentBack = "fence-went-back" // the fence counter went back
	CauseClockMoved    = "clock-moved"     // a node's clock moved under a lease
	CauseFrozenClient  = "frozen-client"   // a client frozen past its lease
	CauseWrongRefusal  = "wrong-refusal"   // the resource refused the legitimate holder
	CauseNoGrant       = "no-grant"        // a grant while no node could give it
	CauseFaults        = "faults"          // no rule explains it: the faults around it
)

// Cause is one sentence of what made a finding possible, and its kind.
type Cause struct{ Kind, Text string }

func (a *analysis) causes(f checker.Finding) []string {
	var out []string
	for _, c := range a.typedCauses(f) {
		out = append(out, c.Text)
	}
	return out
}

func (a *analysis) typedCauses(f checker.Finding) []Cause {
	from, to, ok := a.reach(f)
	if !ok {
		return nil
	}
	ops := a.findingOps(f)
	leases := a.leasesOf(ops)
	var out []Cause
	add := func(kind string, texts []string) {
		for _, t := range texts {
			out = append(out, Cause{kind, t})
		}
	}
	explained := map[int]bool{} // bands a sentence already tells
	for _, l := range leases {
		add(CauseUnreplicated, a.unreplicated(l, explained))
	}
	add(CauseEmptyRestart, a.emptyRestarts(leases, from, to, explained))
	add(CauseFenceWentBack, a.fenceWentBack(ops))
	add(CauseClockMoved, a.clockMoves(from, to, explained))
	add(CauseFrozenClient, a.frozenClients(ops, from, to, explained))
	add(CauseWrongRefusal, a.wrongRefusal(f, ops))
	add(CauseNoGrant, a.grantFromNowhere(f, ops, explained))
	if len(out) > 0 {
		return out
	}
	for i, b := range a.bands {
		if b.Observed || b.Start > to || b.End < from || explained[i] {
			continue
		}
		s := fmt.Sprintf("%s, %s to %s", b.Label(), secs(b.Start), secs(b.End))
		if how := factWords(b); how != "" {
			s += ": " + how
		}
		out = append(out, Cause{CauseFaults, s})
	}
	return out
}

// factWords says, from a fault window's facts, whom else it struck and
// when: "clients 1,3; 169ms after client 2's grant; held 6.854s".
func factWords(b Band) string {
	f := b.Facts
	if f == nil {
		return ""
	}
	var parts []string
	if len(f.Nodes) > 0 && len(f.Clients) > 0 {
		parts = append(parts, "with "+history.ClientWords(f.Clients))
	}
	if len(f.Unreachable) > 0 {
		parts = append(parts, "cut from "+strings.Join(f.Unreachable, ","))
	}
	if f.PausedAt != "" {
		verb := "killed"
		if f.Frozen {
			verb = "frozen"
		}
		parts = append(parts, verb+" at "+f.PausedAt)
	}
	switch a := f.After; {
	case a != nil && a.DelayNs == 0:
		parts = append(parts, fmt.Sprintf("just after client %d's grant", a.Client))
	case a != nil:
		parts = append(parts, fmt.Sprintf("%v after client %d's grant", time.Duration(a.DelayNs), a.Client))
	}
	if b.Ended != nil && b.Ended.Failed != "" {
		// What it set out to hold did not happen as planned.
		return strings.Join(append(parts, "it failed: "+b.Ended.Failed), "; ")
	}
	if f.HoldNs > 0 {
		parts = append(parts, "meant to hold "+f.Hold().String())
	}
	if b.Ended != nil && b.Ended.CutShort {
		parts = append(parts, "cut short by the time limit")
	}
	return strings.Join(parts, "; ")
}

// node is the node a fault window acted on, "" for none.
func (b Band) node() string {
	if b.Facts == nil || len(b.Facts.Nodes) == 0 {
		return ""
	}
	return b.Facts.Nodes[0]
}

// unreplicated tells each promotion, while l's client still believed in
// it, of a node its grant was not found on.
func (a *analysis) unreplicated(l *leaseInfo, explained map[int]bool) []string {
	var out []string
	for i, b := range a.bands {
		promoted, ok := b.Facts.Promoted()
		if !b.Observed || !ok || b.Start < l.Start || b.Start > l.End {
			continue
		}
		grant := fmt.Sprintf("client %d's grant of %s", l.Client, secs(l.Start))
		switch {
		case slices.Contains(l.Nodes, promoted):
			continue
		case slices.Contains(l.Lacking, promoted) && len(l.Nodes) > 0:
			out = append(out, fmt.Sprintf("%s was promoted (%s at %s) while %s had not replicated to it: probed within %s of the grant, it was on %s only",
				promoted, b.Fault, secs(b.Start), grant, roundedMs(l.ProbedWithin), strings.Join(l.Nodes, " and ")))
		case slices.Contains(l.Lacking, promoted):
			out = append(out, fmt.Sprintf("%s was promoted (%s at %s) while %s, which a probe within %s of it found on no node, was still believed",
				promoted, b.Fault, secs(b.Start), grant, roundedMs(l.ProbedWithin)))
		default:
			// Not probed, or the promoted node did not answer or does
			// not serve the key: the promotion is told, not what it lost.
			out = append(out, fmt.Sprintf("%s was promoted (%s at %s) while %s was still believed; whether that grant had reached %s is not known",
				promoted, b.Fault, secs(b.Start), grant, promoted))
		}
		explained[i] = true
	}
	return out
}

// roundedMs is a probe's lag as a sentence gives it.
func roundedMs(d time.Duration) string {
	return fmt.Sprintf("%.1f ms", float64(d)/1e6)
}

// emptyRestarts tells each node that came back without its keys within
// [from, to] and held one of the finding's leases: where the probes say
// where the leases lived, only a node they were on (a replica that
// restarts resyncs, and loses nothing); without probes (one node), any.
func (a *analysis) emptyRestarts(leases []*leaseInfo, from, to time.Duration, explained map[int]bool) []string {
	var out []string
	for i, b := range a.bands {
		if b.Observed || b.Open || !b.Ended.RestartedEmpty() || b.End < from || b.End > to || !heldOn(leases, b.node()) {
			continue
		}
		out = append(out, fmt.Sprintf("%s restarted empty (0 keys; %s) at %s (%s): every grant it held was forgotten",
			b.node(), b.Ended.Kept(), secs(b.End), b.Fault))
		explained[i] = true
	}
	return out
}

// heldOn reports whether one of leases lived on node, as far as the probes
// tell: true when none of them was probed.
func heldOn(leases []*leaseInfo, node string) bool {
	probed := false
	for _, l := range leases {
		if l.Seen {
			probed = true
			if slices.Contains(l.Nodes, node) {
				return true
			}
		}
	}
	return !probed
}

// fenceWentBack tells a grant of the finding whose fence is no higher than
// that of a grant returned before it was asked for, on the same key: the
// counter that draws fences started again. The last empty restart between
// the two of a node the earlier grant lived on is named as the reason.
func (a *analysis) fenceWentBack(ops []int) []string {
	var out []string
	for _, o := range ops {
		g := a.ops[o]
		if g.F != history.Acquire || g.Type != history.OK || g.Fence == 0 {
			continue
		}
		var prior *leaseInfo
		for _, l := range a.leases {
			if l.Key == g.Key && l.Fence >= g.Fence && l.Start < g.InvokedAt() && (prior == nil || l.Fence > prior.Fence) {
				prior = l
			}
		}
		if prior == nil {
			continue
		}
		verb := "went back"
		if prior.Fence == g.Fence {
			verb = "did not advance"
		}
		s := fmt.Sprintf("the fence counter %s: client %d's grant at %s carried fence %d, after fence %d at %s",
			verb, g.Client, secs(g.DoneAt()), g.Fence, prior.Fence, secs(prior.Start))
		var restart *Band
		for i, b := range a.bands {
			if b.Ended.RestartedEmpty() && b.End > prior.Start && b.End < g.DoneAt() &&
				heldOn([]*leaseInfo{prior}, b.node()) {
				restart = &a.bands[i]
			}
		}
		if restart != nil {
			s += fmt.Sprintf(", because %s lost its keys when it restarted empty at %s", restart.node(), secs(restart.End))
		}
		out = append(out, s)
	}
	return out
}

// clockMoves tells each clock fault within [from, to]: how far the node's
// clock was from true time.
func (a *analysis) clockMoves(from, to time.Duration, explained map[int]bool) []string {
	var out []string
	for i, b := range a.bands {
		if b.Observed || b.Facts == nil || b.Facts.Clock == nil || b.Start > to || b.End < from {
			continue
		}
		c := b.Facts.Clock
		d := time.Duration(c.ByNs)
		var s string
		switch promoted, at := a.promotedOf(b, to); {
		case promoted != "" && (d > 0 || c.RatePPB > 0):
			// A replica expires nothing on its own: its clock mattered
			// once it was promoted, to the leases replicated to it.
			move := fmt.Sprintf("was %v ahead", d)
			if c.RatePPB > 0 {
				move = "ran " + history.Rate(c.RatePPB)
			}
			s = fmt.Sprintf("%s's clock %s (%s on %s, %s to %s); promoted at %s, it expired by that clock the leases replicated to it, early: Redis 7 replicates a lease's expiry as an absolute time",
				promoted, move, b.Fault, strings.Join(b.Facts.Nodes, ", "), secs(b.Start), secs(b.End), secs(at))
		case c.EveryNs > 0:
			s = fmt.Sprintf("%s's clock flipped between %s and %s every %v (%s, %s to %s): leases it held expired early and late in turn",
				b.node(), history.Signed(time.Duration(c.FromNs+c.ByNs)), history.Signed(time.Duration(c.FromNs)), time.Duration(c.EveryNs), b.Fault, secs(b.Start), secs(b.End))
		case c.RatePPB > 0:
			s = fmt.Sprintf("%s's clock ran %s (%s, %s to %s): leases it held expired early there, by the share of their ttl it gained", b.node(), history.Rate(c.RatePPB), b.Fault, secs(b.Start), secs(b.End))
		case c.RatePPB < 0:
			s = fmt.Sprintf("%s's clock ran %s (%s, %s to %s): leases it held outlived their ttl there", b.node(), history.Rate(c.RatePPB), b.Fault, secs(b.Start), secs(b.End))
		case d > 0:
			s = fmt.Sprintf("%s's clock was %v ahead (%s, %s to %s): leases it held expired early there", b.node(), d, b.Fault, secs(b.Start), secs(b.End))
		case d < 0:
			s = fmt.Sprintf("%s's clock was %v behind (%s, %s to %s): leases it granted meanwhile outlived their ttl", b.node(), -d, b.Fault, secs(b.Start), secs(b.End))
		default:
			s = fmt.Sprintf("%s's clock was moved (%s, %s to %s)", b.node(), b.Fault, secs(b.Start), secs(b.End))
		}
		out = append(out, s)
		explained[i] = true
	}
	return out
}

// promotedOf is the first node of clock band b promoted within its window
// and by to, and when; "" if none was.
func (a *analysis) promotedOf(b Band, to time.Duration) (string, time.Duration) {
	for _, p := range a.bands {
		if n, ok := p.Facts.Promoted(); ok && slices.Contains(b.Facts.Nodes, n) && p.Start >= b.Start && p.Start <= min(b.End, to) {
			return n, p.Start
		}
	}
	return "", 0
}

// frozenClients tells each client of the finding that a fault froze within
// [from, to], and whether it outlived its lease's validity frozen.
func (a *analysis) frozenClients(ops []int, from, to time.Duration, explained map[int]bool) []string {
	involved := map[int]bool{}
	for _, o := range ops {
		involved[a.ops[o].Client] = true
	}
	var out []string
	for i, b := range a.bands {
		f := b.Facts
		if b.Observed || f == nil || !f.Frozen || len(f.Clients) != 1 || !involved[f.Clients[0]] || b.Start > to || b.End < from {
			continue
		}
		client := f.Clients[0]
		s := fmt.Sprintf("client %d was frozen at %s for %v (%s, %s to %s)", client, f.PausedAt, f.Hold(), b.Fault, secs(b.Start), secs(b.End))
		// The lease told of is the finding's own: the client's earlier
		// leases may have run out inside the same pause too.
		for _, o := range ops {
			l := a.leaseOf[o]
			if l != nil && l.Client == client && l.ValidUntil > b.Start && l.ValidUntil < b.End && l.Start < b.Start {
				s += fmt.Sprintf(": its lease's validity ran out at %s while it could not know", secs(l.ValidUntil))
				break
			}
		}
		out = append(out, s)
		explained[i] = true
	}
	return out
}

// wrongRefusal tells a refused-write finding's cause: not the lock but the
// resource's check, which refused the holder the lock had just granted.
func (a *analysis) wrongRefusal(f checker.Finding, ops []int) []string {
	if f.Anomaly != checker.RefusedWrite {
		return nil
	}
	w := a.refusedWrite(ops)
	if w < 0 {
		return nil
	}
	o := a.ops[w]
	return []string{fmt.Sprintf("the resource's check refused client %d's write with fence %d at %s while no other grant of %s that could have made it refuse may have been live: it refuses the lock's current holder, whose work is lost, not only stale ones",
		o.Client, o.Fence, secs(o.DoneAt()), o.Key)}
}

// grantFromNowhere tells a phantom-grant finding's cause: the outages
// (history.Outage, recorded with their faults' ends) that covered its
// acquire from its invoke to its answer.
func (a *analysis) grantFromNowhere(f checker.Finding, ops []int, explained map[int]bool) []string {
	if f.Anomaly != checker.PhantomGrant {
		return nil
	}
	var out []string
	for _, o := range ops {
		g := a.ops[o]
		if g.F != history.Acquire {
			continue
		}
		var spans []string
		for _, e := range a.events.kept {
			for _, d := range e.Down {
				if d.From <= g.InvT && g.DoneT <= d.Until {
					spans = append(spans, fmt.Sprintf("%s was killed from %s until %s (%s)", d.Node, secs(time.Duration(d.From)), secs(time.Duration(d.Until)), e.F))
				}
			}
		}
		if len(spans) == 0 {
			continue
		}
		for i, b := range a.bands {
			if !b.Observed && b.Start <= g.InvokedAt() && b.End >= g.DoneAt() {
				explained[i] = true
			}
		}
		out = append(out, fmt.Sprintf("%s, the whole of client %d's acquire from %s to %s: the grant it was told of came from no server (its client or library reported a grant it never got)",
			strings.Join(spans, " and "), g.Client, secs(g.InvokedAt()), secs(g.DoneAt())))
	}
	return out
}
