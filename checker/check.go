package checker

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"sort"
	"time"

	"github.com/lockharness/lockharness/history"
)

// maxFindings bounds the findings listed per anomaly so that a thoroughly
// broken run still yields a readable results.json; the counts stay exact.
const maxFindings = 100

// Check checks a history: porcupine against the lease-lock model (and the
// fenced-mutex model when grants carry fences), lease overlaps
// (double-grant), releases and extends of leases that had expired
// (foreign-release), the protected resource (stale-write, fencing,
// lost-update), liveness after healing (stuck-lock), and per-operation
// stats. The verdict is invalid when an audit counts an anomaly or
// porcupine finds the lock operations not linearizable, unknown when
// porcupine ran out of time (Options.Timeout, counted from the call) and no
// audit found anything, and valid otherwise; a history without client
// operations is no evidence either way, and unknown. A malformed history
// (see history.Validator: time going backwards, a completion without an
// invoke, a second invoke while one is outstanding, ...) is an error naming
// the event's index.
func Check(events []history.Event, opts Options) (Result, error) {
	deadline := time.Now().Add(opts.timeout())
	if err := history.Validate(events); err != nil {
		return Result{}, err
	}
	return check(history.BuildOps(events), opts, deadline), nil
}

// CheckStream checks a history as it is read (history.StreamOps), as Check
// would the decoded events, keeping only its operations and nemesis
// events: what a soak of millions of operations needs. It returns the
// decoding error, naming the line, of a malformed history, and the nemesis
// events, which are few.
func CheckStream(r io.Reader, opts Options) (Result, []history.Event, error) {
	deadline := time.Now().Add(opts.timeout())
	b := streamBuilder(opts)
	if err := history.StreamOps(r, b); err != nil {
		return Result{}, nil, err
	}
	b.Done()
	return check(b, opts, deadline), b.Nemesis(), nil
}

// streamBuilder is the builder CheckStream pairs into: on huge pages only
// offline (Options.Offline), sized by the history's size.
func streamBuilder(opts Options) *history.OpsBuilder {
	// A line is about 140 bytes, an operation two lines.
	capacity := int(opts.SizeHint/280) + 1024
	if opts.Offline {
		return history.NewOfflineOpsBuilder(capacity)
	}
	return history.NewOpsBuilder(capacity)
}

func check(b *history.OpsBuilder, opts Options, deadline time.Time) Result {
	c := newChecker(b, opts)
	// The stats take one core for a moment, beside the audits, which
	// take one: beside porcupine, which takes every core, their latencies
	// added to its peak.
	stats := make(chan struct{})
	go func() {
		defer close(stats)
		c.res.Stats = opStats(c.ops, c.huge)
	}()
	// The audits run before porcupine, not beside it: what each builds
	// (the leases; porcupine's form of a key's operations, on every core)
	// is a third of the operations' own size, and a 10M-operation history
	// peaked 0.4 GB higher with both at once and checked no sooner.
	c.auditLeases()
	c.auditPhantoms()
	c.auditResource()
	c.nemesisMargins()
	c.auditLiveness()
	// What the audits built is not needed again: a soak's is large.
	c.settleMargins()
	c.acquires, c.uses, c.leases, c.leaseOf = nil, tokenUses{}, nil, nil
	<-stats
	c.checkLinearizability(deadline)
	return c.result()
}

// checker carries one Check's state between the audits.
type checker struct {
	ops []history.Op
	// tokens bounds every op's TokenID; keyNames names each KeyID.
	tokens int
	// huge: the checker's largest arrays may be on huge pages
	// (history.NewOfflineOpsBuilder).
	huge     bool
	keyNames []string
	// end is the time of the history's last event.
	end   int64
	slack int64
	// outlive: Options.Outlive.
	outlive int64
	faults  []fault
	// nemesis are the history's nemesis events, in order.
	nemesis []history.Event
	// outages are the spans in which faults had nodes serving nobody.
	outages []history.Outage
	// horizon is when an audit of a history still being recorded was
	// taken (AuditPrefix): a lease not yet released may end there. 0 for
	// a whole history.
	horizon int64

	// acquires is each key+token's acquire attempt (by Op.TokenID), a
	// granted one if the token was (wrongly) used twice.
	acquires []*history.Op
	// uses are the extends and releases of each key+token, in invoke order.
	uses tokenUses
	// leases holds each key's grants, sorted by the start of their window.
	leases map[string][]*lease
	// leaseOf is each granted key+token's lease.
	leaseOf []*lease

	// unseen marks the key+tokens whose leases renew where the harness
	// cannot see (history.Event.UnseenRenewals); nil when none do.
	unseen []bool
	// rowOf is the database row of each write it accepted (Options.Tables).
	rowOf map[*history.Op]databaseRow
	// resourceUnjudged: a database's writes without its rows.
	resourceUnjudged bool
	opts             Options

	res              Result
	found            []found
	listed, unlisted map[string]int
	// perKey counts each anomaly per key.
	perKey map[anomalyKey]int
	// margins are each property's closest call so far (nil in an audit
	// of a history still being recorded: they are the whole run's).
	margins map[string]*margin
	// lateUses are the extends and releases sent after their lease had
	// certainly expired, for the ownership margins.
	lateUses []foreignUse
}

type anomalyKey struct{ anomaly, key string }

// found is a Finding with what it is sorted by.
type found struct {
	Finding
	at, first int64
}

func newChecker(b *history.OpsBuilder, opts Options) *checker {
	ops := b.Ops()
	c := &checker{
		ops:      ops,
		tokens:   b.Tokens(),
		huge:     b.HugePages(),
		keyNames: b.Keys(),
		end:      b.End(),
		slack:    int64(opts.Slack),
		outlive:  max(int64(opts.Outlive), 0),
		faults:   faultWindows(b.Nemesis()),
		nemesis:  b.Nemesis(),
		acquires: make([]*history.Op, b.Tokens()),
		leases:   make(map[string][]*lease),
		leaseOf:  make([]*lease, b.Tokens()),
		listed:   make(map[string]int),
		unlisted: make(map[string]int),
		perKey:   make(map[anomalyKey]int),
	}
	for _, e := range b.Nemesis() {
		c.outages = append(c.outages, e.Down...)
	}
	for i := range ops {
		if o := &ops[i]; o.F == history.Acquire && o.UnseenRenewals {
			if c.unseen == nil {
				c.unseen = make([]bool, b.Tokens())
			}
			c.unseen[o.TokenID] = true
		}
	}
	c.res.opts, c.opts = opts, opts
	c.res.Anomalies = make(map[string]int, len(AnomalyNames))
	for _, name := range AnomalyNames {
		c.res.Anomalies[name] = 0
	}
	return c
}

// report counts one anomaly and lists it, up to maxFindings per anomaly.
// ps are events of the history, in any order, repeats allowed.
func (c *checker) report(anomaly, key string, ps []ref, narrative string) {
	if c.judgesExpiry(anomaly) && c.involvesUnseen(ps) {
		if c.res.Unjudged == nil {
			c.res.Unjudged = map[string]int{}
		}
		c.res.Unjudged[anomaly]++
		return
	}
	c.res.Anomalies[anomaly]++
	c.perKey[anomalyKey{anomaly, key}]++
	c.list(anomaly, key, ps, narrative)
}

// judgesExpiry reports whether an anomaly rests on when a lease ended,
// which a renewal the harness cannot see would move.
func (c *checker) judgesExpiry(anomaly string) bool {
	switch anomaly {
	case DoubleGrant, StaleWrite, ExpiredWrite, ForeignRelease:
		return c.unseen != nil
	}
	return false
}

// involvesUnseen reports whether any of the events belongs to a lease whose
// renewals the harness cannot see.
func (c *checker) involvesUnseen(ps []ref) bool {
	for _, p := range ps {
		if c.unseen[p.op.TokenID] {
			return true
		}
	}
	return false
}

func (c *checker) list(anomaly, key string, ps []ref, narrative string) {
	if c.listed[anomaly] >= maxFindings {
		c.unlisted[anomaly]++
		return
	}
	c.listed[anomaly]++
	slices.SortFunc(ps, func(a, b ref) int { return cmp.Compare(a.pos, b.pos) })
	ps = slices.CompactFunc(ps, func(a, b ref) bool { return a.pos == b.pos })
	f := found{Finding: Finding{Anomaly: anomaly, Key: key, Events: make([]int, len(ps))}}
	for i, p := range ps {
		f.Events[i] = p.pos
	}
	if len(ps) > 0 {
		first, last := ps[0], ps[len(ps)-1]
		f.at, f.first = first.t, int64(first.pos)
		narrative += c.faultsDuring(first.t, last.t)
	}
	f.Narrative = narrative
	c.found = append(c.found, f)
}

func (c *checker) note(format string, args ...any) {
	c.res.Notes = append(c.res.Notes, fmt.Sprintf(format, args...))
}

func (c *checker) result() Result {
	r := c.res
	r.ops = c.ops
	if r.Liveness == "" {
		r.Liveness = LivenessNotChecked
	}
	sort.SliceStable(c.found, func(i, j int) bool {
		a, b := c.found[i], c.found[j]
		if a.at != b.at {
			return a.at < b.at
		}
		return a.first < b.first
	})
	r.Findings = make([]Finding, len(c.found))
	for i, f := range c.found {
		r.Findings[i] = f.Finding
	}
	for _, name := range AnomalyNames {
		if n := c.unlisted[name]; n > 0 {
			r.Notes = append(r.Notes, fmt.Sprintf("%d more %s findings are counted but not listed", n, name))
		}
	}
	r.Notes = append(r.Notes, c.disagreements()...)
	r.Margins = c.marginResults()
	r.Valid = Valid
	switch r.Linearizability.Result {
	case LinearIllegal:
		r.Valid = Invalid
		if c.unseen != nil {
			// The model takes each lease to end at its TTL; a renewal it
			// cannot see makes that a guess.
			r.Valid = Unknown
			r.Notes = append(r.Notes, "porcupine found the lock operations not linearizable, but some leases renew where the harness cannot see: not judged")
		}
	case LinearUnknown:
		r.Valid = Unknown
		r.Notes = append(r.Notes, fmt.Sprintf("the linearizability check did not finish within %s", c.res.opts.timeout()))
	}
	for _, name := range AnomalyNames {
		if n := r.Unjudged[name]; n > 0 {
			r.Notes = append(r.Notes, fmt.Sprintf("%s not judged: each involves a lease whose client renews it in the background where the harness cannot see (its worker announced renewals: unreported), so when the lease ended is unknown",
				count(int64(n), name+" finding")))
			if r.Valid == Valid {
				r.Valid = Unknown
			}
		}
	}
	if c.resourceUnjudged && r.Valid == Valid {
		r.Valid = Unknown
	}
	for _, n := range r.Anomalies {
		if n > 0 {
			r.Valid = Invalid
		}
	}
	if len(c.ops) == 0 {
		r.Valid = Unknown
		r.Notes = append(r.Notes, "the history has no client operations: it is no evidence either way")
	}
	return r
}

// ref is one event of an operation: its position in the history (its
// index, in a history that validates) and time.
type ref struct {
	pos int
	t   int64
	op  *history.Op
}

// positions lists the invoke and, if any, the completion of each op.
func positions(ops ...*history.Op) []ref {
	var ps []ref
	for _, o := range ops {
		if o == nil {
			continue
		}
		ps = append(ps, ref{int(o.Inv), o.InvT, o})
		if o.Finished() {
			ps = append(ps, ref{int(o.Done), o.DoneT, o})
		}
	}
	return ps
}

func who(o *history.Op) string {
	return fmt.Sprintf("client %d (process %s)", o.Client, o.Process)
}

// grantee names an acquire's key, token and fence as narratives do.
func grantee(o *history.Op) string { return o.Key + " " + token(o) }

func token(o *history.Op) string {
	s := "token " + o.Token
	if o.Token == "" {
		s = "(no token)"
	}
	if o.Fence != 0 {
		s += fmt.Sprintf(" (fence %d)", o.Fence)
	}
	return s
}

// count writes n and noun, plural unless n is 1.
func count(n int64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func value(v *int64) string {
	if v == nil {
		return "?"
	}
	return fmt.Sprint(*v)
}
