package search

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/history"
)

// Features are what a run reached, as explore counts coverage: for each
// fault that struck, a tuple of the fault, the lock's phase when it struck,
// what it hit and the state of the lease then; each pair of tuples in the
// order they came; and each property's margin, in buckets that halve as
// the margin does, so that coming closer to breaking is new ground too.
func Features(events []history.Event, margins []checker.Margin, ttl time.Duration) []string {
	ops := history.BuildOps(events).Ops()
	// released is when each grant's holder first asked to release it.
	released := map[[2]string]int64{}
	for i := range ops {
		if o := &ops[i]; o.F == history.Release {
			k := [2]string{o.Key, o.Token}
			if r, ok := released[k]; !ok || o.InvT < r {
				released[k] = o.InvT
			}
		}
	}
	var tuples []string
	for i := range events {
		e := &events[i]
		if !e.IsNemesis() || e.Phase != history.Start {
			continue
		}
		tuples = append(tuples, tupleAt(e, events[:i], ops, released, ttl))
	}
	out := slices.Clone(tuples)
	for i := 1; i < len(tuples); i++ {
		out = append(out, tuples[i-1]+" -> "+tuples[i])
	}
	for _, m := range margins {
		out = append(out, fmt.Sprintf("%s margin %s", m.Property, marginBucket(m.Ms)))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// marginBucket is a margin's order of magnitude: "<0" broken, else the
// power of two of its milliseconds.
func marginBucket(ms float64) string {
	if ms < 0 {
		return "<0"
	}
	return fmt.Sprintf("~2^%d ms", int(math.Log2(ms+1)))
}

// tupleAt is the abstract state a fault started in: fault | the lock's
// phase | what it hit | the holder's lease.
func tupleAt(e *history.Event, before []history.Event, ops []history.Op, released map[[2]string]int64, ttl time.Duration) string {
	t := e.Time
	holder, acquiring := (*history.Op)(nil), false
	for i := range ops {
		o := &ops[i]
		if o.F != history.Acquire || o.InvT > t {
			continue
		}
		r, asked := released[[2]string{o.Key, o.Token}]
		if o.Type == history.OK && o.DoneT <= t && !(asked && r <= t) {
			if holder == nil || o.DoneT > holder.DoneT {
				holder = o
			}
		}
		if !o.Finished() || o.DoneT > t {
			acquiring = true
		}
	}
	phase, lease := "free", "none"
	switch {
	case holder != nil:
		phase = "held"
		held := time.Duration(t - holder.DoneT)
		switch {
		case held < ttl/3:
			lease = "fresh"
		case held < 2*ttl/3:
			lease = "middle"
		case held < ttl:
			lease = "late"
		default:
			lease = "past-ttl"
		}
	case acquiring:
		phase = "acquiring"
	}
	return fmt.Sprintf("%s | %s | %s | %s", e.F, phase, hit(e, holder, before), lease)
}

// hit is what a fault acted on: the holder, other clients, a node in the
// role the latest grant probe saw it in, or everything.
func hit(e *history.Event, holder *history.Op, before []history.Event) string {
	f := e.Facts
	switch {
	case f == nil:
		return "unknown"
	case f.AllClients:
		return "all clients"
	case len(f.Clients) > 0 && holder != nil && slices.Contains(f.Clients, holder.Client):
		return "the holder"
	case f.After != nil && holder != nil && f.After.Client == holder.Client && len(f.Nodes) == 0:
		return "the holder"
	case len(f.Clients) > 0:
		return "other clients"
	case len(f.Nodes) > 0:
		return "a " + roleOf(f.Nodes[0], before) + " node"
	}
	return "nothing named"
}

// roleOf is a node's role as the latest grant probe before the fault saw
// it: primary, replica, or independent where no probe ran (one node, or
// Redlock's peers, which probes see as primaries of their own).
func roleOf(node string, before []history.Event) string {
	for i := len(before) - 1; i >= 0; i-- {
		e := &before[i]
		if e.F != history.GrantSeen {
			continue
		}
		for _, c := range e.Facts.Answers() {
			if c.Node == node && c.Role != "" {
				if c.Role == "primary" {
					return "primary"
				}
				return "replica"
			}
		}
	}
	return "independent"
}
