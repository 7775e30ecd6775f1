package search

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"math/rand"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/runner"
	"github.com/lockharness/lockharness/scenario"
)

// Exploring searches a Space for a schedule that breaks the lock, as a
// coverage-guided fuzzer searches inputs: a corpus of schedules, each kept
// for the features it reached first (Features) and weighed by how rare
// they still are and how close its margins came; the next schedule is a
// mutation of one drawn by that weight, or now and then a fresh one.
// Random search draws every schedule fresh from the same space: the
// baseline guided search is measured against.

// Strategies.
const (
	Guided = "guided"
	Random = "random"
)

// Strategies lists the strategies.
var Strategies = []string{Guided, Random}

// ExploreOptions carry out a search.
type ExploreOptions struct {
	Space    Space
	Strategy string
	// Budget bounds the search: no run starts that the last ones' length
	// says would end past it. Once a wanted anomaly is found, the search
	// ends Reserve sooner, which is left for what follows it (shrinking).
	Budget, Reserve time.Duration
	Seed            int64
	// UntilFirst ends the search at the first anomaly of a wanted kind.
	UntilFirst bool
	// Want are the anomaly kinds the search is after (none: any): others
	// are recorded but neither end the search nor weigh a schedule.
	Want []string
	// Parallel is how many runs go at once (at least 1).
	Parallel int
	// Try runs one scenario.
	Try func(ctx context.Context, spec scenario.Spec) (runner.Outcome, error)
	// Log reports each run.
	Log func(format string, args ...any)
}

// ExploreRun is one run of a search.
type ExploreRun struct {
	N       int     `json:"n"`
	Seconds float64 `json:"seconds"` // since the search began, at its end
	Genome  Genome  `json:"genome"`
	// From is the corpus entry (its run's N) it was mutated from, 0 for a
	// fresh draw, with the mutations made.
	From      int                `json:"from,omitempty"`
	Mutations []string           `json:"mutations,omitempty"`
	Dir       string             `json:"dir,omitempty"`
	Found     string             `json:"found"`
	Anomalies []string           `json:"anomalies,omitempty"`
	Margins   map[string]float64 `json:"margins,omitempty"`
	// New counts the features it reached first; Features is how many the
	// search had reached by its end.
	New      int    `json:"new"`
	Features int    `json:"features"`
	Error    string `json:"error,omitempty"`
	// Reached are the features the run reached.
	Reached []string `json:"reached,omitempty"`
	// Search is, in a merge, the search the run was part of, and
	// SearchRun its number there.
	Search    string `json:"search,omitempty"`
	SearchRun int    `json:"search_run,omitempty"`
}

// ExploreFinding is the first run that found an anomaly kind.
type ExploreFinding struct {
	Anomaly string  `json:"anomaly"`
	Run     int     `json:"run"`
	Seconds float64 `json:"seconds"`
	Dir     string  `json:"dir"`
	Genome  Genome  `json:"genome"`
	Wanted  bool    `json:"wanted"`
	// Minimal is the scenario file its shrink wrote, when shrunk.
	Minimal string `json:"minimal,omitempty"`
	// Shrink says how the shrink went, in a line.
	Shrink string `json:"shrink,omitempty"`
}

// Explored is a finished search.
type Explored struct {
	Lock     string   `json:"lock"`
	Topology string   `json:"topology"`
	Workload string   `json:"workload"`
	Want     []string `json:"want,omitempty"`
	Strategy string   `json:"strategy"`
	Seed     int64    `json:"seed"`
	// Shard is "i/n" for one shard of a campaign (explore --shard).
	Shard    string           `json:"shard,omitempty"`
	Budget   string           `json:"budget"`
	Faults   []string         `json:"faults"`
	Seconds  float64          `json:"seconds"`
	Runs     []ExploreRun     `json:"runs"`
	Findings []ExploreFinding `json:"findings"`
	// Features is how many the search reached; Corpus how many schedules
	// it kept.
	Features int `json:"features"`
	Corpus   int `json:"corpus"`
	// Reached counts the runs that reached each feature; Kept is the
	// corpus. A merge joins both.
	Reached map[string]int `json:"reached"`
	Kept    []Kept         `json:"kept"`
	// Sources are the searches a merge joined.
	Sources []ExploreSource `json:"sources,omitempty"`
	// Closest is each property's smallest margin over the search, with
	// the run that set it.
	Closest []ClosestCall `json:"closest"`
	// Interrupted: stopped from outside before its budget.
	Interrupted bool `json:"interrupted,omitempty"`
}

// ClosestCall is a property's closest call over a search.
type ClosestCall struct {
	checker.Margin
	Run int    `json:"run"`
	Dir string `json:"dir"`
}

// FirstWanted is the first finding of a wanted kind, nil if none.
func (e Explored) FirstWanted() *ExploreFinding {
	for i := range e.Findings {
		if e.Findings[i].Wanted {
			return &e.Findings[i]
		}
	}
	return nil
}

// Kept is a schedule the corpus keeps, with what its run reached.
type Kept struct {
	Run      int                `json:"run"`
	Search   string             `json:"search,omitempty"`
	Genome   Genome             `json:"genome"`
	Swarm    Swarm              `json:"swarm"`
	Features []string           `json:"features"`
	Margins  map[string]float64 `json:"margins,omitempty"`
	Wanted   bool               `json:"wanted,omitempty"` // it found a wanted anomaly
	// Unproven: porcupine found the lock's operations not linearizable,
	// but no audit could name the anomaly: as near as a run comes to a
	// double grant without proving one.
	Unproven bool `json:"unproven,omitempty"`
}

// entry is a corpus entry as the search weighs it.
type entry struct {
	Kept
	picks int
}

// explorer is a search under way; mu guards all of it.
type explorer struct {
	opt   ExploreOptions
	start time.Time
	mu    sync.Mutex
	rng   *rand.Rand
	hits  map[string]int
	ran   map[string]bool
	// queue holds the mutants still to run of the entry last picked.
	queue   []pending
	corpus  []*entry
	out     Explored
	started int
	// lengths are the finished runs' lengths, for the budget.
	lengths []time.Duration
	// seen are the margins of each property the runs measured; credit
	// is, for each arm of the space (Space.Arms), the runs that drew it
	// and how close they came, and credited those runs' count and
	// closeness in all.
	seen     map[string][]float64
	credit   map[string]*credit
	credited credit
	// repeats are near misses to run again as they were.
	repeats []pending
}

// credit is what the runs that drew an arm came to.
type credit struct {
	runs      int
	closeness float64
}

type pending struct {
	genome Genome
	swarm  Swarm
	from   int
	did    []string
}

// warmup is how many fresh schedules a guided search runs before it
// learns from them; corpusCap bounds its corpus.
const (
	warmup    = 3
	corpusCap = 128
)

// freshChance is how often guided search draws a fresh schedule (by the
// arms' weights) rather than mutating one it kept: three in four runs just
// after the warmup, when its corpus says little and the arms not yet drawn
// weigh the most, falling by a twentieth a run to one in four.
func freshChance(started int) float64 {
	return max(0.25, 0.75-0.05*float64(started-warmup-1))
}

// Explore searches until the budget is spent, or, UntilFirst, until a
// wanted anomaly is found; ctx ending stops it with what it has.
func Explore(ctx context.Context, opt ExploreOptions) Explored {
	e := &explorer{opt: opt, start: time.Now(), rng: rand.New(rand.NewSource(opt.Seed)), hits: map[string]int{}, ran: map[string]bool{},
		seen: map[string][]float64{}, credit: map[string]*credit{}}
	base := opt.Space.Base
	e.out = Explored{Lock: base.Lock, Topology: base.Topology, Workload: base.Workload, Want: opt.Want,
		Strategy: opt.Strategy, Seed: opt.Seed, Budget: opt.Budget.String(), Faults: opt.Space.FaultNames()}
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	for range max(opt.Parallel, 1) {
		wg.Go(func() {
			for {
				p, n, ok := e.next()
				if !ok || ctx.Err() != nil {
					return
				}
				began := time.Now()
				spec := opt.Space.Spec(p.genome, opt.Seed*1000+int64(n))
				spec.Name = fmt.Sprintf("explore-%s-%s", base.Lock, base.Topology)
				out, err := opt.Try(ctx, spec)
				if ctx.Err() != nil && (err != nil || out.Results.Interrupted) {
					return // stopped from outside, or by another run's find
				}
				if e.observe(n, p, out, err, time.Since(began)) && opt.UntilFirst {
					stop()
				}
			}
		})
	}
	wg.Wait()
	e.mu.Lock()
	defer e.mu.Unlock()
	e.out.Seconds = time.Since(e.start).Seconds()
	e.out.Features, e.out.Corpus, e.out.Reached = len(e.hits), len(e.corpus), e.hits
	for _, ent := range e.corpus {
		e.out.Kept = append(e.out.Kept, ent.Kept)
	}
	slices.SortFunc(e.out.Kept, func(a, b Kept) int { return cmp.Compare(a.Run, b.Run) })
	slices.SortFunc(e.out.Runs, func(a, b ExploreRun) int { return cmp.Compare(a.N, b.N) })
	return e.out
}

// next is the schedule to run next and its number, or false when the
// budget is spent.
func (e *explorer) next() (pending, int, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.opt.UntilFirst && e.out.FirstWanted() != nil {
		return pending{}, 0, false
	}
	elapsed, budget := time.Since(e.start), e.opt.Budget
	if e.out.FirstWanted() != nil {
		budget -= e.opt.Reserve
	}
	if elapsed >= budget {
		return pending{}, 0, false
	}
	if len(e.lengths) > 0 {
		var sum time.Duration
		for _, l := range e.lengths {
			sum += l
		}
		if elapsed+sum/time.Duration(len(e.lengths)) > budget {
			return pending{}, 0, false
		}
	}
	e.started++
	if len(e.repeats) > 0 {
		p := e.repeats[0]
		e.repeats = e.repeats[1:]
		return p, e.started, true
	}
	for range 20 {
		p := e.draw()
		if !e.ran[p.genome.key()] {
			e.ran[p.genome.key()] = true
			return p, e.started, true
		}
	}
	for range 100 {
		g, sw := e.opt.Space.Fresh(e.rng)
		if !e.ran[g.key()] {
			e.ran[g.key()] = true
			return pending{genome: g, swarm: sw}, e.started, true
		}
	}
	// A space this small has been run through: run a fresh one again.
	g, sw := e.opt.Space.Fresh(e.rng)
	return pending{genome: g, swarm: sw}, e.started, true
}

// draw is the next candidate: a fresh schedule, or the next mutant of a
// corpus entry picked by weight.
func (e *explorer) draw() pending {
	space := e.opt.Space
	if e.opt.Strategy == Guided && e.started > warmup {
		space.Weights = e.weights()
	}
	if e.opt.Strategy == Random || e.started <= warmup || len(e.corpus) == 0 || e.rng.Float64() < freshChance(e.started) {
		g, sw := space.Fresh(e.rng)
		return pending{genome: g, swarm: sw}
	}
	if len(e.queue) == 0 {
		ent, energy := e.pick()
		ent.picks++
		for range energy {
			other := e.corpus[e.rng.Intn(len(e.corpus))].Genome
			g, did := space.Mutate(e.rng, ent.Genome, ent.Swarm, other)
			e.queue = append(e.queue, pending{genome: g, swarm: ent.Swarm, from: ent.Run, did: did})
		}
	}
	p := e.queue[0]
	e.queue = e.queue[1:]
	return p
}

// score weighs an entry: how rare its features still are, and how close
// it came (closeness).
func (e *explorer) score(ent *entry) float64 {
	s := 0.0
	for _, f := range ent.Features {
		s += 1 / math.Sqrt(float64(max(e.hits[f], 1)))
	}
	return s + e.closeness(ent.Margins, ent.Wanted, ent.Unproven)
}

// closeness weighs how close a run came to what the search seeks: each
// margin that leads there by how much closer it came than the search's
// other margins of its property (with wanted kinds, only the properties
// that lead to them; 3 for a broken one), a wanted anomaly found (4), and
// a run porcupine found not linearizable though no audit named why (2).
// Ranks, not milliseconds: every lease that runs out leaves an
// exclusivity margin of about one backoff, so what counts is coming
// closer than the runs before.
func (e *explorer) closeness(margins map[string]float64, wanted, unproven bool) float64 {
	s := 0.0
	for prop, ms := range margins {
		if e.steersBy(prop) {
			s += 3 * math.Pow(e.rank(prop, ms), 2)
		}
	}
	if wanted {
		s += 4
	}
	if unproven && e.steersBy(checker.Exclusivity) {
		s += 2
	}
	return s
}

// rank is the share of the search's other margins of prop that kept more
// room than ms: 1 for a broken property, one half while there is nothing
// to hold it against.
func (e *explorer) rank(prop string, ms float64) float64 {
	if ms < 0 {
		return 1
	}
	seen := e.seen[prop]
	if len(seen) < 2 {
		return 0.5
	}
	more := 0
	for _, x := range seen {
		if x > ms {
			more++
		}
	}
	return float64(more) / float64(len(seen)-1)
}

// weights are what guided search has learnt of the space's arms (a
// fault, an anchor, a number of clients, a hold), as a bandit learns its
// arms: each weighs the mean closeness of the runs that drew it, counted
// with one run of the search's mean so that few runs say little, plus a
// bonus that shrinks as it is drawn more (UCB1), so that an arm drawn
// rarely is still tried; cubed, so that what paid is drawn clearly more.
func (e *explorer) weights() map[string]float64 {
	runs := e.credited.runs
	mean := 0.5
	if runs > 0 {
		mean = max(e.credited.closeness/float64(runs), 0.5)
	}
	w := map[string]float64{}
	for _, arm := range e.opt.Space.Arms() {
		c := e.credit[arm]
		if c == nil {
			c = &credit{}
		}
		n := float64(c.runs + 1)
		w[arm] = math.Pow((c.closeness+mean)/n+mean*math.Sqrt(2*math.Log(float64(runs+2))/n), 3)
	}
	return w
}

// nearMiss reports whether a run all but broke a property the search
// steers by: a margin of at most a tenth of the TTL that is at most a
// quarter of the median of that property's margins so far (every lease
// that runs out leaves an exclusivity margin of about one backoff, which
// is no near miss), from at least three.
func (e *explorer) nearMiss(margins map[string]float64) bool {
	tenth := float64(e.opt.Space.ttl()) / 10 / 1e6
	for prop, ms := range margins {
		seen := e.seen[prop]
		if !e.steersBy(prop) || ms < 0 || ms > tenth || len(seen) < 3 {
			continue
		}
		sorted := slices.Sorted(slices.Values(seen))
		if ms <= sorted[len(sorted)/2]/4 {
			return true
		}
	}
	return false
}

// leadsTo are the margins whose closeness leads to an anomaly kind.
var leadsTo = map[string][]string{
	checker.DoubleGrant:    {checker.Exclusivity, checker.Replication, checker.Clock},
	checker.StaleWrite:     {checker.FenceOrder, checker.WriteValidity},
	checker.ExpiredWrite:   {checker.WriteValidity},
	checker.LostUpdate:     {checker.FenceOrder, checker.Exclusivity},
	checker.ForeignRelease: {checker.Ownership},
}

// steersBy reports whether a property's margin weighs a schedule: all do
// when any anomaly is wanted, or when a wanted kind has no margin of its
// own.
func (e *explorer) steersBy(prop string) bool {
	if len(e.opt.Want) == 0 {
		return true
	}
	for _, w := range e.opt.Want {
		props, ok := leadsTo[w]
		if !ok || slices.Contains(props, prop) {
			return true
		}
	}
	return false
}

// pick draws an entry by score, less for each time it was picked, and
// says how many mutants of it to run: more the better it scores.
func (e *explorer) pick() (*entry, int) {
	scores := make([]float64, len(e.corpus))
	total, sum := 0.0, 0.0
	for i, ent := range e.corpus {
		s := e.score(ent)
		sum += s
		scores[i] = s / (1 + float64(ent.picks)/4)
		total += scores[i]
	}
	r := e.rng.Float64() * total
	i := 0
	for ; i < len(scores)-1 && r >= scores[i]; i++ {
		r -= scores[i]
	}
	mean := sum / float64(len(e.corpus))
	energy := 1
	if mean > 0 {
		energy = int(math.Round(2 * e.score(e.corpus[i]) / mean))
	}
	return e.corpus[i], min(max(energy, 1), 16)
}

// observe takes a finished run in: its features, margins and anomalies.
// It reports whether the run found a wanted anomaly.
func (e *explorer) observe(n int, p pending, out runner.Outcome, err error, took time.Duration) bool {
	var events []history.Event
	if err == nil {
		events, _ = history.ReadFile(filepath.Join(out.Dir, "history.jsonl"))
	}
	res := out.Results
	var features []string
	if err == nil && res.Error == nil {
		features = Features(events, res.Margins, e.opt.Space.ttl())
		if unproven(res.Valid, res.Checker.Linearizability.Result, res.Anomalies) {
			features = append(features, "not linearizable, no anomaly named")
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.lengths = append(e.lengths, took)
	r := ExploreRun{N: n, Genome: p.genome, From: p.from, Mutations: p.did, Dir: out.Dir, Found: Found(res), Seconds: time.Since(e.start).Seconds(), Reached: features}
	if err != nil {
		r.Error, r.Found = err.Error(), "error"
	} else if res.Error != nil {
		r.Error = res.Error.String()
	}
	for _, f := range features {
		if e.hits[f] == 0 {
			r.New++
		}
		e.hits[f]++
	}
	r.Features = len(e.hits)
	wanted := false
	if r.Error == "" && !res.Interrupted {
		r.Anomalies = kindsOf(res)
		for _, kind := range r.Anomalies {
			want := len(e.opt.Want) == 0 || slices.Contains(e.opt.Want, kind)
			wanted = wanted || want
			if !slices.ContainsFunc(e.out.Findings, func(f ExploreFinding) bool { return f.Anomaly == kind }) {
				e.out.Findings = append(e.out.Findings, ExploreFinding{Anomaly: kind, Run: n, Seconds: r.Seconds, Dir: out.Dir, Genome: p.genome, Wanted: want})
			}
		}
		for _, m := range res.Margins {
			if r.Margins == nil {
				r.Margins = map[string]float64{}
			}
			r.Margins[m.Property] = m.Ms
			i := slices.IndexFunc(e.out.Closest, func(c ClosestCall) bool { return c.Property == m.Property })
			switch {
			case i < 0:
				e.out.Closest = append(e.out.Closest, ClosestCall{Margin: m, Run: n, Dir: out.Dir})
			case m.Ms < e.out.Closest[i].Ms:
				e.out.Closest[i] = ClosestCall{Margin: m, Run: n, Dir: out.Dir}
			}
		}
	}
	for prop, ms := range r.Margins {
		e.seen[prop] = append(e.seen[prop], ms)
	}
	if r.Error == "" {
		closeness := e.closeness(r.Margins, wanted, unproven(res.Valid, res.Checker.Linearizability.Result, res.Anomalies))
		e.credited.runs++
		e.credited.closeness += closeness
		for _, arm := range ArmsOf(p.genome) {
			c := e.credit[arm]
			if c == nil {
				c = &credit{}
				e.credit[arm] = c
			}
			c.runs++
			c.closeness += closeness
		}
	}
	if e.opt.Strategy == Guided && !wanted && r.Error == "" && e.nearMiss(r.Margins) && !slices.Contains(p.did, "repeat") {
		// The same schedule does not always end the same way: a run that
		// all but broke a property is run again, twice, as it was.
		rep := pending{genome: p.genome, swarm: p.swarm, from: n, did: []string{"repeat"}}
		e.repeats = append(e.repeats, rep, rep)
	}
	if r.New > 0 || wanted {
		e.admit(&entry{Kept: Kept{Run: n, Genome: p.genome, Swarm: p.swarm, Features: features, Margins: r.Margins, Wanted: wanted,
			Unproven: unproven(res.Valid, res.Checker.Linearizability.Result, res.Anomalies)}})
	}
	e.out.Runs = append(e.out.Runs, r)
	if e.opt.Log != nil {
		from := "fresh"
		if p.from > 0 {
			from = fmt.Sprintf("from #%d by %v", p.from, p.did)
		}
		e.opt.Log("#%d %.0fs %s: %s (%s) · %d new, %d features, corpus %d", n, r.Seconds, r.Found, p.genome, from, r.New, len(e.hits), len(e.corpus))
	}
	return wanted
}

// admit keeps an entry, dropping the lowest-scoring one past the cap.
func (e *explorer) admit(ent *entry) {
	e.corpus = append(e.corpus, ent)
	if len(e.corpus) <= corpusCap {
		return
	}
	worst := 0
	for i := range e.corpus {
		if e.score(e.corpus[i]) < e.score(e.corpus[worst]) {
			worst = i
		}
	}
	e.corpus = slices.Delete(e.corpus, worst, worst+1)
}

// unproven reports a verdict of invalid that rests on porcupine alone.
func unproven(valid checker.Verdict, linear string, anomalies map[string]int) bool {
	if valid != checker.Invalid || linear != checker.LinearIllegal {
		return false
	}
	for _, n := range anomalies {
		if n > 0 {
			return false
		}
	}
	return true
}
