package reports

import (
	"fmt"
	"image/color"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/history"
)

// Write statuses on the timeline.
const (
	WriteAccepted = "accepted"
	WriteRejected = "rejected" // fencing refused it
	WriteStale    = "stale"    // accepted, and listed as stale by a finding
	WriteRefused  = "refused"  // refused though its writer was the one legitimate holder (refused-write)
	WriteUnknown  = "unknown"  // info: it may or may not have landed
)

// Why a lease bar ends.
const (
	EndRelease    = "release"        // the client asked to release
	EndReplaced   = "replaced"       // the client's process was retired after an info
	EndNextCycle  = "next-acquire"   // the client moved on without releasing
	EndHistoryEnd = "end-of-history" // nothing ended it
)

// Timeline is the data timeline.png draws: who held which lock when, as the
// clients believed, with the faults and anomalies laid over it.
type Timeline struct {
	Lanes    []Lane
	Leases   []Lease
	Attempts []Attempt
	Writes   []WriteMark
	Bands    []Band
	RedSpans []RedSpan
	// End is the time of the last event; Start is 0, or where a window of
	// the run begins (Window).
	Start, End time.Duration
	// whole are the whole run's bands, for a window: its faults keep the
	// colours timeline.png gives them.
	whole []Band
}

// faultColors gives each fault the colour it has on the whole run's
// timeline.
func (t Timeline) faultColors() map[string]color.NRGBA {
	if t.whole != nil {
		return faultColors(t.whole)
	}
	return faultColors(t.Bands)
}

// Window is the timeline of [from, to] only: what overlaps it, cut to it,
// as `report --png` exports the moments around an anomaly.
func (t Timeline) Window(from, to time.Duration) Timeline {
	from, to = max(from, 0), min(to, t.End)
	w := Timeline{Lanes: t.Lanes, Start: from, End: to, whole: t.Bands}
	w.Leases = within(t.Leases, from, to, func(l *Lease) (*time.Duration, *time.Duration) { return &l.Start, &l.End })
	w.Attempts = within(t.Attempts, from, to, func(a *Attempt) (*time.Duration, *time.Duration) { return &a.Start, &a.End })
	w.Writes = within(t.Writes, from, to, func(m *WriteMark) (*time.Duration, *time.Duration) { return &m.At, &m.At })
	w.Bands = within(t.Bands, from, to, func(b *Band) (*time.Duration, *time.Duration) { return &b.Start, &b.End })
	w.RedSpans = within(t.RedSpans, from, to, func(r *RedSpan) (*time.Duration, *time.Duration) { return &r.Start, &r.End })
	return w
}

// within keeps the items whose span overlaps [from, to], each cut to it.
func within[T any](items []T, from, to time.Duration, span func(*T) (start, end *time.Duration)) []T {
	var out []T
	for _, it := range items {
		s, e := span(&it)
		if *e >= from && *s <= to {
			*s, *e = max(*s, from), min(*e, to)
			out = append(out, it)
		}
	}
	return out
}

// Lane is one client slot. A slot survives worker replacement, so a lane is
// a client, not a process.
type Lane struct {
	Client int
	Label  string
	// Final marks the closing liveness check's client.
	Final bool
}

// Lease is one granted acquire, from its completion until the client
// stopped claiming it.
type Lease struct {
	Client     int
	Process    history.Process
	Key, Token string
	Fence      int64
	Start, End time.Duration
	EndBy      string
	// ValidUntil is when the client's own validity ran out (the acquire's
	// or the furthest successful extend's invoke plus its validity), so a
	// reader can compare belief with the TTL; 0 if the history gives none.
	ValidUntil time.Duration
	// Anomalies names every anomaly whose finding involves this grant.
	Anomalies []string
	// Nodes are where the harness found the grant just after its client
	// was told: the nodes holding its token (history.GrantSeen). Seen says
	// whether it looked; a topology of one node is not looked at, nor a
	// grant that came faster than the probes.
	Nodes []string
	Seen  bool
	// Primary is the one node holding the grant that answered as a
	// primary, the node that granted it, when exactly one did (a
	// replicated topology's; a Redlock grant lives on several primaries).
	Primary string
	// Lacking are the nodes that certainly did not hold the grant when it
	// was probed (absent, or another value); a node that did not answer,
	// or does not serve the key, is in neither list. ProbedWithin bounds
	// how long after the grant the probe ran.
	Lacking      []string
	ProbedWithin time.Duration
	// Event is the history index of the acquire's completion.
	Event int
}

// Attempt is an acquire that granted nothing certain: refused (Outcome
// fail), from its invoke to its answer, or of unknown outcome (info), from
// its invoke for as long as a lease it may have been granted could last.
// The timeline draws them faintly, so that a reader sees where a lease may
// hide.
type Attempt struct {
	Client     int
	Outcome    string
	Start, End time.Duration
	Event      int
}

// WriteMark is one protected write at the time the resource answered.
type WriteMark struct {
	Client  int
	Process history.Process
	At      time.Duration
	Status  string
	Fence   int64
	Token   string
	Event   int
}

// Band is one fault window.
type Band struct {
	// Target is the window's subject (history.Facts.Subject).
	Fault, Target string
	// Detail is what the nemesis said at the start and, after a semicolon,
	// at the end: words for a reader, never read back.
	Detail string
	// Facts are the start's (an instant's) facts, Ended the end's.
	Facts, Ended *history.Facts
	Start, End   time.Duration
	// Open marks a fault that never ended in the history; End is then the
	// end of the history.
	Open bool
	// StartEvent and EndEvent are history indices; EndEvent is -1 if Open.
	StartEvent, EndEvent int
	// Observed marks what the harness saw happen rather than caused (a
	// primary switch, a shard's slots taken over): an instant, drawn as a
	// line, with Start == End and StartEvent == EndEvent.
	Observed bool
}

// Label names the fault and its target as bands and tables show them.
func (b Band) Label() string {
	if b.Target == "" {
		return b.Fault
	}
	return b.Fault + " " + b.Target
}

// RedSpan is where an anomaly shows on the timeline: once in the row of its
// anomaly kind, spanning all of its finding's events, and once per client
// lane involved, spanning the part where mutual exclusion was broken.
type RedSpan struct {
	// Finding is the finding's position in results.json, from 0; Label
	// ("#3") is how the page refers to it.
	Finding int
	Anomaly string
	Label   string
	// Client is the lane, or -1 for the anomaly's own row.
	Client     int
	Start, End time.Duration
}

// TimelineData builds the timeline from a history and its results. It never
// fails: a malformed history (which the checker reports) still draws what
// can be paired.
func TimelineData(events []history.Event, res Results) Timeline {
	return timelineOf(analyseWith(events, res.check.Ops()), res)
}

func timelineOf(a *analysis, res Results) Timeline {
	t := Timeline{End: a.end, Bands: a.bands}

	clients := map[int]bool{}
	final := map[int]bool{}
	for _, o := range a.ops {
		clients[o.Client] = true
		if o.Final {
			final[o.Client] = true
		}
	}
	for c := range clients {
		l := Lane{Client: c, Label: fmt.Sprintf("client %d", c), Final: final[c]}
		if l.Final {
			// The client of the liveness check after the heal: its lane
			// says so, and the legend what it is.
			l.Label = fmt.Sprintf("final check (client %d)", c)
		}
		t.Lanes = append(t.Lanes, l)
	}
	sort.Slice(t.Lanes, func(i, j int) bool { return t.Lanes[i].Client < t.Lanes[j].Client })

	involved := map[int][]string{} // op position -> anomalies
	stale := map[int]bool{}        // op position of stale writes
	refused := map[int]bool{}      // op position of wrongly refused writes
	for fi, f := range res.Checker.Findings {
		ops := a.findingOps(f)
		for _, o := range ops {
			if !slices.Contains(involved[o], f.Anomaly) {
				involved[o] = append(involved[o], f.Anomaly)
			}
		}
		if f.Anomaly == checker.StaleWrite {
			if w := a.latest(ops, history.Write); w >= 0 {
				stale[w] = true
			}
		}
		if f.Anomaly == checker.RefusedWrite {
			if w := a.refusedWrite(ops); w >= 0 {
				refused[w] = true
			}
		}
		t.RedSpans = append(t.RedSpans, a.redSpans(fi, f, ops)...)
	}

	for _, l := range a.leases {
		lease := l.Lease
		lease.Anomalies = involved[l.op]
		t.Leases = append(t.Leases, lease)
	}
	for _, o := range a.ops {
		if o.F != history.Acquire || o.Type == history.OK || o.Final {
			continue
		}
		at := Attempt{Client: o.Client, Outcome: o.Type, Start: o.InvokedAt(), End: o.DoneAt(), Event: a.events.index(int(o.Inv))}
		if o.Type == history.Info {
			at.End = max(at.End, o.InvokedAt()+time.Duration(o.TTLMs)*time.Millisecond)
		}
		at.End = min(max(at.End, at.Start), a.end)
		t.Attempts = append(t.Attempts, at)
	}
	for i, o := range a.ops {
		if o.F != history.Write || o.Done < 0 {
			continue
		}
		w := WriteMark{Client: o.Client, Process: o.Process, At: o.DoneAt(), Fence: o.Fence, Token: o.Token,
			Event: a.events.index(int(o.Done))}
		switch {
		case stale[i]:
			w.Status = WriteStale
		case refused[i]:
			w.Status = WriteRefused
		case o.Type == history.OK:
			w.Status = WriteAccepted
		case o.Type == history.Fail:
			w.Status = WriteRejected
		default:
			w.Status = WriteUnknown
		}
		t.Writes = append(t.Writes, w)
	}
	return t
}

// redSpans places one finding on the timeline.
func (a *analysis) redSpans(fi int, f checker.Finding, ops []int) []RedSpan {
	from, to, ok := a.span(f)
	if !ok {
		return nil
	}
	label := fmt.Sprintf("#%d", fi+1)
	spans := []RedSpan{{Finding: fi, Anomaly: f.Anomaly, Label: label, Client: -1, Start: from, End: to}}
	lane := func(client int, s, e time.Duration) {
		if e < s {
			e = s
		}
		spans = append(spans, RedSpan{Finding: fi, Anomaly: f.Anomaly, Label: label, Client: client, Start: s, End: e})
	}
	switch f.Anomaly {
	case checker.DoubleGrant:
		// The overlap of the two leases as their clients believed them:
		// the time both thought they held the lock.
		var ls []*leaseInfo
		for _, o := range ops {
			if l := a.leaseOf[o]; l != nil {
				ls = append(ls, l)
			}
		}
		if len(ls) < 2 {
			return spans
		}
		s, e := ls[0].Start, ls[0].End
		for _, l := range ls[1:] {
			s, e = max(s, l.Start), min(e, l.End)
		}
		for _, l := range ls {
			lane(l.Client, s, e)
		}
	case checker.StaleWrite:
		// From the newer holder's grant to the stale write landing: the
		// old holder wrote into a newer holder's lease.
		w, g := a.latest(ops, history.Write), a.latest(ops, history.Acquire)
		if w < 0 || g < 0 {
			return spans
		}
		s, e := a.ops[g].DoneAt(), a.ops[w].DoneAt()
		lane(a.ops[w].Client, s, e)
		if a.ops[g].Client != a.ops[w].Client {
			lane(a.ops[g].Client, s, e)
		}
	case checker.RefusedWrite:
		// The write from its invoke to its refusal: the lease was
		// certainly live, and nobody else's, all along.
		if w := a.refusedWrite(ops); w >= 0 {
			lane(a.ops[w].Client, a.ops[w].InvokedAt(), a.ops[w].DoneAt())
		}
	case checker.PhantomGrant:
		// The acquire, sent and answered while no node served.
		for _, o := range ops {
			if a.ops[o].F == history.Acquire {
				lane(a.ops[o].Client, a.ops[o].InvokedAt(), a.ops[o].DoneAt())
			}
		}
	case checker.ForeignRelease:
		for _, o := range ops {
			if k := a.ops[o].F; k == history.Release || k == history.Extend {
				lane(a.ops[o].Client, a.ops[o].InvokedAt(), max(a.ops[o].DoneAt(), a.ops[o].InvokedAt()))
			}
		}
	}
	return spans
}

// refusedWrite is the refused write among a refused-write finding's ops
// (the others are grants and the writes the resource held), or -1.
func (a *analysis) refusedWrite(ops []int) int {
	for _, o := range ops {
		if a.ops[o].F == history.Write && a.ops[o].Type == history.Fail {
			return o
		}
	}
	return -1
}

// latest is the op among ops of the given kind that completed last, or -1.
func (a *analysis) latest(ops []int, kind string) int {
	best := -1
	for _, o := range ops {
		if a.ops[o].F == kind && a.ops[o].Done >= 0 && (best < 0 || a.ops[o].DoneAt() > a.ops[best].DoneAt()) {
			best = o
		}
	}
	return best
}

// Answers: how an operation came back, as the latency and rate plots
// tell them apart. A busy answer is ordinary contention, the lock's own
// "held by another", not an error; fail is every other failure (an
// error, a rejection, "not held"); info a timeout or a lost answer.
const (
	AnswerOK   = history.OK
	AnswerBusy = "busy"
	AnswerFail = history.Fail
	AnswerInfo = history.Info
)

// answers in the order plots list them.
var answers = []string{AnswerOK, AnswerBusy, AnswerFail, AnswerInfo}

// answer is how o came back (see AnswerBusy).
func answer(o *opInfo) string {
	if o.Type == history.Fail && o.F == history.Acquire && o.AboutTheLock() {
		return AnswerBusy
	}
	return o.Type
}

// LatencyPoint is one finished operation.
type LatencyPoint struct {
	Client  int
	At      time.Duration // invoke
	Latency time.Duration
	Kind    string
	// Outcome is its answer: AnswerOK, AnswerBusy, AnswerFail, AnswerInfo.
	Outcome string
}

// Latency is the data latency.png draws.
type Latency struct {
	Points []LatencyPoint
	Bands  []Band
	End    time.Duration
}

// LatencyData lists every finished operation's latency. Operations that
// never completed have no latency and are left out.
func LatencyData(events []history.Event) Latency { return latencyOf(analyse(events)) }

func latencyOf(a *analysis) Latency {
	l := Latency{Bands: a.bands, End: a.end}
	for i := range a.ops {
		o := &a.ops[i]
		if o.Done < 0 {
			continue
		}
		l.Points = append(l.Points, LatencyPoint{Client: o.Client, At: o.InvokedAt(), Latency: o.DoneAt() - o.InvokedAt(),
			Kind: o.F, Outcome: answer(o)})
	}
	return l
}

// Rate is the data rate.png draws: completions per bin, by operation and
// answer.
type Rate struct {
	Bin time.Duration
	// Series names each line, "acquire ok", "acquire busy", ..., in the
	// order plots list them; Counts holds each one's completions per bin.
	Series []RateSeries
	Bands  []Band
	End    time.Duration
}

// RateSeries is one operation kind's completions with one answer.
type RateSeries struct {
	Kind, Answer string
	Counts       []int
}

// Name is the series as the legend shows it.
func (s RateSeries) Name() string { return s.Kind + " " + s.Answer }

// rateBins is about how many bins a rate plot has: enough to show a
// short fault's dip, few enough that each bin holds a fair count.
const rateBins = 60

var binSizes = []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 250 * time.Millisecond,
	500 * time.Millisecond, time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second,
	30 * time.Second, time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute}

// RateData counts completions by outcome in bins of a round length chosen
// for the run's length.
func RateData(events []history.Event) Rate { return rateOf(analyse(events)) }

func rateOf(a *analysis) Rate {
	bin := binSizes[len(binSizes)-1]
	for _, b := range binSizes {
		if a.end/b <= rateBins {
			bin = b
			break
		}
	}
	// Longer than the table foresees: whole multiples of its longest bin.
	if a.end/bin > rateBins {
		bin *= a.end/(bin*rateBins) + 1
	}
	nbins := int(a.end/bin) + 1
	r := Rate{Bin: bin, Bands: a.bands, End: a.end}
	type series struct{ kind, answer string }
	at := map[series]int{}
	for i := range a.ops {
		o := &a.ops[i]
		if o.Done < 0 {
			continue
		}
		k := series{o.F, answer(o)}
		j, ok := at[k]
		if !ok {
			j = len(r.Series)
			at[k] = j
			r.Series = append(r.Series, RateSeries{Kind: k.kind, Answer: k.answer, Counts: make([]int, nbins)})
		}
		r.Series[j].Counts[int(o.DoneAt()/bin)]++
	}
	rank := func(list []string, v string) int {
		if i := slices.Index(list, v); i >= 0 {
			return i
		}
		return len(list)
	}
	slices.SortFunc(r.Series, func(x, y RateSeries) int {
		if c := rank(kinds, x.Kind) - rank(kinds, y.Kind); c != 0 {
			return c
		}
		if c := strings.Compare(x.Kind, y.Kind); c != 0 {
			return c
		}
		return rank(answers, x.Answer) - rank(answers, y.Answer)
	})
	return r
}

// PerSecond is bin i's rate for series j. The last bin is cut short by the
// end of the history and is divided by what it covers.
func (r Rate) PerSecond(j, i int) float64 {
	width := r.Bin
	if end := time.Duration(i+1) * r.Bin; end > r.End {
		width = max(r.End-time.Duration(i)*r.Bin, time.Millisecond)
	}
	return float64(r.Series[j].Counts[i]) / width.Seconds()
}

// analysis is one pass over a history that the plots and stories share:
// operations paired, leases as the clients believed them, fault windows.
type analysis struct {
	events eventLog
	ops    []opInfo
	// opAt is the op each position in the history belongs to, -1 for
	// none: a slice, not a map, for a soak has millions of positions.
	opAt    []int32
	leases  []*leaseInfo
	leaseOf map[int]*leaseInfo // acquire op -> its lease
	// seen is where each grant was found just after it (history.GrantSeen).
	seen  map[grantKey]*history.Event
	bands []Band
	end   time.Duration
}

// opInfo is one client operation (see history.Op).
type opInfo = history.Op

type grantKey struct{ key, token string }

type leaseInfo struct {
	Lease
	op int
}

func analyse(events []history.Event) *analysis { return analyseWith(events, nil) }

// analyseWith is analyse with the events' operations already paired
// (history.Ops of the same events), nil to pair them here. Operations
// that do not fit the events (checked from another reading of the
// history) are paired again too.
func analyseWith(events []history.Event, ops []history.Op) *analysis {
	l := wholeLog(events)
	if !l.fits(ops) {
		ops = nil
	}
	if ops == nil {
		// A malformed history (which the checker reports) still draws
		// what could be paired.
		ops, _ = history.Ops(events)
	}
	return analyseLog(l, ops)
}

// analyseLog analyses a history from its log and its operations, which
// must have been paired from it.
func analyseLog(l eventLog, ops []history.Op) *analysis {
	a := &analysis{events: l, ops: ops, opAt: make([]int32, l.n), end: l.end,
		leaseOf: map[int]*leaseInfo{}, seen: map[grantKey]*history.Event{}}
	found := false // whether any probe found a grant's token at all
	for i := range l.kept {
		e := &l.kept[i]
		if !(e.IsNemesis() && e.F == history.GrantSeen) {
			continue
		}
		found = found || len(e.Facts.Holders()) > 0
		if k := (grantKey{e.Key, e.Token}); a.seen[k] == nil {
			a.seen[k] = e
		}
	}
	if !found {
		// A lock that keeps a value of its own under the key, not the
		// harness's token (rueidislock, a worker's own lock), is never
		// found: its probes say nothing of where its grants lived.
		clear(a.seen)
	}
	for p := range a.opAt {
		a.opAt[p] = -1
	}
	for j := range a.ops {
		a.opAt[a.ops[j].Inv] = int32(j)
		if a.ops[j].Finished() {
			a.opAt[a.ops[j].Done] = int32(j)
		}
	}
	a.bands = faultBands(l.kept, a.end)
	a.buildLeases()
	return a
}

// opOf is the op the event at position p belongs to.
func (a *analysis) opOf(p int) (int, bool) {
	if p < 0 || p >= len(a.opAt) || a.opAt[p] < 0 {
		return 0, false
	}
	return int(a.opAt[p]), true
}

// buildLeases draws each grant as its client believed it: from the
// acquire's completion until the client asked to release it, its process
// was retired, it started another acquire, or the history ended.
func (a *analysis) buildLeases() {
	byToken := opsByToken(a.ops)
	byClient := map[int][]int{} // acquires by client, in invoke order
	for i, o := range a.ops {
		if o.F == history.Acquire {
			byClient[o.Client] = append(byClient[o.Client], i)
		}
	}
	for i, o := range a.ops {
		if o.F != history.Acquire || o.Type != history.OK {
			continue
		}
		l := &leaseInfo{op: i, Lease: Lease{Client: o.Client, Process: o.Process, Key: o.Key, Token: o.Token,
			Fence: o.Fence, Start: o.DoneAt(), End: a.end, EndBy: EndHistoryEnd, Event: a.events.index(int(o.Done))}}
		end := func(t time.Duration, by string) {
			if t >= l.Start && t < l.End {
				l.End, l.EndBy = t, by
			}
		}
		l.ValidUntil = validity(o)
		if seen := a.seen[grantKey{o.Key, o.Token}]; seen != nil && o.Token != "" {
			l.Seen = true
			l.ProbedWithin = seen.At() - l.Start
			l.Nodes = seen.Facts.Holders()
			var primaries []string
			for _, c := range seen.Facts.Answers() {
				switch {
				case c.Holds == history.HoldsToken && c.Role == "primary":
					primaries = append(primaries, c.Node)
				case c.Lacks():
					l.Lacking = append(l.Lacking, c.Node)
				}
			}
			if len(primaries) == 1 {
				l.Primary = primaries[0]
			}
		}
		if o.Token != "" {
			for _, u := range byToken.of(o.TokenID) {
				uo := a.ops[u]
				switch {
				case uo.F == history.Release:
					end(uo.InvokedAt(), EndRelease)
				case uo.F == history.Extend && uo.Type == history.OK && uo.InvokedAt() >= o.DoneAt():
					l.ValidUntil = max(l.ValidUntil, validity(uo))
				}
				if uo.Process == o.Process && uo.Type == history.Info && uo.Done >= 0 {
					end(uo.DoneAt(), EndReplaced)
				}
			}
		}
		// The client's acquires are in invoke order: start at the first
		// invoked after this grant, not at its first (a soak's client has
		// tens of thousands).
		next := byClient[o.Client]
		from := sort.Search(len(next), func(j int) bool { return a.ops[next[j]].InvokedAt() > o.DoneAt() })
		for _, n := range next[from:] {
			if no := a.ops[n]; no.Token != o.Token {
				end(no.InvokedAt(), EndNextCycle)
				break
			}
		}
		if l.Seen && l.Start+l.ProbedWithin > l.End {
			// Probed after its client let it go: what the nodes held
			// then says nothing of this grant.
			l.Seen, l.Nodes, l.Primary, l.Lacking = false, nil, "", nil
		}
		a.leases = append(a.leases, l)
		a.leaseOf[i] = l
	}
}

// tokenOps are the operations of each (key, token) pair, in invoke order,
// by history.Op.TokenID: two arrays, not a map of slices, for a soak has
// hundreds of thousands of tokens.
type tokenOps struct {
	// ops[from[t]:from[t+1]] are the operations of pair t.
	from, ops []int32
}

func opsByToken(ops []opInfo) tokenOps {
	var n int32
	for i := range ops {
		n = max(n, ops[i].TokenID+1)
	}
	t := tokenOps{from: make([]int32, n+1), ops: make([]int32, len(ops))}
	for i := range ops {
		t.from[ops[i].TokenID+1]++
	}
	for i := int32(1); i <= n; i++ {
		t.from[i] += t.from[i-1]
	}
	next := slices.Clone(t.from[:n])
	for i := range ops {
		id := ops[i].TokenID
		t.ops[next[id]] = int32(i)
		next[id]++
	}
	return t
}

// of is pair id's operations.
func (t tokenOps) of(id int32) []int32 {
	if id < 0 || int(id)+1 >= len(t.from) {
		return nil
	}
	return t.ops[t.from[id]:t.from[id+1]]
}

// validity is when an ok acquire or extend's lease runs out by the client's
// own account, or 0 if it gave none.
func validity(o opInfo) time.Duration {
	ms := o.ValidMs
	if ms == 0 {
		ms = o.TTLMs
	}
	if ms == 0 {
		return 0
	}
	return o.InvokedAt() + time.Duration(ms)*time.Millisecond
}

// faultBands turns the history's fault windows into bands, in order of
// their start (an open one reaches end), and what the harness observed into
// instants among them.
func faultBands(events []history.Event, end time.Duration) []Band {
	var bands []Band
	for _, w := range history.FaultWindows(events) {
		e := &events[w.Start]
		b := Band{Fault: e.F, Target: e.Subject(), Detail: e.Detail, Facts: e.Facts, Start: e.At(), End: end, Open: true, StartEvent: e.Index, EndEvent: -1}
		if w.End >= 0 {
			done := &events[w.End]
			b.End, b.Open, b.EndEvent, b.Ended = done.At(), false, done.Index, done.Facts
			if done.Detail != "" {
				b.Detail += "; " + done.Detail
			}
		}
		bands = append(bands, b)
	}
	for i := range events {
		// Where each grant was found is told with its lease, not drawn as
		// an instant of its own: there is one per grant.
		if e := &events[i]; e.IsNemesis() && e.Phase == history.Instant && e.F != history.GrantSeen {
			bands = append(bands, Band{Fault: e.F, Target: e.Subject(), Detail: e.Detail, Facts: e.Facts, Start: e.At(), End: e.At(),
				StartEvent: e.Index, EndEvent: e.Index, Observed: true})
		}
	}
	sort.SliceStable(bands, func(i, j int) bool { return bands[i].Start < bands[j].Start })
	return bands
}

// findingOps lists, in invoke order, the ops a finding's events belong to.
func (a *analysis) findingOps(f checker.Finding) []int {
	seen := map[int]bool{}
	var ops []int
	for _, idx := range f.Events {
		p, ok := a.events.position(idx)
		if !ok {
			continue
		}
		if o, ok := a.opOf(p); ok && !seen[o] {
			seen[o] = true
			ops = append(ops, o)
		}
	}
	sort.Ints(ops)
	return ops
}

// span is the time from a finding's first event to its last.
func (a *analysis) span(f checker.Finding) (from, to time.Duration, ok bool) {
	for _, idx := range f.Events {
		p, found := a.events.position(idx)
		e := a.events.at(p)
		if !found || e == nil {
			continue
		}
		t := e.At()
		if !ok || t < from {
			from = t
		}
		if !ok || t > to {
			to = t
		}
		ok = true
	}
	return from, to, ok
}
