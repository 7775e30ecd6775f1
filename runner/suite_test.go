package runner

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockharness/lockharness/faults"
	"github.com/lockharness/lockharness/internal/options"
	"github.com/lockharness/lockharness/internal/proc"
	"github.com/lockharness/lockharness/reports"
	"github.com/lockharness/lockharness/scenario"
)

func TestPlanSuite(t *testing.T) {
	quick, err := PlanSuite("quick")
	if err != nil || len(quick) != len(scenario.Catalog) {
		t.Fatalf("quick: %d runs, %v; want one per catalog row (%d)", len(quick), err, len(scenario.Catalog))
	}
	full, err := PlanSuite("full")
	if err != nil {
		t.Fatal(err)
	}
	explore := 0
	for _, p := range full {
		if err := p.Spec.Validate(); err != nil {
			t.Errorf("%s seed %d: %v", p.Row, p.Spec.Seed, err)
		}
		if p.Expect == nil {
			explore++
		}
	}
	if len(full)-explore != 5*len(scenario.Catalog) || explore == 0 {
		t.Errorf("full: %d catalog runs and %d randomised, want %d and some", len(full)-explore, explore, 5*len(scenario.Catalog))
	}
	libs, err := PlanSuite("libs")
	if err != nil {
		t.Fatal(err)
	}
	expected := 0
	for _, p := range libs {
		if err := p.Spec.Validate(); err != nil {
			t.Errorf("%s: %v", p.Row, err)
		}
		if p.Expect != nil {
			expected++
		}
	}
	// 3 Go libraries and redis-py x 5 faults (none has failover), and
	// each x 4 faults with a long hold, and the 2 that run on a cluster
	// (redislock, rueidislock) x 5 faults there, and with a long hold on
	// each topology with failover they run on (redislock and rueidislock:
	// sentinel and cluster; redis-py: sentinel) x 3 faults (none, failover,
	// kill-primary), and etcd's 2 recipes x the 4 of those 5 faults that
	// apply on etcd (no clock-jump) and x 4 faults with a long hold, x 3
	// seeds; "none" rows expect safety.
	if want, wantExpected := (4*5+4*4+2*5+5*3+2*4+2*4)*3, (4+4+2+5+2+2)*3; len(libs) != want || expected != wantExpected {
		t.Errorf("libs: %d runs, %d with an expectation; want %d and %d", len(libs), expected, want, wantExpected)
	}
	rows := map[string]bool{}
	for _, p := range libs {
		rows[p.Row] = true
	}
	for _, row := range []string{"redis-py-lock × pause-client", "rueidislock × none · long hold", "redis-py-lock × partition · long hold",
		"redislock on cluster × none", "rueidislock on cluster × cluster-failover", "redislock × partition-holder · long hold",
		"redislock on sentinel × kill-primary · long hold through failover", "rueidislock on cluster × failover · long hold through failover",
		"redis-py-lock on sentinel × failover · long hold through failover"} {
		if !rows[row] {
			t.Errorf("libs has no row %q", row)
		}
	}
	if _, err := PlanSuite("weekly"); err == nil || !strings.Contains(err.Error(), "quick, full, libs") {
		t.Errorf("unknown suite: %v", err)
	}
}

// A libs suite run with one lock in every library's place names its rows
// for that lock, and runs once what two libraries' rows became: the page
// never says etcd-fenced where etcd ran.
func TestLibsRowsWithALockNameTheLockThatRan(t *testing.T) {
	libs, err := PlanSuite("libs")
	if err != nil {
		t.Fatal(err)
	}
	var onEtcd []Planned
	for _, p := range libs {
		if p.Spec.Topology == "etcd" {
			p.Spec.Lock = "etcd"
			onEtcd = append(onEtcd, p)
		}
	}
	if len(onEtcd) == 0 {
		t.Fatal("no libs row on etcd")
	}
	// What one library's rows plan is what the lock's rows must plan:
	// the same runs (fault, hold, seed), once each.
	var etcdOwn []string
	for _, p := range onEtcd {
		if strings.HasPrefix(p.Row, "etcd"+reports.CompareSep) {
			etcdOwn = append(etcdOwn, fmt.Sprint(p.Spec.Nemesis, "/", p.Spec.Hold, "/", p.Spec.Seed))
		}
	}
	var ran []string
	for _, p := range WithLock(onEtcd, "etcd") {
		if !strings.HasPrefix(p.Row, "etcd on etcd"+reports.CompareSep) || strings.Contains(p.Row+p.Spec.Name, "fenced") {
			t.Errorf("row %q, run %q: want it named for etcd on etcd", p.Row, p.Spec.Name)
		}
		ran = append(ran, fmt.Sprint(p.Spec.Nemesis, "/", p.Spec.Hold, "/", p.Spec.Seed))
	}
	slices.Sort(etcdOwn)
	slices.Sort(ran)
	if len(etcdOwn) == 0 || !slices.Equal(ran, etcdOwn) {
		t.Errorf("with the lock etcd in every place, the runs are %v; want etcd's own rows' %v", ran, etcdOwn)
	}
	// A catalog row keeps its scenario's name, whatever lock runs it.
	quick, _ := PlanSuite("quick")
	if got := WithLock(quick[:1], "etcd"); got[0].Row != quick[0].Row {
		t.Errorf("catalog row %q renamed %q", quick[0].Row, got[0].Row)
	}
}

// The scorecard's tables are what the faults say of themselves: a fault
// added to the registry with a table runs in it and is named by
// `harness suite --help`, with no other edit.
func TestScorecardTablesComeFromTheFaults(t *testing.T) {
	added := faults.Fault{Name: "test-stall", Summary: "a fault of this test", Scored: []faults.Scorecard{faults.ScoreLongHold},
		Run: func(context.Context, *faults.Env, *rand.Rand, options.Values) error { return nil }}
	saved := faults.Registry
	faults.Registry = append(slices.Clone(saved), added)
	t.Cleanup(func() { faults.Registry = saved })

	libs, err := PlanSuite("libs")
	if err != nil {
		t.Fatal(err)
	}
	scored := map[string]map[string]bool{} // table -> faults planned
	for _, p := range libs {
		table := string(faults.ScoreLibraries)
		switch {
		case strings.HasSuffix(p.Row, " · "+failoverRow):
			table = string(faults.ScoreFailover)
		case strings.HasSuffix(p.Row, " · "+longHoldRow):
			table = string(faults.ScoreLongHold)
		case strings.Contains(p.Row, " on cluster × "):
			table = string(faults.ScoreCluster)
		}
		if scored[table] == nil {
			scored[table] = map[string]bool{}
		}
		scored[table][p.Spec.Nemesis] = true
	}
	summary := LibsSuiteSummary()
	for _, table := range []faults.Scorecard{faults.ScoreLibraries, faults.ScoreCluster, faults.ScoreLongHold, faults.ScoreFailover} {
		want := append([]string{faults.None}, faults.ScoredIn(table)...)
		// A scored fault runs wherever a library's topology offers it
		// (no library's offers failover): nothing else is planned.
		for f := range scored[string(table)] {
			if !slices.Contains(want, f) {
				t.Errorf("table %s plans %s, which the registry does not score there (%v)", table, f, want)
			}
		}
		if len(scored[string(table)]) < 3 {
			t.Errorf("table %s plans only %v", table, scored[string(table)])
		}
		if set := "{" + strings.Join(append([]string{faults.None}, faults.ScoredIn(table)...), ", ") + "}"; !strings.Contains(summary, set) {
			t.Errorf("suite --help does not name table %s's faults %s:\n%s", table, set, summary)
		}
	}
	if !scored[string(faults.ScoreLongHold)]["test-stall"] || !strings.Contains(summary, "test-stall") {
		t.Errorf("a fault added with a table is not planned or named: %v\n%s", scored, summary)
	}
}

func shortPlan(seeds int) []Planned {
	var plan []Planned
	for seed := 1; seed <= seeds; seed++ {
		s := spec("cad", "none", 2*time.Second, int64(seed))
		s.Name = "clean-short"
		plan = append(plan, Planned{Row: "clean-short", Spec: s, Expect: &scenario.Expect{}})
	}
	return plan
}

func TestSuiteWritesItsMatrix(t *testing.T) {
	needRedis(t)
	t.Cleanup(proc.KillAll)
	store := t.TempDir()
	// Two runs at once, and a third that measures cost, which runs with
	// nothing beside it.
	plan := shortPlan(3)
	plan[0].Alone = true
	type span struct {
		from, to time.Time
		alone    bool
	}
	var mu sync.Mutex
	var spans []span
	done := func(p Planned, cell reports.SuiteCell, _ string, _ Outcome) {
		mu.Lock()
		defer mu.Unlock()
		now := time.Now()
		spans = append(spans, span{now.Add(-time.Duration(cell.Seconds * float64(time.Second))), now, cell.Alone})
	}
	suite, dir, err := RunSuite(context.Background(), "test", plan, SuiteOptions{Store: store, WorkerBin: workerBin, Parallel: 2, Done: done})
	if err != nil {
		t.Fatal(err)
	}
	if !suite.Passed || !suite.Complete || suite.Met != 3 || len(suite.Rows) != 1 || len(suite.Rows[0].Cells) != 3 {
		t.Fatalf("suite %+v", suite)
	}
	for _, a := range spans {
		for _, b := range spans {
			if a.alone && a != b && a.from.Before(b.to) {
				t.Errorf("the run alone (%v to %v) started before another ended (%v to %v): want it last, by itself", a.from, a.to, b.from, b.to)
			}
		}
	}
	back, err := reports.ReadSuite(dir)
	if err != nil || back.Met != 3 || !back.Rows[0].Cells[0].Alone || back.Rows[0].Cells[1].Alone {
		t.Fatalf("results.json: %+v, %v", back, err)
	}
	page, err := os.ReadFile(filepath.Join(dir, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	run := back.Rows[0].Cells[0].Run
	if _, err := os.Stat(filepath.Join(dir, run, "results.json")); err != nil {
		t.Errorf("cell link %q does not reach the run: %v", run, err)
	}
	for _, want := range []string{"PASSED", "clean-short", run + "/index.html"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("suite page lacks %q", want)
		}
	}
}

func TestInterruptedSuiteLeavesAPartialReport(t *testing.T) {
	needRedis(t)
	t.Cleanup(proc.KillAll)
	ctx, cancel := context.WithCancel(context.Background())
	// Interrupted as soon as the first run has finished: the partial report
	// holds it, whatever the machine's load made of a fixed moment.
	var once sync.Once
	first := func(Planned, reports.SuiteCell, string, Outcome) { once.Do(cancel) }
	suite, dir, err := RunSuite(ctx, "test", shortPlan(5), SuiteOptions{Store: t.TempDir(), WorkerBin: workerBin, Done: first})
	if err != nil {
		t.Fatal(err)
	}
	if suite.Complete || suite.Passed {
		t.Errorf("an interrupted suite says complete=%v passed=%v", suite.Complete, suite.Passed)
	}
	if n := proc.Live(); n != 0 {
		t.Errorf("%d processes left after the interrupt", n)
	}
	back, err := reports.ReadSuite(dir)
	if err != nil || back.Complete || back.Met < 1 {
		t.Fatalf("partial report: %+v, %v", back, err)
	}
	page, _ := os.ReadFile(filepath.Join(dir, "index.html"))
	if !strings.Contains(string(page), "INCOMPLETE") {
		t.Errorf("the partial page does not say it is incomplete")
	}
}
