package checker

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/lockharness/lockharness/history"
)

// The safety properties a run's margins measure, in report order.
const (
	// Exclusivity: a grant's certain start against the certain end of the
	// lease before it on the key, where that lease ran out rather than
	// being released (a release hands the lock on; nothing was close).
	// Negative is a double grant.
	Exclusivity = "exclusivity"
	// Replication: at a promotion, how long before it a lease still
	// certainly live was found on the promoted node; negative, the lease
	// was certainly live that long past the promotion of a node that
	// lacked it, which is what a double grant after a failover needs.
	Replication = "replication"
	// FenceOrder: a superseded holder's last accepted write against the
	// first accepted write of the holder that superseded it without a
	// release. Negative is a stale write.
	FenceOrder = "fence-order"
	// WriteValidity: an accepted write's arrival against the moment its
	// lease had certainly expired on the servers. Negative is an expired
	// write.
	WriteValidity = "write-validity"
	// Clock: when a node's clock moved forward, the lease time certainly
	// left on it less the move. Negative, the move ate the rest of the
	// lease: the node expires a live lease early, which a grant then turns
	// into a double grant.
	Clock = "clock"
	// Ownership: a release or extend sent after its lease had certainly
	// expired, against the lease another client certainly held on the
	// key until it was answered: how long that lease was certainly held
	// past the answer. Negative, the key may have been free when it
	// arrived, which a release or extend that does not check its token
	// (or re-creates the key) turns into a foreign release.
	Ownership = "ownership"
)

// MarginProperties lists the properties in report order.
var MarginProperties = []string{Exclusivity, Replication, FenceOrder, WriteValidity, Clock, Ownership}

// MarginAnomaly is the anomaly a property's negative margin is: the
// properties whose margin measures an audit's own bounds.
var MarginAnomaly = map[string]string{Exclusivity: DoubleGrant, FenceOrder: StaleWrite, WriteValidity: ExpiredWrite}

// MarginsDisagree says where the margins and the anomaly counts tell
// different stories (a negative margin with no anomaly counted, or an
// anomaly counted with no negative margin), "" where they agree. They are
// reached apart, so a disagreement is a checker defect.
func MarginsDisagree(margins []Margin, anomalies map[string]int) string {
	var out []string
	for _, prop := range MarginProperties {
		anomaly, ok := MarginAnomaly[prop]
		if !ok {
			continue
		}
		i := slices.IndexFunc(margins, func(m Margin) bool { return m.Property == prop })
		negative := i >= 0 && margins[i].Ms < 0
		if negative != (anomalies[anomaly] > 0) {
			got := "none"
			if i >= 0 {
				got = fmt.Sprintf("%.3f ms", margins[i].Ms)
			}
			out = append(out, fmt.Sprintf("%s margin %s with %d %s", prop, got, anomalies[anomaly], anomaly))
		}
	}
	return strings.Join(out, "; ")
}

// Margin is how close one safety property came to breaking in a run: the
// least room it kept, with the events that set it. The closest calls of a
// run that broke nothing say how near it came; a search steers by them.
type Margin struct {
	Property string `json:"property"`
	// Ms is the room in milliseconds: negative is the anomaly itself, or
	// for clock and replication the condition for it (see the property).
	Ms float64 `json:"ms"`
	// Measured counts the instances the property was measured on.
	Measured int    `json:"measured"`
	Key      string `json:"key,omitempty"`
	// At is when the closest call happened, seconds since the run
	// started.
	At float64 `json:"at"`
	// Events are the history indices of the events that set it, in order.
	Events []int `json:"events"`
	// Says tells the closest call in words from those events.
	Says string `json:"says"`
}

// margin is one property's closest call so far; words are made only for
// the one kept.
type margin struct {
	measured int
	ns       int64
	key      string
	at       int64
	events   []int
	says     func() string
}

// closer counts a measurement of prop and says whether ns is the closest
// call so far, so that the caller builds its words only then.
func (c *checker) closer(prop string, ns int64) bool {
	if c.margins == nil {
		c.margins = map[string]*margin{}
	}
	m := c.margins[prop]
	if m == nil {
		m = &margin{ns: math.MaxInt64}
		c.margins[prop] = m
	}
	m.measured++
	return ns < m.ns
}

// setMargin records prop's new closest call (after closer said it is).
func (c *checker) setMargin(prop string, ns int64, key string, at int64, events []int, says func() string) {
	m := c.margins[prop]
	m.ns, m.key, m.at, m.events, m.says = ns, key, at, events, says
}

// settleMargins words the closest calls now, so that what their words
// would be drawn from (the leases, which a soak has millions of) can go.
func (c *checker) settleMargins() {
	for _, m := range c.margins {
		if m.says != nil {
			said := m.says()
			m.says = func() string { return said }
		}
	}
}

// marginResults are the closest calls, in report order.
func (c *checker) marginResults() []Margin {
	var out []Margin
	for _, prop := range MarginProperties {
		m := c.margins[prop]
		if m == nil || m.events == nil {
			continue
		}
		events := slices.Clone(m.events)
		slices.Sort(events)
		events = slices.Compact(events)
		out = append(out, Margin{Property: prop, Ms: marginMs(m.ns), Measured: m.measured,
			Key: m.key, At: math.Round(float64(m.at)/1e6) / 1e3, Events: events, Says: m.says()})
	}
	return out
}

// marginMs is a margin in milliseconds to the microsecond, never rounded
// to zero from below: a negative margin stays negative.
func marginMs(ns int64) float64 {
	v := math.Round(float64(ns)/1e3) / 1e3
	if ns < 0 && v == 0 {
		return -0.001
	}
	return v
}

// indices are the history positions of ops' invokes and completions.
func indices(ops ...*history.Op) []int {
	var out []int
	for _, p := range positions(ops...) {
		out = append(out, p.pos)
	}
	return out
}

// room tells a margin's magnitude.
func room(ns int64) string {
	if ns < 0 {
		ns = -ns
	}
	return fmt.Sprintf("%.1f ms", float64(ns)/1e6)
}

// exclusivityMargins measures, along one key's leases sorted by start, each
// grant against the lease certainly live the longest before it. Leases
// whose certain end is their own release handed the lock on: a grant after
// one is no close call, only one before it (the double grant).
func (c *checker) exclusivityMargins(key string, ls []*lease) {
	var prev *lease
	for _, l := range ls {
		if l.certEnd <= l.start || l.byHorizon || c.renewsUnseen(l.acq.TokenID) {
			continue
		}
		if p := prev; p != nil && p.certEnd != history.Forever && (p.acq.Token == "" || p.acq.Token != l.acq.Token) {
			ns := l.start - p.certEnd
			released := p.certBy != nil && p.certBy.F == history.Release
			if (ns < 0 || !released) && c.closer(Exclusivity, ns) {
				c.setMargin(Exclusivity, ns, key, l.start, indices(p.acq, p.certBy, l.acq), func() string {
					if ns < 0 {
						return fmt.Sprintf("%s was granted %s at %s, %s before %s's lease on it certainly ended (%s)",
							who(l.acq), key, Secs(l.start), room(ns), who(p.acq), c.certainUntil(p))
					}
					return fmt.Sprintf("%s was granted %s at %s, %s after %s's lease had certainly run out (%s, not released)",
						who(l.acq), key, Secs(l.start), room(ns), who(p.acq), c.certainUntil(p))
				})
			}
		}
		if prev == nil || l.certEnd > prev.certEnd {
			prev = l
		}
	}
}

// writeValidityMargin measures an accepted write, sent or accepted at at,
// against when its lease had certainly expired (l.hi).
func (c *checker) writeValidityMargin(w, g *history.Op, l *lease, at int64) {
	ns := l.hi - at
	if !c.closer(WriteValidity, ns) {
		return
	}
	c.setMargin(WriteValidity, ns, w.Key, at, indices(g, l.hiBy, w), func() string {
		when := "before"
		if ns < 0 {
			when = "after"
		}
		return fmt.Sprintf("%s's write (%s) reached the resource by %s, %s %s its lease had certainly %s",
			who(w), grantee(g), Secs(at), room(ns), when, c.expiredBy(l.hi, l.hiBy, g))
	})
}

// fenceOrderMargins measures, on each key, the writes of a holder
// superseded without a release against those of the holder after it: the
// last accepted write of the one against the first of the other, in the
// resource's own order (accepted), its answers' times giving the room.
// Writes in flight together in the right order have none (0); in the
// wrong one, the newer holder's came first: a stale write.
func (c *checker) fenceOrderMargins(accepted []*history.Op) {
	first, last := map[int32]int{}, map[int32]int{}
	for i, w := range accepted {
		if c.grantOf(w) == nil {
			continue
		}
		if _, ok := first[w.TokenID]; !ok {
			first[w.TokenID] = i
		}
		last[w.TokenID] = i
	}
	for _, key := range c.leaseKeys() {
		var prev *lease
		for _, l := range c.leases[key] {
			if _, wrote := first[l.acq.TokenID]; !wrote || c.renewsUnseen(l.acq.TokenID) {
				continue
			}
			if p := prev; p != nil && p.acq.Token != l.acq.Token {
				c.fenceOrderMargin(key, p, l, accepted[last[p.acq.TokenID]], accepted[first[l.acq.TokenID]],
					last[p.acq.TokenID] < first[l.acq.TokenID])
			}
			if prev == nil || l.start > prev.start {
				prev = l
			}
		}
	}
}

// fenceOrderMargin measures one pair: old is the older holder's last
// write, new the newer's first. The pair is a close call only where the
// older lease was not released before the newer grant (a release hands
// the lock on), and out of order a stale write only where the newer grant
// is certainly newer, by time or by fence, as auditStaleWrites judges.
func (c *checker) fenceOrderMargin(key string, older, newer *lease, old, new *history.Op, inOrder bool) {
	ns := new.DoneT - old.DoneT
	if inOrder {
		if older.release != nil && older.release.InvT <= newer.start {
			return
		}
		ns = max(ns, 0)
	} else {
		newerByFence := older.acq.Fence > 0 && newer.acq.Fence > older.acq.Fence
		if newer.acq.InvT <= older.acq.DoneT && !newerByFence {
			return // the grants overlap: neither is the older
		}
		ns = min(ns, -1000)
	}
	if !c.closer(FenceOrder, ns) {
		return
	}
	c.setMargin(FenceOrder, ns, key, min(old.DoneT, new.DoneT), indices(older.acq, newer.acq, old, new), func() string {
		if !inOrder {
			return fmt.Sprintf("the resource accepted %s's write at %s, %s after the write of %s, which superseded it at %s",
				who(old), Secs(old.DoneT), room(ns), who(new), Secs(newer.start))
		}
		before := room(ns) + " before"
		if ns == 0 {
			before = "0.0 ms: in flight with, and accepted before,"
		}
		return fmt.Sprintf("%s's last write was accepted at %s, %s the first of %s, which was granted %s at %s while the older lease was not released",
			who(old), Secs(old.DoneT), before, who(new), key, Secs(newer.start))
	})
}

// nemesisMargins measures the leases live at each promotion (replication)
// and each forward clock move (clock).
func (c *checker) nemesisMargins() {
	seen := map[int]*history.Event{} // a grant's completion -> its probe
	for i := range c.nemesis {
		if e := &c.nemesis[i]; e.F == history.GrantSeen && e.Facts != nil && e.Facts.Grant != nil {
			seen[e.Facts.Grant.Event] = e
		}
	}
	windows := history.FaultWindows(c.nemesis)
	for i := range c.nemesis {
		e := &c.nemesis[i]
		if node, ok := e.Facts.Promoted(); ok {
			c.replicationMargins(e, node, seen)
		}
	}
	for _, w := range windows {
		e := &c.nemesis[w.Start]
		if e.Facts == nil || e.Facts.Clock == nil {
			continue
		}
		end := history.Forever
		if w.End >= 0 {
			end = c.nemesis[w.End].Time
		}
		c.clockMargins(e, end, seen)
	}
}

// liveAt calls f with each lease certainly live at t, key by key.
func (c *checker) liveAt(t int64, f func(key string, l *lease)) {
	for _, key := range c.leaseKeys() {
		for _, l := range c.leases[key] {
			if l.start <= t && t < l.certEnd && !l.byHorizon && !c.renewsUnseen(l.acq.TokenID) {
				f(key, l)
			}
		}
	}
}

// leaseKeys are the keys with leases, sorted: a margin's ties go to the
// same lease on every reading.
func (c *checker) leaseKeys() []string {
	keys := make([]string, 0, len(c.leases))
	for k := range c.leases {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// renewsUnseen reports whether a key+token's lease renews where the
// harness cannot see: when it ended is not known, nor its margins.
func (c *checker) renewsUnseen(id int32) bool { return c.unseen != nil && c.unseen[id] }

func (c *checker) replicationMargins(e *history.Event, node string, seen map[int]*history.Event) {
	c.liveAt(e.Time, func(key string, l *lease) {
		probe := seen[int(l.acq.Done)]
		if probe == nil || probe.Time > e.Time {
			return
		}
		i := slices.IndexFunc(probe.Facts.Copies, func(cp history.Copy) bool { return cp.Node == node })
		if i < 0 {
			return
		}
		cp := probe.Facts.Copies[i]
		var ns int64
		switch {
		case cp.Holds == history.HoldsToken:
			ns = e.Time - probe.Time
		case cp.Lacks():
			ns = -min(l.certEnd-e.Time, history.Forever/2)
		default:
			return // silent, or it does not serve the key
		}
		if !c.closer(Replication, ns) {
			return
		}
		c.setMargin(Replication, ns, key, e.Time, append(indices(l.acq), probe.Index, e.Index), func() string {
			if ns < 0 {
				return fmt.Sprintf("%s was promoted at %s while %s's lease on %s, which a probe at %s did not find on it, was certainly live %s longer (%s)",
					node, Secs(e.Time), who(l.acq), key, Secs(probe.Time), room(ns), c.certainUntil(l))
			}
			return fmt.Sprintf("%s was promoted at %s; %s's lease on %s, certainly live then, had been found on it %s before, at %s",
				node, Secs(e.Time), who(l.acq), key, room(ns), Secs(probe.Time))
		})
	})
}

// clockMargins measures a clock fault's forward move against the leases
// certainly live on its nodes when it struck (for a strobe, which moves
// forward again at each flip, the leases live at any point of its window,
// from when they were).
func (c *checker) clockMargins(e *history.Event, end int64, seen map[int]*history.Event) {
	mv := *e.Facts.Clock
	strobe := mv.EveryNs > 0
	drift := mv.RatePPB != 0
	// How far the clock moved forward while a lease had left ns to run:
	// a jump's or a strobe's offset at once, a drift's gain over those ns
	// (within the drift's window).
	moved := func(left int64) int64 {
		if strobe {
			return max(mv.ByNs, -mv.ByNs)
		}
		return int64(mv.GainedBy(time.Duration(left)))
	}
	if moved(int64(time.Hour)) <= 0 {
		return // a clock set back, or running slow, lengthens leases
	}
	for _, key := range c.leaseKeys() {
		for _, l := range c.leases[key] {
			// A strobe or a drift moves the clock all through its window:
			// a lease granted in it is measured from its grant.
			at := e.Time
			if strobe || drift {
				at = max(at, l.start)
			}
			if l.byHorizon || c.renewsUnseen(l.acq.TokenID) || l.start > at || at >= l.certEnd || at > end || l.certEnd == history.Forever {
				continue
			}
			node := c.holdingNode(e.Facts.Nodes, seen[int(l.acq.Done)])
			if node == "" {
				continue
			}
			move := moved(min(l.certEnd, end) - at)
			ns := l.certEnd - at - move
			if !c.closer(Clock, ns) {
				continue
			}
			c.setMargin(Clock, ns, key, at, append(indices(l.acq), e.Index), func() string {
				how := "moved " + history.Signed(time.Duration(move))
				if mv.RatePPB != 0 {
					how = fmt.Sprintf("ran %s (%s by then)", history.Rate(mv.RatePPB), history.Signed(time.Duration(move).Round(time.Microsecond)))
				}
				left := fmt.Sprintf("%s's lease on %s had %s certainly left (%s) when %s's clock %s at %s",
					who(l.acq), key, room(l.certEnd-at), c.certainUntil(l), node, how, Secs(at))
				if ns < 0 {
					return left + fmt.Sprintf(": the move ate the rest of it, %s more", room(ns))
				}
				return left + fmt.Sprintf(": %s to spare", room(ns))
			})
		}
	}
}

// holdingNode is the first of nodes a lease may live on: one its probe
// found it on, or, unprobed (a topology of one node), the first node.
func (c *checker) holdingNode(nodes []string, probe *history.Event) string {
	if probe == nil {
		if len(nodes) > 0 {
			return nodes[0]
		}
		return ""
	}
	for _, n := range nodes {
		if slices.Contains(probe.Facts.Holders(), n) {
			return n
		}
	}
	return ""
}

// ownershipMargins measures each release or extend sent after its lease
// had certainly expired (lateUses) against the lease granted to another
// before it was sent that was certainly held the longest: the room is
// that lease's certain end less the use's answer. With none held that
// long, the key may have been free from the later of that end and the
// use's own lease's expiry.
func (c *checker) ownershipMargins() {
	others := c.heldLongestBefore()
	for i, f := range c.lateUses {
		u, other := f.use, others[i]
		held := f.hi
		if other != nil {
			held = max(held, min(other.certEnd, history.Forever/2))
		}
		ns := held - u.DoneT
		if !c.closer(Ownership, ns) {
			continue
		}
		events := indices(f.acq, f.hiBy, u)
		if other != nil {
			events = append(events, indices(other.acq, other.certBy)...)
		}
		c.setMargin(Ownership, ns, u.Key, u.DoneT, events, func() string {
			verb := "release"
			if u.F == history.Extend {
				verb = "extend"
			}
			late := fmt.Sprintf("%s's %s of %s, sent at %s after its lease had certainly %s, was answered (%s) at %s",
				who(u), verb, u.Key, Secs(u.InvT), c.expiredBy(f.hi, f.hiBy, f.acq), u.Type, Secs(u.DoneT))
			switch {
			case other == nil:
				return late + fmt.Sprintf(" with no other grant of the key before it: the key may have been free for %s", room(ns))
			case ns >= 0:
				return late + fmt.Sprintf(", %s before %s's lease on it was certainly over (%s)", room(ns), who(other.acq), c.certainUntil(other))
			}
			return late + fmt.Sprintf(", %s after the last moment %s's lease on it was certainly held (%s): the key may have been free", room(ns), who(other.acq), c.certainUntil(other))
		})
	}
}

// heldLongestBefore finds, for each late use, the lease with the latest
// certain end (the first of equals, in order of grant) among the leases of
// its key granted by the time it was sent, other than its own token's. One
// sweep per key over leases and uses in time order keeps the two longest
// held by different tokens so far: the use's own token excludes at most one
// of them. A scan of every lease for every use took a million operations
// minutes.
func (c *checker) heldLongestBefore() []*lease {
	others := make([]*lease, len(c.lateUses))
	byKey := map[string][]int{}
	for i, f := range c.lateUses {
		byKey[f.use.Key] = append(byKey[f.use.Key], i)
	}
	for key, uses := range byKey {
		sort.SliceStable(uses, func(a, b int) bool { return c.lateUses[uses[a]].use.InvT < c.lateUses[uses[b]].use.InvT })
		ls := c.leases[key]
		var top [2]*lease // by certEnd, of different tokens
		next := 0
		for _, i := range uses {
			u := c.lateUses[i].use
			for ; next < len(ls) && ls[next].start <= u.InvT; next++ {
				if l := ls[next]; !l.byHorizon && !c.renewsUnseen(l.acq.TokenID) {
					top = keepLongest(top, l)
				}
			}
			for _, l := range top {
				if l != nil && l.acq != c.lateUses[i].acq && (l.acq.Token == "" || l.acq.Token != u.Token) {
					others[i] = l
					break
				}
			}
		}
	}
	return others
}

// keepLongest adds l to the two leases of different tokens held longest,
// an earlier one keeping its place against an equal end. A token's leases
// take one place: its longest.
func keepLongest(top [2]*lease, l *lease) [2]*lease {
	sameToken := func(a *lease) bool { return a != nil && a.acq.Token != "" && a.acq.Token == l.acq.Token }
	switch {
	case sameToken(top[0]):
		if l.certEnd > top[0].certEnd {
			top[0] = l
		}
		return top
	case sameToken(top[1]):
		if l.certEnd > top[1].certEnd {
			top[1] = l
		}
	case top[1] == nil || l.certEnd > top[1].certEnd:
		top[1] = l
	default:
		return top
	}
	if top[0] == nil || top[1].certEnd > top[0].certEnd {
		top[0], top[1] = top[1], top[0]
	}
	return top
}
