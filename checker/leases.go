package checker

import (
	"fmt"
	"sort"

	"github.com/lockharness/lockharness/history"
)

// tokenKey identifies a lease. Extends and releases are matched to their
// grant by it, never by process: a client's watchdog extends under its own
// process number.
type tokenKey struct{ key, token string }

// lease is what one grant's acquire, extends and releases prove about when
// its key existed on the server. The key was set at some instant in the
// acquire's [invoke, completion] and lasts ttl from then, so it certainly
// existed during [start, certEnd): from the acquire's completion until ttl
// after its invoke (or after the invoke of the extend that reached furthest),
// unless the client asked to release it sooner.
type lease struct {
	acq            *op
	start, certEnd int64
	// certBy is the extend or release that set certEnd; nil when the
	// acquire's own ttl did.
	certBy *op
	// release is the first release of the lease after its grant, if any.
	release *op
	// hi is when the lease had certainly expired on the server (slack
	// included; forever when an extend of unknown outcome may have landed).
	hi int64
}

// foreignUse is an extend or release that succeeded although its lease
// could not have been live: whatever the server extended or deleted
// belonged to someone else.
type foreignUse struct {
	use *op
	acq *op   // the token's acquire; nil when the history has none
	hi  int64 // the lease may have been live until here, slack included
	// hiBy is the extend that set hi; nil when the acquire did.
	hiBy *op
}

func ttlNs(ms int64) int64 {
	// A lease without a ttl is a lock without expiry: it lasts until
	// released.
	if ms <= 0 {
		return forever
	}
	return ms * 1e6
}

// extendTTL is the lease length an extend asked for; an extend that names
// none renews by the acquire's ttl.
func extendTTL(ext, acq *op) int64 {
	if ext.ttlMs > 0 {
		return ttlNs(ext.ttlMs)
	}
	return ttlNs(acq.ttlMs)
}

// auditLeases finds double grants and foreign releases.
func (c *checker) auditLeases() {
	var untokened int
	for i := range c.ops {
		o := &c.ops[i]
		k := tokenKey{o.key, o.token}
		switch o.kind {
		case history.Acquire:
			if o.token == "" {
				continue
			}
			if prev, dup := c.acquires[k]; !dup || (prev.outcome != history.OK && o.outcome == history.OK) {
				c.acquires[k] = o
			}
		case history.Extend, history.Release:
			if o.token == "" {
				untokened++
				continue
			}
			c.uses[k] = append(c.uses[k], o)
		}
	}
	if untokened > 0 {
		c.note("%d extends or releases carry no token; they were not matched to grants", untokened)
	}

	var foreign []foreignUse
	var keys []string
	for i := range c.ops {
		o := &c.ops[i]
		if o.kind != history.Acquire || o.outcome != history.OK {
			continue
		}
		k := tokenKey{o.key, o.token}
		var uses []*op
		if o.token != "" {
			uses = c.uses[k]
		}
		// A token granted twice is a harness bug; audit its uses once.
		audit := o.token != "" && c.acquires[k] == o
		l, f := c.walkLease(o, uses, audit)
		foreign = append(foreign, f...)
		if _, seen := c.leases[o.key]; !seen {
			keys = append(keys, o.key)
		}
		c.leases[o.key] = append(c.leases[o.key], l)
		if audit {
			c.leaseOf[k] = l
		}
	}
	foreign = append(foreign, c.ungrantedUses()...)

	for _, key := range keys {
		ls := c.leases[key]
		sort.SliceStable(ls, func(i, j int) bool { return ls[i].start < ls[j].start })
		c.overlaps(key, ls)
	}
	for _, f := range foreign {
		c.reportForeign(f)
	}
}

// walkLease computes a grant's windows from its extends and releases, in
// invoke order. An extend counts only if the lease may still have been live
// when it was invoked; a later one cannot have extended this lease, so it
// is foreign if it succeeded.
func (c *checker) walkLease(acq *op, uses []*op, audit bool) (*lease, []foreignUse) {
	ttl := ttlNs(acq.ttlMs)
	l := &lease{acq: acq, start: acq.doneT, certEnd: plus(acq.invT, ttl)}
	hi := plus(acq.doneT, ttl) // may be live until here, before slack
	var hiBy *op
	var foreign []foreignUse
	// An extend sets the lease's remaining length (PEXPIRE), shorter or
	// longer: the last one to land decides. lastOK is the latest extend
	// known to have landed; minUnknown is the shortest length asked for by
	// an extend of unknown outcome, which may land after any later one.
	var lastOK *op
	minUnknown := forever
	for _, u := range uses {
		late := u.invT > plus(hi, c.slack)
		if late && audit && u.outcome == history.OK {
			foreign = append(foreign, foreignUse{use: u, acq: acq, hi: plus(hi, c.slack), hiBy: hiBy})
		}
		switch u.kind {
		case history.Release:
			// Once a client asks to release, it no longer claims the lock,
			// whatever the answer.
			if l.release == nil && u.invT >= acq.doneT {
				l.release = u
			}
		case history.Extend:
			if late {
				continue
			}
			d := extendTTL(u, acq)
			switch u.outcome {
			case history.OK:
				end := plus(u.invT, min(d, minUnknown))
				if lastOK == nil || u.invT >= lastOK.doneT || end < l.certEnd {
					// This extend landed after the previous one, or
					// may have (they overlap): its length counts.
					l.certEnd, l.certBy = end, u
				}
				lastOK = u
				if end := plus(u.doneT, d); end > hi {
					hi, hiBy = end, u
				}
			case history.Info:
				minUnknown = min(minUnknown, d)
				if end := plus(u.invT, d); end < l.certEnd {
					l.certEnd, l.certBy = end, u
				}
				hi, hiBy = forever, u
			}
		}
	}
	if l.release != nil && l.release.invT < l.certEnd {
		l.certEnd, l.certBy = l.release.invT, l.release
	}
	if l.certEnd != forever {
		l.certEnd -= c.slack
	}
	l.hi = plus(hi, c.slack)
	return l, foreign
}

// ungrantedUses finds extends and releases that succeeded on a token whose
// acquire failed or is missing. A token whose acquire ended as info may
// have been granted, so its uses are never foreign.
func (c *checker) ungrantedUses() []foreignUse {
	var foreign []foreignUse
	for i := range c.ops {
		u := &c.ops[i]
		if (u.kind != history.Extend && u.kind != history.Release) || u.token == "" || u.outcome != history.OK {
			continue
		}
		acq := c.acquires[tokenKey{u.key, u.token}]
		if acq == nil || acq.outcome == history.Fail {
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
			if o.acq.token != "" && o.acq.token == l.acq.token {
				continue
			}
			c.reportDoubleGrant(key, o, l)
		}
		open = append(open, l)
	}
}

func (c *checker) reportDoubleGrant(key string, a, b *lease) {
	narrative := fmt.Sprintf("%s %s acquired %s, %s; %s %s acquired %s, %s",
		secs(a.start), who(a.acq), grantee(a.acq), c.certainUntil(a),
		secs(b.start), who(b.acq), grantee(b.acq), c.certainUntil(b))
	c.report(DoubleGrant, key, positions(a.acq, b.acq, a.certBy, b.certBy), narrative)
}

func (c *checker) certainUntil(l *lease) string {
	if l.certEnd == forever {
		return "held with no expiry and no release"
	}
	s := "certainly held until " + secs(l.certEnd)
	switch {
	case l.certBy == nil:
		s += fmt.Sprintf(" (ttl %d ms from its invoke at %s", l.acq.ttlMs, secs(l.acq.invT))
	case l.certBy.kind == history.Extend:
		s += fmt.Sprintf(" (extended at %s for %d ms", secs(l.certBy.invT), extendTTL(l.certBy, l.acq)/1e6)
	default:
		s += fmt.Sprintf(" (release asked at %s", secs(l.certBy.invT))
	}
	if c.slack > 0 {
		s += fmt.Sprintf(", less %.3f s slack", float64(c.slack)/1e9)
	}
	return s + ")"
}

func (c *checker) reportForeign(f foreignUse) {
	u := f.use
	verb := "released"
	if u.kind == history.Extend {
		verb = "extended"
	}
	narrative := fmt.Sprintf("%s %s %s %s token %s (ok)", secs(u.invT), who(u), verb, u.key, u.token)
	switch {
	case f.acq == nil:
		narrative += ", but no acquire of that token appears in the history"
	case f.acq.outcome == history.Fail:
		narrative += fmt.Sprintf(", but its acquire at %s failed: the token was never granted", secs(f.acq.invT))
	case f.hiBy == nil:
		narrative += fmt.Sprintf(", but that lease had expired by %s (granted to %s at %s with ttl %d ms)",
			secs(f.hi), who(f.acq), secs(f.acq.doneT), f.acq.ttlMs)
	default:
		narrative += fmt.Sprintf(", but that lease had expired by %s (granted to %s at %s, last extended at %s for %d ms)",
			secs(f.hi), who(f.acq), secs(f.acq.doneT), secs(f.hiBy.invT), extendTTL(f.hiBy, f.acq)/1e6)
	}
	ps := positions(f.acq, f.hiBy, u)
	if other := c.holderAt(u.key, u.invT, f.acq); other != nil {
		narrative += fmt.Sprintf("; the latest grant of %s before then was %s to %s at %s",
			u.key, token(other.acq), who(other.acq), secs(other.start))
		ps = append(ps, positions(other.acq)...)
	}
	c.report(ForeignRelease, u.key, ps, narrative)
}

// holderAt is the lease of key granted last before t, other than the one of
// acquire not; nil if none.
func (c *checker) holderAt(key string, t int64, not *op) *lease {
	ls := c.leases[key]
	i := sort.Search(len(ls), func(i int) bool { return ls[i].start >= t })
	for i--; i >= 0; i-- {
		if ls[i].acq != not {
			return ls[i]
		}
	}
	return nil
}
