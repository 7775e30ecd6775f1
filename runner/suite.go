package runner

import (
	"context"
	"fmt"
	"io"
	"math/rand"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/lockharness/lockharness/cluster"
	"github.com/lockharness/lockharness/faults"
	"github.com/lockharness/lockharness/locks"
	"github.com/lockharness/lockharness/reports"
	"github.com/lockharness/lockharness/scenario"
)

// Planned is one run of a suite: a row of the matrix and its spec, with
// the catalog's expectation, or none for a randomised run.
type Planned struct {
	Row    string
	Spec   scenario.Spec
	Expect *scenario.Expect
	// plan is Spec resolved (ResolveSuite), or nil until then.
	plan *scenario.Plan
	// Alone runs the run with nothing else of the suite beside it, after
	// the others: what it measures is what its lock costs (a compare's
	// runs without faults), and on a few cores other runs' servers would
	// be in the measure (three etcd clusters at once took etcd's acquire
	// p50 from 15.5 ms to 53 ms on two cores; cad's barely moved).
	Alone bool
	// order is the place of the run's row in the suite (PlanSuite).
	order int
	// byLock names a library's row, and its runs, for the lock that
	// runs in the library's place (WithLock); nil for a catalog row,
	// named for its scenario whatever lock runs it.
	byLock func(lock string) (row, name string)
}

// WithLock is plan once every library row is named for lock, the lock a
// suite runs in every library's place (--lock, --worker-cmd): a row names
// the lock that ran, not the library it stood in for, and rows that
// became one (two libraries on one topology) run once.
func WithLock(plan []Planned, lock string) []Planned {
	type run struct {
		row  string
		seed int64
	}
	seen := map[run]bool{}
	out := plan[:0:0]
	for _, p := range plan {
		if p.byLock != nil {
			p.Row, p.Spec.Name = p.byLock(lock)
		}
		if seen[run{p.Row, p.Spec.Seed}] {
			continue
		}
		seen[run{p.Row, p.Spec.Seed}] = true
		out = append(out, p)
	}
	return out
}

// ResolveSuite resolves every planned run's spec once, so that a suite
// that cannot run is refused before anything starts, and RunSuite runs
// what was resolved.
func ResolveSuite(ps []Planned) error {
	for i := range ps {
		plan, err := ps[i].Spec.Resolve()
		if err != nil {
			return fmt.Errorf("%s seed %d: %w", ps[i].Row, ps[i].Spec.Seed, err)
		}
		ps[i].plan = &plan
	}
	return nil
}

// Resolved is the planned run's spec with its defaults filled in, once
// ResolveSuite resolved it; until then, the spec as planned.
func (p Planned) Resolved() scenario.Spec {
	if p.plan == nil {
		return p.Spec
	}
	return p.plan.Spec
}

// SeedRuns is a one-row suite: entry's run for seeds seeds from first,
// each against its expectation, as `harness repro` runs it.
func SeedRuns(e scenario.Entry, seeds int, first int64) []Planned {
	var out []Planned
	for i := range seeds {
		s := e.Spec
		s.Name, s.Seed = e.Name, first+int64(i)
		expect := e.Expect
		out = append(out, Planned{Row: e.Name, Spec: s, Expect: &expect})
	}
	numberRows(out)
	return out
}

// Suites are the named suites `harness suite` runs.
var Suites = []string{"quick", "full", "libs"}

// PlanSuite lists a named suite's runs: quick is every catalog scenario
// once with seed 1; full is every scenario for 5 seeds plus randomised
// runs, each topology and recipe under a seeded mix of faults, 3 seeds.
func PlanSuite(name string) ([]Planned, error) {
	var plan []Planned
	switch name {
	case "quick":
		plan = catalogRuns(1)
	case "full":
		plan = append(catalogRuns(5), randomRuns(3)...)
	case "libs":
		plan = libraryRuns(libsSeeds)
	default:
		return nil, cluster.OneOf("suite", name, Suites)
	}
	numberRows(plan)
	return plan, nil
}

func catalogRuns(seeds int) []Planned { return entryRuns(scenario.Catalog, seeds) }

// PlanDir lists the runs of the scenario files in dir (ReadScenarioDir):
// each once, seed 1, against its expectation.
func PlanDir(dir string) ([]Planned, error) {
	entries, err := scenario.ReadScenarioDir(dir)
	if err != nil {
		return nil, err
	}
	plan := entryRuns(entries, 1)
	numberRows(plan)
	return plan, nil
}

// entryRuns is every entry for seeds 1 to seeds, against its expectation.
func entryRuns(entries []scenario.Entry, seeds int) []Planned {
	var out []Planned
	for _, e := range entries {
		for seed := 1; seed <= seeds; seed++ {
			s := e.Spec
			s.Name, s.Seed = e.Name, int64(seed)
			expect := e.Expect
			out = append(out, Planned{Row: e.Name, Spec: s, Expect: &expect})
		}
	}
	return out
}

// randomRuns pairs every topology with every recipe that runs on it, under
// a mix of two or three faults available there, drawn from a fixed seed so
// the suite is the same every time.
func randomRuns(seeds int) []Planned {
	rng := rand.New(rand.NewSource(20261129))
	var out []Planned
	for _, topology := range cluster.Topologies {
		cl, err := cluster.New(cluster.Spec{Topology: topology, Backend: cluster.BackendLocal})
		if err != nil {
			continue
		}
		// The random runs are mutex runs on the in-memory counter: a
		// fault on the database's links has nothing to act on there.
		var names []string
		for _, f := range faults.Registry {
			if f.Available(cl) == nil && !f.NeedsDatabase {
				names = append(names, f.Name)
			}
		}
		sort.Strings(names)
		for _, r := range locks.Recipes {
			if len(cl.Lacking(r.Needs)) > 0 {
				continue
			}
			rng.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
			mix := strings.Join(names[:2+rng.Intn(2)], ",")
			s := scenario.Defaults()
			s.Topology, s.Lock, s.Nemesis = topology, r.Name, mix
			s.TimeLimit = scenario.Duration(12 * time.Second)
			row := fmt.Sprintf("random-%s-%s", topology, r.Name)
			s.Name = row
			for seed := 1; seed <= seeds; seed++ {
				s.Seed = int64(seed)
				out = append(out, Planned{Row: row, Spec: s})
			}
		}
	}
	return out
}

// libraryFaults are the faults the libs scorecard scores each library
// under, where its topology offers them; none first, which must be safe.
// Each fault says which tables score it (faults.Fault.Scored).
func libraryFaults() []string {
	return append([]string{faults.None}, faults.ScoredIn(faults.ScoreLibraries)...)
}

// clusterFaults are the faults the scorecard scores a library under on a
// sharded topology (Slots: a Redis Cluster), when the library runs on one
// besides its own.
func clusterFaults() []string {
	return append([]string{faults.None}, faults.ScoredIn(faults.ScoreCluster)...)
}

// longHoldFaults are those it scores a long hold under: hold = 2.5 TTLs,
// so that only renewal (the library's own, or the caller's extends) keeps
// the lock, and the holder writes through it.
func longHoldFaults() []string {
	return append([]string{faults.None}, faults.ScoredIn(faults.ScoreLongHold)...)
}

// How the rows of the long-hold and failover tables end.
const (
	longHoldRow = "long hold"
	failoverRow = "long hold through failover"
)

// failoverFaults are those it scores a library under, with a long hold,
// on each topology with failover it runs on.
func failoverFaults() []string {
	return append([]string{faults.None}, faults.ScoredIn(faults.ScoreFailover)...)
}

// libsSeeds is how many seeds the libs suite runs each row for.
const libsSeeds = 3

// LibsSuiteSummary says what the libs suite runs, from the lists it runs:
// `harness suite --help` prints it, so the two never drift apart.
func LibsSuiteSummary() string {
	var names []string
	for _, r := range locks.Recipes {
		if r.Library != "" {
			names = append(names, r.Name)
		}
	}
	for _, o := range outsideLibraries {
		names = append(names, o.name+" through its worker")
	}
	set := func(fs []string) string { return "{" + strings.Join(fs, ", ") + "}" }
	return fmt.Sprintf("every library (%s) x %s where its topology offers the fault, and x %s with a long hold "+
		"(%g TTLs, %d writes: only renewal keeps the lock), and those on a Redis Cluster x %s there, and on each topology "+
		"with failover it runs on x %s with a long hold, %d seeds; none must be safe, the rest are scored (scorecard.md)",
		strings.Join(names, ", "), set(libraryFaults()), set(longHoldFaults()), longHold, longHoldWrites, set(clusterFaults()), set(failoverFaults()), libsSeeds)
}

// longHold is how long a long hold is, in TTLs, and longHoldWrites how
// many writes a holder makes through it.
const (
	longHold       = 2.5
	longHoldWrites = 5
)

// outsideLibrary is a library the scorecard tests through a worker in
// another language (lock exec).
type outsideLibrary struct {
	name, topology, workerCmd string
	// failover are the topologies with failover the worker runs on.
	failover []string
}

// outsideLibraries are the reference workers in examples/workers; their
// paths are relative to the repository's root, where suites run.
var outsideLibraries = []outsideLibrary{
	{"redis-py-lock", cluster.Single, scenario.RedisPyWorker, []string{cluster.Sentinel}},
}

// libraryRuns is the libs scorecard: every library recipe (Recipe.Library)
// on the topology it is built for, and every outside library, under no
// fault (which must be safe) and under each scored fault available there
// (which explore: the scorecard counts what they found); then the same
// with a long hold; then, for a library that runs on a Redis Cluster too,
// the cluster faults there.
func libraryRuns(seeds int) []Planned {
	type library struct {
		name, topology, lock, workerCmd string
	}
	var libs []library
	// withFailover are the topologies with failover each library runs on.
	withFailover := map[string][]string{}
	for _, r := range locks.Recipes {
		if home := cluster.Offering(r.Needs, r.Prefers); r.Library != "" && len(home) > 0 {
			libs = append(libs, library{r.Name, home[0], r.Name, ""})
			for _, t := range home {
				if cc, err := cluster.Describe(t); err == nil && cc.Can(cluster.Failover) == nil {
					withFailover[r.Name] = append(withFailover[r.Name], t)
				}
			}
		}
	}
	for _, o := range outsideLibraries {
		libs = append(libs, library{o.name, o.topology, scenario.ExecLock, o.workerCmd})
		withFailover[o.name] = o.failover
	}
	var out []Planned
	// add plans a library's row: on its own topology or cl, under
	// nemesis, with the default hold (long "") or a long one, whose row
	// and name end as long says.
	add := func(lib library, cl *cluster.Cluster, nemesis string, long string) {
		if f, ok := faults.Lookup(nemesis); ok && f.Available(cl) != nil {
			return // failover only where the topology has one
		}
		s := scenario.Defaults()
		s.Topology, s.Lock, s.WorkerCmd, s.Nemesis, s.TTL = cl.Topology, lib.lock, lib.workerCmd, nemesis, scenario.Duration(time.Second)
		rowEnd, nameEnd := "", ""
		if long != "" {
			// Real critical sections write as they go: a lease lost
			// mid-hold is judged at the next write.
			s.Hold, s.Writes = scenario.Duration(longHold*float64(s.TTL)), longHoldWrites
			s.TimeLimit = scenario.Duration(12 * time.Second)
			rowEnd, nameEnd = " · "+long, "-long"
			if long == failoverRow {
				nameEnd += "-failover"
			}
		}
		// label names the row of who (a library, or the lock in its place)
		// and its runs; "on TOPOLOGY" unless who is at home there.
		label := func(who string, home bool) (row, name string) {
			row, name = who, "libs-"+dirSafe(who)
			if !home {
				row, name = row+" on "+cl.Topology, name+"-"+cl.Topology
			}
			return row + reports.CompareSep + nemesis + rowEnd, name + "-" + nemesis + nameEnd
		}
		row, name := label(lib.name, cl.Topology == lib.topology)
		s.Name = name
		byLock := func(lock string) (string, string) { return label(lock, false) }
		for seed := 1; seed <= seeds; seed++ {
			s.Seed = int64(seed)
			p := Planned{Row: row, Spec: s, byLock: byLock}
			if nemesis == faults.None {
				p.Expect = &scenario.Expect{}
			}
			out = append(out, p)
		}
	}
	for _, lib := range libs {
		cl, err := cluster.New(cluster.Spec{Topology: lib.topology, Backend: cluster.BackendLocal})
		if err != nil {
			continue
		}
		for _, nemesis := range libraryFaults() {
			add(lib, cl, nemesis, "")
		}
		for _, nemesis := range longHoldFaults() {
			add(lib, cl, nemesis, longHoldRow)
		}
		for _, t := range withFailover[lib.name] {
			if cc, err := cluster.Describe(t); err == nil {
				for _, nemesis := range failoverFaults() {
					add(lib, cc, nemesis, failoverRow)
				}
			}
		}
		r, err := locks.Lookup(lib.lock)
		if err != nil {
			continue
		}
		for _, other := range cluster.Offering(r.Needs, r.Prefers)[1:] {
			if cc, err := cluster.Describe(other); err == nil && cc.Can(cluster.Slots) == nil {
				for _, nemesis := range clusterFaults() {
					add(lib, cc, nemesis, "")
				}
			}
		}
	}
	return out
}

// SuiteOptions are how a suite is carried out.
type SuiteOptions struct {
	Store        string
	CheckTimeout time.Duration
	WorkerBin    string
	// Progress gets a line per run; nil for silence.
	Progress io.Writer
	// Parallel is how many runs go at once (0 or 1: one after another).
	Parallel int
	// Reuse resets a finished run's topology for a later run that starts
	// the same one (see Topologies).
	Reuse bool
	// StopEarly stops each run of an unsafe expectation once its anomaly
	// is certain (Expect.StopOn); runs without one last their time.
	StopEarly bool
	// StopOn, when set, stops every run once an audit is certain of one of
	// these anomalies instead (a verb's --stop-on-anomaly KINDS).
	StopOn []string
	// RunProgress gets every run's own progress lines (Options.Progress).
	RunProgress io.Writer
	// Done, when set, is told of every run as it finishes (one at a time,
	// in the order they finish), for a verb's own lines in place of the
	// Progress line: its cell, the outcome in words, and what it left.
	Done func(p Planned, cell reports.SuiteCell, outcome string, out Outcome)
	// Shard, when set, names which part of a sharded suite this is
	// ("1/2"); the rows' Order still counts in the whole suite.
	Shard string
	// Overrides are the flags that changed every row (reports.Suite).
	Overrides string
}

// Shard is the part i of n (1-based) of a suite: every n-th row, all its
// seeds together, counted from row i, in the order PlanSuite lists them.
// Each planned run keeps its row's place in the whole suite, so that shard
// results merged (reports.MergeSuites) are one unsharded suite's matrix.
func Shard(plan []Planned, i, n int) ([]Planned, error) {
	if n < 1 || i < 1 || i > n {
		return nil, fmt.Errorf("shard %d/%d: want i/n with 1 <= i <= n", i, n)
	}
	var out []Planned
	for _, p := range plan {
		if p.order%n == i-1 {
			out = append(out, p)
		}
	}
	return out, nil
}

// numberRows gives every planned run its row's place in the suite.
func numberRows(plan []Planned) {
	rows := map[string]int{}
	for i := range plan {
		r, ok := rows[plan[i].Row]
		if !ok {
			r = len(rows)
			rows[plan[i].Row] = r
		}
		plan[i].order = r
	}
}

// longestFirst orders the planned runs by how long each is expected to
// take, longest first, so that parallel lanes end together rather than
// one waiting on the last long run: a run lasts its time limit, a
// database adds its start, and an unsafe one that may stop early takes
// about half.
func longestFirst(plan []Planned, stopEarly bool) []int {
	expect := func(p Planned) time.Duration {
		d := p.Spec.TimeLimit.D()
		if stopEarly && p.Expect != nil && len(p.Expect.StopOn()) > 0 {
			d /= 2
		}
		if p.plan != nil && p.plan.Resource.Database {
			d += 2 * time.Second // its server's start and stop
		}
		return d
	}
	order := make([]int, len(plan))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return expect(plan[order[a]]) > expect(plan[order[b]]) })
	return order
}

// Cell is a finished run's place in a matrix (its Run left for the caller
// to say where from), and its outcome in a few words for progress lines:
// interrupted, a harness error, explored (no expectation), met, or MISSED
// and why.
func Cell(ctx context.Context, seed int64, took time.Duration, out Outcome, err error, expect *scenario.Expect) (reports.SuiteCell, string) {
	cell := reports.SuiteCell{Seed: seed, Seconds: took.Seconds()}
	switch {
	case ctx.Err() != nil:
		cell.Verdict, cell.Error = "interrupted", "interrupted"
		return cell, "interrupted"
	case err != nil:
		cell.Verdict, cell.Error = "error", err.Error()
		return cell, "harness error: " + err.Error()
	}
	cell.Verdict, cell.Anomalies = out.Results.Valid.String(), out.Results.Anomalies
	cell.Narrative = reports.FirstFindings(out.Results)
	if expect == nil {
		return cell, "explored"
	}
	met, why := expect.Met(out.Results)
	cell.Met, cell.Why = &met, why
	if !met {
		return cell, "MISSED: " + why
	}
	return cell, "met"
}

// RunSuite carries out the planned runs (resolving any that ResolveSuite
// did not), up to opt.Parallel at once, then those to run alone
// (Planned.Alone) one at a time with no kept topology beside them, rewriting the suite's results.json
// and index.html under store/suites/<stamp>/ after each, so an interrupted
// suite leaves a readable partial report. Rows and their cells keep the
// plan's order whatever order the runs finish in. A run the harness fails
// is counted apart (Suite.Errors), neither met nor missed; a cancelled
// context stops the suite.
func RunSuite(ctx context.Context, name string, plan []Planned, opt SuiteOptions) (reports.Suite, string, error) {
	start := time.Now()
	dir, err := reports.NewSuiteDir(opt.Store, start)
	if err != nil {
		return reports.Suite{}, "", err
	}
	width := 0 // the longest row name, so that progress lines line up
	for _, p := range plan {
		width = max(width, len(p.Row))
	}
	var pool *Topologies
	if opt.Reuse {
		pool = NewTopologies()
		defer pool.Close()
		for _, p := range plan {
			if p.plan != nil {
				pool.Expect(*p.plan, 1, opt.Parallel, opt.Store)
			}
		}
	}
	var (
		mu       sync.Mutex
		cells    = make([]*reports.SuiteCell, len(plan))
		finished int
		writeErr error
		suite    reports.Suite
	)
	// assemble builds the suite from the runs finished so far, in plan order.
	assemble := func() reports.Suite {
		s := reports.Suite{Name: name, Started: start, Planned: len(plan), Shard: opt.Shard, Overrides: opt.Overrides}
		rows := map[string]int{}
		for i, p := range plan {
			c := cells[i]
			if c == nil {
				continue
			}
			r, ok := rows[p.Row]
			if !ok {
				r = len(s.Rows)
				rows[p.Row] = r
				line := p.Spec.Line()
				if p.plan != nil {
					line = p.plan.Line()
				}
				row := reports.SuiteRow{Scenario: p.Row, Spec: line, Order: p.order}
				if p.Expect != nil {
					row.Expect = p.Expect.String()
				}
				s.Rows = append(s.Rows, row)
			}
			s.Rows[r].Cells = append(s.Rows[r].Cells, *c)
		}
		s.WallSec = time.Since(start).Seconds()
		s.Complete = finished == len(plan) && ctx.Err() == nil
		s.Tally()
		return s
	}
	var together, alone []int
	for _, i := range longestFirst(plan, opt.StopEarly) {
		if plan[i].Alone {
			alone = append(alone, i)
		} else {
			together = append(together, i)
		}
	}
	run := func(i int) {
		p := plan[i]
		runStart := time.Now()
		runOpt := Options{Store: opt.Store, CheckTimeout: opt.CheckTimeout, WorkerBin: opt.WorkerBin, Reuse: pool, Progress: opt.RunProgress}
		switch {
		case opt.StopOn != nil:
			runOpt.StopOn = opt.StopOn
		case opt.StopEarly && p.Expect != nil:
			runOpt.StopOn = p.Expect.StopOn()
		}
		var out Outcome
		var err error
		if p.plan != nil {
			out, err = Run(ctx, *p.plan, runOpt)
		} else {
			out, err = RunSpec(ctx, p.Spec, runOpt)
		}
		cell, outcome := Cell(ctx, p.Spec.Seed, time.Since(runStart), out, err, p.Expect)
		cell.Alone = p.Alone
		if out.Dir != "" {
			abs, _ := filepath.Abs(out.Dir)
			absSuite, _ := filepath.Abs(dir)
			cell.Run, _ = filepath.Rel(absSuite, abs)
		}
		mu.Lock()
		defer mu.Unlock()
		finished++
		if ctx.Err() == nil || out.Dir != "" {
			cells[i] = &cell
		}
		suite = assemble()
		if err := reports.WriteSuite(dir, suite); err != nil && writeErr == nil {
			writeErr = err
		}
		if opt.Done != nil {
			opt.Done(p, cell, outcome, out)
		} else if opt.Progress != nil {
			fmt.Fprintf(opt.Progress, "[%*d/%d] %-*s seed %-3d %-8s %-12s %5.1fs · elapsed %s · met %d, missed %d\n",
				len(fmt.Sprint(len(plan))), finished, len(plan), width, p.Row, p.Spec.Seed, cell.Verdict, outcome, cell.Seconds,
				time.Since(start).Round(time.Second), suite.Met, suite.Missed)
		}
	}
	Lanes(ctx, len(together), opt.Parallel, together, run)
	if len(alone) > 0 {
		// Nothing kept for the runs before may run beside these.
		var next []scenario.Plan
		for _, i := range alone {
			if plan[i].plan != nil {
				next = append(next, *plan[i].plan)
			}
		}
		pool.Trim(next)
	}
	Lanes(ctx, len(alone), 1, alone, run)
	suite = assemble()
	if err := reports.WriteSuite(dir, suite); err != nil && writeErr == nil {
		writeErr = err
	}
	return suite, dir, writeErr
}

// Describe says what the planned run will do (scenario.Plan.Describe),
// with its expectation and the command that re-runs it into store
// (PlannedCommand: source is the scenario it came from, if known); the
// run must have been resolved (ResolveSuite).
func (p Planned) Describe(store, source string) scenario.Described {
	if p.plan == nil {
		return scenario.Described{Name: p.Spec.Name, Seed: p.Spec.Seed}
	}
	d := p.plan.Describe()
	d.Command = PlannedCommand(p.plan.Spec, store, source)
	if p.Expect != nil {
		d.Expect = p.Expect.String()
	}
	return d
}
