package scenario

import (
	"context"
	"fmt"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/lockharness/lockharness/cluster"
	"github.com/lockharness/lockharness/faults"
	"github.com/lockharness/lockharness/locks"
	"github.com/lockharness/lockharness/reports"
)

// Planned is one run of a suite: a row of the matrix and its spec, with
// the catalog's expectation, or none for a randomised run.
type Planned struct {
	Row    string
	Spec   Spec
	Expect *Expect
	// plan is Spec resolved (ResolveSuite), or nil until then.
	plan *Plan
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

// Suites are the named suites `harness suite` runs.
var Suites = []string{"quick", "full", "libs"}

// PlanSuite lists a named suite's runs: quick is every catalog scenario
// once with seed 1; full is every scenario for 5 seeds plus randomised
// runs, each topology and recipe under a seeded mix of faults, 3 seeds.
func PlanSuite(name string) ([]Planned, error) {
	switch name {
	case "quick":
		return catalogRuns(1), nil
	case "full":
		return append(catalogRuns(5), randomRuns(3)...), nil
	case "libs":
		return libraryRuns(3), nil
	}
	return nil, cluster.OneOf("suite", name, Suites)
}

func catalogRuns(seeds int) []Planned {
	var out []Planned
	for _, e := range Catalog {
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
			if !r.Supports(topology) {
				continue
			}
			rng.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
			mix := strings.Join(names[:2+rng.Intn(2)], ",")
			s := Defaults()
			s.Topology, s.Lock, s.Nemesis = topology, r.Name, mix
			s.TimeLimit = Duration(12 * time.Second)
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
// under, where its topology offers them.
var libraryFaults = []string{"none", "partition", "pause-client", "kill-node", "clock-jump", "failover"}

// clusterFaults are the faults the scorecard scores a library under on a
// sharded topology (Slots: a Redis Cluster), when the library runs on one
// besides its own.
var clusterFaults = []string{"none", "partition", "pause-client", "partition-primary", "cluster-failover"}

// longHoldFaults are those it scores a long hold under: hold = 2.5 TTLs,
// so that only renewal (the library's own, or the caller's extends) keeps
// the lock.
var longHoldFaults = []string{"none", "partition", "pause-client"}

// longHold is how long a long hold is, in TTLs.
const longHold = 2.5

// outsideLibrary is a library the scorecard tests through a worker in
// another language (lock exec).
type outsideLibrary struct{ name, topology, workerCmd string }

// outsideLibraries are the reference workers in examples/workers; their
// paths are relative to the repository's root, where suites run.
var outsideLibraries = []outsideLibrary{
	{"redis-py-lock", cluster.Single, RedisPyWorker},
}

// RedisPyWorker runs redis-py's own redis.lock.Lock as a worker. It needs
// Debian's python3-redis, which only Debian's python3 imports.
var RedisPyWorker = "/usr/bin/python3 " + shellQuote(repoFile("examples/workers/redis_py_lock.py"))

// repoFile finds a file of the repository (a reference worker) from
// wherever the harness runs: the working directory or one above it (a
// package's tests), or the checkout the binary was built into (bin/harness).
// It returns rel itself when none has it.
func repoFile(rel string) string {
	var roots []string
	if wd, err := os.Getwd(); err == nil {
		roots = append(roots, wd, filepath.Dir(wd))
	}
	if exe, err := os.Executable(); err == nil {
		roots = append(roots, filepath.Dir(filepath.Dir(exe)))
	}
	for _, root := range roots {
		if p := filepath.Join(root, rel); fileExists(p) {
			return p
		}
	}
	return rel
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
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
	for _, r := range locks.Recipes {
		if r.Library != "" {
			libs = append(libs, library{r.Name, r.Topologies[0], r.Name, ""})
		}
	}
	for _, o := range outsideLibraries {
		libs = append(libs, library{o.name, o.topology, ExecLock, o.workerCmd})
	}
	var out []Planned
	add := func(lib library, cl *cluster.Cluster, nemesis string, long bool) {
		if f, ok := faults.Lookup(nemesis); ok && f.Available(cl) != nil {
			return // failover only where the topology has one
		}
		s := Defaults()
		s.Topology, s.Lock, s.WorkerCmd, s.Nemesis, s.TTL = cl.Topology, lib.lock, lib.workerCmd, nemesis, Duration(time.Second)
		row, name := lib.name+" × "+nemesis, "libs-"+lib.name+"-"+nemesis
		if cl.Topology != lib.topology {
			row, name = lib.name+" on "+cl.Topology+" × "+nemesis, "libs-"+lib.name+"-"+cl.Topology+"-"+nemesis
		}
		if long {
			s.Hold = Duration(longHold * float64(s.TTL))
			s.TimeLimit = Duration(12 * time.Second)
			row, name = row+" · long hold", name+"-long"
		}
		s.Name = name
		for seed := 1; seed <= seeds; seed++ {
			s.Seed = int64(seed)
			p := Planned{Row: row, Spec: s}
			if nemesis == faults.None {
				p.Expect = &Expect{}
			}
			out = append(out, p)
		}
	}
	for _, lib := range libs {
		cl, err := cluster.New(cluster.Spec{Topology: lib.topology, Backend: cluster.BackendLocal})
		if err != nil {
			continue
		}
		for _, nemesis := range libraryFaults {
			add(lib, cl, nemesis, false)
		}
		for _, nemesis := range longHoldFaults {
			add(lib, cl, nemesis, true)
		}
		r, err := locks.Lookup(lib.lock)
		if err != nil {
			continue
		}
		for _, other := range r.Topologies[1:] {
			if cc, err := cluster.Describe(other); err == nil && cc.Can(cluster.Slots) == nil {
				for _, nemesis := range clusterFaults {
					add(lib, cc, nemesis, false)
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
}

// RunSuite carries out the planned runs (resolving any that ResolveSuite
// did not) one after another, rewriting the
// suite's results.json and index.html under store/suites/<stamp>/ after
// each, so an interrupted suite leaves a readable partial report. A run the
// harness fails counts as missed; a cancelled context stops the suite.
func RunSuite(ctx context.Context, name string, plan []Planned, opt SuiteOptions) (reports.Suite, string, error) {
	start := time.Now()
	dir, err := reports.NewSuiteDir(opt.Store, start)
	if err != nil {
		return reports.Suite{}, "", err
	}
	suite := reports.Suite{Name: name, Started: start, Planned: len(plan)}
	width := 0 // the longest row name, so that progress lines line up
	for _, p := range plan {
		width = max(width, len(p.Row))
	}
	rows := map[string]int{}
	for i, p := range plan {
		if ctx.Err() != nil {
			break
		}
		runStart := time.Now()
		runOpt := Options{Store: opt.Store, CheckTimeout: opt.CheckTimeout, WorkerBin: opt.WorkerBin}
		var out Outcome
		var err error
		if p.plan != nil {
			out, err = Run(ctx, *p.plan, runOpt)
		} else {
			out, err = RunSpec(ctx, p.Spec, runOpt)
		}
		cell := reports.SuiteCell{Seed: p.Spec.Seed, Seconds: time.Since(runStart).Seconds()}
		if out.Dir != "" {
			abs, _ := filepath.Abs(out.Dir)
			absSuite, _ := filepath.Abs(dir)
			cell.Run, _ = filepath.Rel(absSuite, abs)
		}
		outcome := ""
		switch {
		case ctx.Err() != nil:
			cell.Verdict, cell.Error, outcome = "interrupted", "interrupted", "interrupted"
		case err != nil:
			cell.Verdict, cell.Error, outcome = "error", err.Error(), "harness error: "+err.Error()
			suite.Missed++
		default:
			cell.Verdict, cell.Anomalies = out.Results.Valid.String(), out.Results.Anomalies
			cell.Narrative = reports.FirstFindings(out.Results)
			if p.Expect == nil {
				suite.Explored++
				outcome = "explored"
			} else {
				met, why := p.Expect.Met(out.Results)
				cell.Met, cell.Why = &met, why
				if met {
					suite.Met++
					outcome = "met"
				} else {
					suite.Missed++
					outcome = "MISSED: " + why
				}
			}
		}
		if ctx.Err() == nil || out.Dir != "" {
			r, ok := rows[p.Row]
			if !ok {
				r = len(suite.Rows)
				rows[p.Row] = r
				row := reports.SuiteRow{Scenario: p.Row, Spec: p.Spec.Line()}
				if p.Expect != nil {
					row.Expect = p.Expect.String()
				}
				suite.Rows = append(suite.Rows, row)
			}
			suite.Rows[r].Cells = append(suite.Rows[r].Cells, cell)
		}
		suite.WallSec = time.Since(start).Seconds()
		suite.Complete = i == len(plan)-1 && ctx.Err() == nil
		suite.Passed = suite.Complete && suite.Missed == 0
		if err := reports.WriteSuite(dir, suite); err != nil {
			return suite, dir, err
		}
		if opt.Progress != nil {
			fmt.Fprintf(opt.Progress, "[%*d/%d] %-*s seed %-3d %-8s %-12s %5.1fs · elapsed %s · met %d, missed %d\n",
				len(fmt.Sprint(len(plan))), i+1, len(plan), width, p.Row, p.Spec.Seed, cell.Verdict, outcome, cell.Seconds,
				time.Since(start).Round(time.Second), suite.Met, suite.Missed)
		}
	}
	if len(plan) == 0 {
		suite.Complete, suite.Passed = true, true
		if err := reports.WriteSuite(dir, suite); err != nil {
			return suite, dir, err
		}
	}
	return suite, dir, nil
}
