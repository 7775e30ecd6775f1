package checker

import (
	"fmt"
	"slices"
	"sort"

	"github.com/lockharness/lockharness/history"
)

// tokenUses lists each key+token's extends and releases (by Op.TokenID),
// in invoke order, all in one array. Extends and releases are matched to
// their grant by key and token, never by process: a client's watchdog
// extends under its own process number.
type tokenUses struct {
	// start[id] is where id's uses begin in ops; they end at start[id+1].
	start []int32
	ops   []*history.Op
}

func (u tokenUses) of(id int32) []*history.Op { return u.ops[u.start[id]:u.start[id+1]] }

// extendsAndReleases gathers ops' tokened extends and releases by
// TokenID, counting them first so that no per-token list is allocated.
func extendsAndReleases(ops []history.Op, tokens int) tokenUses {
	u := tokenUses{start: make([]int32, tokens+1)}
	isUse := func(o *history.Op) bool {
		return (o.F == history.Extend || o.F == history.Release) && o.Token != ""
	}
	for i := range ops {
		if o := &ops[i]; isUse(o) {
			u.start[o.TokenID+1]++
		}
	}
	for id := range tokens {
		u.start[id+1] += u.start[id]
	}
	u.ops = make([]*history.Op, u.start[tokens])
	next := slices.Clone(u.start[:tokens])
	for i := range ops {
		if o := &ops[i]; isUse(o) {
			u.ops[next[o.TokenID]] = o
			next[o.TokenID]++
		}
	}
	return u
}

// lease is what one grant's acquire, extends and releases prove about when
// its key existed on the server. The key was set at some instant in the
// acquire's [invoke, completion] and lasts ttl from then, so it certainly
// existed during [start, certEnd): from the acquire's completion until ttl
// after its invoke (or after the invoke of the extend that reached furthest),
// unless the client asked to release it sooner.
type lease struct {
	acq            *history.Op
	start, certEnd int64
	// certBy is the extend or release that set certEnd; nil when the
	// acquire's own ttl did, or the horizon of an audit of a history
	// still being recorded (byHorizon).
	certBy    *history.Op
	byHorizon bool
	// release is the first release of the lease after its grant, if any.
	release *history.Op
	// hi is when the lease had certainly expired on the server (slack
	// included; forever when an extend of unknown outcome may have landed);
	// hiBy is the extend whose answer set it, nil when the grant's did.
	hi   int64
	hiBy *history.Op
	// mayEnd is when the lease was certainly over, on the server or by
	// its release: hi, or sooner the answer of a release that succeeded
	// with no extend of the token sent after it; forever for a lease
	// renewed where the harness cannot see.
	mayEnd int64
}

// foreignUse is an extend or release that succeeded although its lease
// could not have been live: whatever the server extended or deleted
// belonged to someone else.
type foreignUse struct {
	use *history.Op
	acq *history.Op // the token's acquire; nil when the history has none
	hi  int64       // the lease may have been live until here, slack included
	// hiBy is the extend that set hi; nil when the acquire did.
	hiBy *history.Op
}

// extendTTL is the lease length an extend asked for; an extend that names
// none renews by the acquire's ttl.
func extendTTL(ext, acq *history.Op) int64 {
	if ext.TTLMs > 0 {
		return ext.TTLNs()
	}
	return acq.TTLNs()
}

// auditLeases finds double grants and foreign releases.
func (c *checker) auditLeases() {
	var untokened int
	for i := range c.ops {
		o := &c.ops[i]
		switch o.F {
		case history.Acquire:
			if o.Token == "" {
				continue
			}
			if prev := c.acquires[o.TokenID]; prev == nil || (prev.Type != history.OK && o.Type == history.OK) {
				c.acquires[o.TokenID] = o
			}
		case history.Extend, history.Release:
			if o.Token == "" {
				untokened++
			}
		}
	}
	c.uses = extendsAndReleases(c.ops, len(c.acquires))
	if untokened > 0 {
		c.note("%d extends or releases carry no token; they were not matched to grants", untokened)
	}

	var foreign []foreignUse
	var keys []string
	// The leases live in one slab: a soak has hundreds of thousands.
	grants := 0
	for i := range c.ops {
		if o := &c.ops[i]; o.F == history.Acquire && o.Type == history.OK {
			grants++
		}
	}
	slab := make([]lease, 0, grants)
	for i := range c.ops {
		o := &c.ops[i]
		if o.F != history.Acquire || o.Type != history.OK {
			continue
		}
		var uses []*history.Op
		if o.Token != "" {
			uses = c.uses.of(o.TokenID)
		}
		// A token granted twice is a harness bug; audit its uses once.
		audit := o.Token != "" && c.acquires[o.TokenID] == o
		slab = append(slab, c.walkLease(o, uses, audit, &foreign))
		l := &slab[len(slab)-1]
		if _, seen := c.leases[o.Key]; !seen {
			keys = append(keys, o.Key)
		}
		c.leases[o.Key] = append(c.leases[o.Key], l)
		if audit {
			c.leaseOf[o.TokenID] = l
		}
	}
	foreign = append(foreign, c.ungrantedUses()...)

	for _, key := range keys {
		ls := c.leases[key]
		sort.SliceStable(ls, func(i, j int) bool { return ls[i].start < ls[j].start })
		c.overlaps(key, ls)
		if c.horizon == 0 {
			c.exclusivityMargins(key, ls)
		}
	}
	if c.horizon == 0 {
		c.ownershipMargins()
	}
	for _, f := range foreign {
		c.reportForeign(f)
	}
}

// walkLease computes a grant's windows from its extends and releases, in
// invoke order, and adds the foreign ones to foreign. An extend counts only
// if the lease may still have been live when it was invoked; a later one
// cannot have extended this lease, so it is foreign if it succeeded.
func (c *checker) walkLease(acq *history.Op, uses []*history.Op, audit bool, foreign *[]foreignUse) lease {
	ttl := acq.TTLNs()
	l := lease{acq: acq, start: acq.DoneT, certEnd: plus(acq.InvT, ttl)}
	hi := plus(acq.DoneT, ttl) // may be live until here, before slack
	var hiBy *history.Op
	// An extend sets the lease's remaining length (PEXPIRE), shorter or
	// longer: the last one to land decides. lastOK is the latest extend
	// known to have landed; minUnknown is the shortest length asked for by
	// an extend of unknown outcome, which may land after any later one.
	var lastOK *history.Op
	minUnknown := history.Forever
	for _, u := range uses {
		late := u.InvT > plus(hi, c.slack+c.outlive)
		if late && audit && u.Type == history.OK {
			*foreign = append(*foreign, foreignUse{use: u, acq: acq, hi: plus(hi, c.slack+c.outlive), hiBy: hiBy})
		}
		if late && audit && u.Finished() && c.horizon == 0 {
			c.lateUses = append(c.lateUses, foreignUse{use: u, acq: acq, hi: plus(hi, c.slack+c.outlive), hiBy: hiBy})
		}
		switch u.F {
		case history.Release:
			// Once a client asks to release, it no longer claims the lock,
			// whatever the answer.
			if l.release == nil && u.InvT >= acq.DoneT {
				l.release = u
			}
		case history.Extend:
			if late {
				continue
			}
			d := extendTTL(u, acq)
			switch u.Type {
			case history.OK:
				end := plus(u.InvT, min(d, minUnknown))
				if lastOK == nil || u.InvT >= lastOK.DoneT || end < l.certEnd {
					// This extend landed after the previous one, or
					// may have (they overlap): its length counts.
					l.certEnd, l.certBy = end, u
				}
				lastOK = u
				if end := plus(u.DoneT, d); end > hi {
					hi, hiBy = end, u
				}
			case history.Info:
				minUnknown = min(minUnknown, d)
				if end := plus(u.InvT, d); end < l.certEnd {
					l.certEnd, l.certBy = end, u
				}
				hi, hiBy = history.Forever, u
				if c.horizon > 0 && !u.Finished() {
					// Still outstanding when a running history is
					// audited: it may yet answer ok, at any later time,
					// and then no extend invoked before that answer can
					// lengthen the lease. As if it had landed last.
					pending := *u
					pending.DoneT = history.Forever
					lastOK = &pending
				}
			}
		}
	}
	// Slack absorbs a server's clock running apart from the harness's, so
	// it comes off the ttl's bound, and not off a release the harness sent
	// or the audit's horizon, which are the harness's own instants. A
	// release a library made on its own is stamped when its report
	// arrives, after the delete may have landed: it keeps the slack.
	if l.certEnd != history.Forever {
		l.certEnd -= c.slack
	}
	if r := l.release; r != nil {
		end := r.InvT
		if r.Background {
			end -= c.slack
		}
		if end < l.certEnd {
			l.certEnd, l.certBy = end, r
		}
	}
	if c.horizon > 0 && l.certEnd > c.horizon {
		l.certEnd, l.certBy, l.byHorizon = c.horizon, nil, true
	}
	l.hi, l.hiBy = plus(hi, c.slack+c.outlive), hiBy
	l.mayEnd = l.hi
	if c.unseen != nil && c.unseen[acq.TokenID] {
		l.mayEnd = history.Forever
	}
	if r := l.release; r != nil && r.Type == history.OK && r.DoneT < l.mayEnd && !extendedAfter(uses, r) {
		l.mayEnd = r.DoneT
	}
	return l
}

// extendedAfter reports whether an extend among uses may have landed after
// the release rel was sent (it had not answered by then): one that
// re-creates keys could outlive the release.
func extendedAfter(uses []*history.Op, rel *history.Op) bool {
	for _, u := range uses {
		if u.F == history.Extend && (!u.Finished() || u.DoneT >= rel.InvT) {
			return true
		}
	}
	return false
}

// ungrantedUses finds extends and releases that succeeded on a token whose
// acquire failed or is missing. A token whose acquire ended as info may
// have been granted, so its uses are never foreign.
func (c *checker) ungrantedUses() []foreignUse {
	var foreign []foreignUse
	for i := range c.ops {
		u := &c.ops[i]
		if (u.F != history.Extend && u.F != history.Release) || u.Token == "" || u.Type != history.OK {
			continue
		}
		acq := c.acquires[u.TokenID]
		if acq == nil || acq.Type == history.Fail {
			foreign = append(foreign, foreignUse{use: u, acq: acq})
		}
	}
	return foreign
}

// overlaps reports every pair of one key's leases, sorted by start, whose
// certain windows overlap. The sweep keeps only windows still open at the
// current start, so its cost grows with how many leases are certainly live
// at once, which a working lock keeps at one.
func (c *checker) overlaps(key string, ls []*lease) {
	var open []*lease
	for _, l := range ls {
		if l.certEnd <= l.start {
			continue
		}
		still := open[:0]
		for _, o := range open {
			if o.certEnd > l.start {
				still = append(still, o)
			}
		}
		open = still
		for _, o := range open {
			if o.acq.Token != "" && o.acq.Token == l.acq.Token {
				continue
			}
			c.reportDoubleGrant(key, o, l)
		}
		open = append(open, l)
	}
}

func (c *checker) reportDoubleGrant(key string, a, b *lease) {
	narrative := fmt.Sprintf("%s %s acquired %s, %s; %s %s acquired %s, %s",
		Secs(a.start), who(a.acq), grantee(a.acq), c.certainUntil(a),
		Secs(b.start), who(b.acq), grantee(b.acq), c.certainUntil(b))
	c.report(DoubleGrant, key, positions(a.acq, b.acq, a.certBy, b.certBy), narrative)
}

func (c *checker) certainUntil(l *lease) string {
	if l.certEnd == history.Forever {
		return "held with no expiry and no release"
	}
	s := "certainly held until " + Secs(l.certEnd)
	switch {
	case l.byHorizon:
		return s + " (as far as the history recorded so far goes)"
	case l.certBy == nil:
		s += fmt.Sprintf(" (ttl %d ms from its invoke at %s", l.acq.TTLMs, Secs(l.acq.InvT))
	case l.certBy.F == history.Extend:
		s += fmt.Sprintf(" (extended at %s for %d ms", Secs(l.certBy.InvT), extendTTL(l.certBy, l.acq)/1e6)
	default:
		s += fmt.Sprintf(" (release asked at %s", Secs(l.certBy.InvT))
	}
	if c.slack > 0 && (l.certBy == nil || l.certBy.F == history.Extend || l.certBy.Background) {
		s += fmt.Sprintf(", less %.3f s slack", float64(c.slack)/1e9)
	}
	return s + ")"
}

// expiredBy is "expired by 2.577 s (ttl 1000 ms from its grant at
// 1.575 s, plus 0.002 s slack)": the bound with what it rests on, each time
// one the finding's events show (the grant's answer, or the answer of the
// extend that set it: hiBy, which the finding must include).
func (c *checker) expiredBy(hi int64, hiBy, acq *history.Op) string {
	s := "expired by " + Secs(hi)
	if hiBy == nil {
		s += fmt.Sprintf(" (ttl %d ms from its grant at %s", acq.TTLMs, Secs(acq.DoneT))
	} else {
		s += fmt.Sprintf(" (%d ms from its extend answered at %s", extendTTL(hiBy, acq)/1e6, Secs(hiBy.DoneT))
	}
	if c.slack > 0 {
		s += fmt.Sprintf(", plus %.3f s slack", float64(c.slack)/1e9)
	}
	if c.outlive > 0 {
		s += fmt.Sprintf(", plus the %.3f s the lock service may keep a lease past its ttl", float64(c.outlive)/1e9)
	}
	return s + ")"
}

func (c *checker) reportForeign(f foreignUse) {
	u := f.use
	verb := "released"
	if u.F == history.Extend {
		verb = "extended"
	}
	narrative := fmt.Sprintf("%s %s %s %s token %s (ok)", Secs(u.InvT), who(u), verb, u.Key, u.Token)
	switch {
	case f.acq == nil:
		narrative += ", but no acquire of that token appears in the history"
	case f.acq.Type == history.Fail:
		narrative += fmt.Sprintf(", but its acquire at %s failed: the token was never granted", Secs(f.acq.InvT))
	default:
		narrative += fmt.Sprintf(", but that lease, granted to %s, had %s", who(f.acq), c.expiredBy(f.hi, f.hiBy, f.acq))
	}
	ps := positions(f.acq, f.hiBy, u)
	if other := c.holderAt(u.Key, u.InvT, f.acq); other != nil {
		narrative += fmt.Sprintf("; the latest grant of %s before then was %s to %s at %s",
			u.Key, token(other.acq), who(other.acq), Secs(other.start))
		ps = append(ps, positions(other.acq)...)
	}
	c.report(ForeignRelease, u.Key, ps, narrative)
}

// holderAt is the lease of key granted last before t, other than the one of
// acquire not; nil if none.
func (c *checker) holderAt(key string, t int64, not *history.Op) *lease {
	ls := c.leases[key]
	i := sort.Search(len(ls), func(i int) bool { return ls[i].start >= t })
	for i--; i >= 0; i-- {
		if ls[i].acq != not {
			return ls[i]
		}
	}
	return nil
}
