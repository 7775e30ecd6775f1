package harness

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/lockharness/lockharness/internal/proc"
	"github.com/lockharness/lockharness/reports"
	"github.com/lockharness/lockharness/runner"
	"github.com/lockharness/lockharness/scenario"
)

// cmdSuite runs a named suite and exits 0 exactly when every run with an
// expectation met it.
func cmdSuite(args []string, stdout, stderr io.Writer) int {
	c := newCommand("suite", strings.Join(runner.Suites, "|")+" [flags] | merge DIR...",
		"  quick  every catalog scenario once, seed 1 (the default)\n"+
			"  full   every catalog scenario for 5 seeds, plus randomised runs (each topology x recipe\n"+
			"         under a seeded mix of faults, 3 seeds) that explore without an expectation\n"+
			"  libs   "+wrap(runner.LibsSuiteSummary(), 90, "         ")+"\n\n"+
			"--lock or --worker-cmd runs every scenario with that lock instead (rows on topologies it does\n"+
			"not run on, and rows that need fencing tokens it does not hand out, are skipped); a libs row\n"+
			"is then named for that lock (\"LOCK on TOPOLOGY x FAULT\"), and rows that became the same\n"+
			"run once. --rows picks rows without changing their lock (suite libs --rows etcd).\n\n"+
			"`harness suite merge DIR...` joins the results of a suite run in parts (--shard 1/n ... n/n,\n"+
			"on as many machines) into one suite page, results.json and JUnit file.\n\n"+
			"Exits 0 exactly when every catalog run met its expectation, 1 when one did not, 255 when\n"+
			"the harness failed a run (after finishing the others) or was interrupted. --json prints\n"+
			"the suite document of docs/design.md (schema 2).\n"+
			"Ctrl-C stops after the current run is stopped and keeps a partial report.")
	store := c.storeFlag("the suite report goes to STORE/suites/TIMESTAMP/")
	checkTimeout := c.checkTimeoutFlag()
	asJSON := c.Bool("json", false, "print the suite's results.json on stdout (the progress lines go to stderr)")
	junit := c.String("junit", "", "write JUnit XML to `FILE`: one testcase per scenario and seed, the anomaly narrative as its text")
	poolOpts := c.poolFlags("runs", "longest expected first")
	parallel, reuse := poolOpts.parallel, poolOpts.reuse
	stopFlag := c.String("stop-on-anomaly", "expected", "expected: end each unsafe scenario's run once its anomaly is certain (it then heals, checks liveness and is checked as usual); off: every run lasts its time limit")
	fromDir := c.String("dir", "", "run the scenario files (*.toml) in `DIR` instead of a named suite, each once, seed 1, against its expectation")
	shard := c.String("shard", "", "run only part `i/n` of the suite: every n-th row from row i, all its seeds; `harness suite merge` joins the parts' results")
	rows := c.String("rows", "", "run only the rows whose name holds `TEXT` (\"through failover\", \"redislock on sentinel\"), all their seeds")
	override := overrideFlags(c)
	planOnly := c.planFlag()
	if len(args) > 0 && args[0] == "merge" {
		return cmdSuiteMerge(args[1:], stdout, stderr)
	}
	pos, code, ok := c.parse(args, stdout, stderr)
	if !ok {
		return code
	}
	if bad := poolOpts.invalid(); bad != "" {
		return c.fail(stderr, "%s", bad)
	}
	if *stopFlag != "expected" && *stopFlag != "off" {
		return c.fail(stderr, "--stop-on-anomaly %q: a suite's rows have expectations of their own; valid: expected, off", *stopFlag)
	}
	name := "quick"
	switch len(pos) {
	case 0:
	case 1:
		name = pos[0]
	default:
		return c.fail(stderr, "one suite at a time, got %q", pos)
	}
	var plan []runner.Planned
	var err error
	if *fromDir != "" {
		if len(pos) > 0 {
			return c.fail(stderr, "--dir runs the files in %s; a suite name (%q) goes without it", *fromDir, pos[0])
		}
		name = "dir " + filepath.Base(filepath.Clean(*fromDir))
		plan, err = runner.PlanDir(*fromDir)
	} else {
		plan, err = runner.PlanSuite(name)
	}
	if err != nil {
		return c.fail(stderr, "%v", err)
	}
	for i := range plan {
		override.apply(&plan[i].Spec)
	}
	if override.changesLock() {
		// The catalog spans topologies; a lock runs on some of them.
		kept := plan[:0]
		var why error
		for _, p := range plan {
			err := p.Spec.Validate()
			if !errors.Is(err, scenario.ErrLockTopology) && !errors.Is(err, scenario.ErrNoFences) {
				kept = append(kept, p)
			} else if why == nil {
				why = err
			}
		}
		if len(kept) == 0 && len(plan) > 0 {
			// A suite of nothing would pass, and say nothing of the lock.
			return c.fail(stderr, "no run of suite %s can take part with this lock: every one needs a topology it does not run on or fences it does not hand out (the first: %v)", name, why)
		}
		if skipped := len(plan) - len(kept); skipped > 0 {
			fmt.Fprintf(stderr, "suite %s: skipping %d runs the lock cannot take part in: on topologies it does not run on, or writing through fences it does not hand out\n", name, skipped)
		}
		plan = runner.WithLock(kept, kept[0].Spec.Lock)
		if same := len(kept) - len(plan); same > 0 {
			fmt.Fprintf(stderr, "suite %s: %d runs became runs already planned once the lock is %s (rows of libraries on the same topology): each runs once\n", name, same, kept[0].Spec.Lock)
		}
	}
	if *rows != "" {
		kept := slices.DeleteFunc(slices.Clone(plan), func(p runner.Planned) bool { return !strings.Contains(p.Row, *rows) })
		if len(kept) == 0 {
			var names []string
			for _, p := range plan {
				if !slices.Contains(names, p.Row) {
					names = append(names, p.Row)
				}
			}
			return c.fail(stderr, "--rows %q: no row of suite %s holds it (rows: %s)", *rows, name, strings.Join(names, "; "))
		}
		plan = kept
	}
	if *shard != "" {
		i, n, err := reports.ParseShard(*shard)
		if err != nil {
			return c.fail(stderr, "--shard: %v", err)
		}
		if plan, err = runner.Shard(plan, i, n); err != nil {
			return c.fail(stderr, "--shard: %v", err)
		}
	}
	if err := runner.ResolveSuite(plan); err != nil {
		return c.fail(stderr, "%v", err)
	}
	if *planOnly {
		return printPlan(stdout, "suite", describeAll(plan, *store, ""), *asJSON)
	}
	ctx, stop := interruptible(stderr)
	defer stop()
	defer proc.KillAll()
	human := stdout
	if *asJSON {
		human = stderr
	}
	part := ""
	if *shard != "" {
		part = ", shard " + *shard
	}
	fmt.Fprintf(human, "suite %s%s: %d runs, %d at once\n", name, part, len(plan), max(1, min(*parallel, len(plan))))
	suite, dir, err := runner.RunSuite(ctx, name, plan, runner.SuiteOptions{Store: *store, CheckTimeout: *checkTimeout, Progress: human,
		Parallel: *parallel, Reuse: *reuse, StopEarly: *stopFlag == "expected", Shard: *shard, Overrides: override.String()})
	if err != nil {
		fmt.Fprintf(stderr, "harness suite: %v\n", err)
		return exitHarness
	}
	status, code := suiteOutcome(suite)
	fmt.Fprintf(human, "suite %s %s: %d met, %d missed, %d explored, %d harness errors, %.0f s\n  report %s\n", name, status,
		suite.Met, suite.Missed, suite.Explored, suite.Errors, suite.WallSec, filepath.Join(dir, "index.html"))
	if failed := writeOutcome(suite, *junit, *asJSON, stdout, stderr, "suite"); failed != 0 {
		return failed
	}
	return code
}

// suiteOutcome is a finished suite's status word and exit code: 0 passed,
// 1 when a run missed its expectation, exitHarness when it is incomplete or
// the harness failed a run (whatever the others found: a run that could not
// be made says nothing of the lock, and CI must not read it as a bug).
func suiteOutcome(s reports.Suite) (string, int) {
	switch {
	case !s.Complete:
		return "INCOMPLETE", exitHarness
	case s.Errors > 0:
		return "FAILED (harness errors)", exitHarness
	case !s.Passed:
		return "FAILED", 1
	}
	return "PASSED", 0
}

// cmdSuiteMerge joins the results of a sharded suite's parts into one
// suite directory, as one unsharded run would have left it.
func cmdSuiteMerge(args []string, stdout, stderr io.Writer) int {
	c := newCommand("suite merge", "DIR... [flags]", "Joins the suite directories that `harness suite NAME --shard i/n` left, one for each i\n"+
		"of one n, into STORE/suites/TIMESTAMP/: results.json, index.html, scorecard.md and junit.xml,\n"+
		"rows in the whole suite's order. Exits 0 when the merged suite passed, 1 when a run missed\n"+
		"its expectation, 255 when a part was incomplete or the harness failed a run.")
	store := c.storeFlag("the merged suite goes to STORE/suites/TIMESTAMP/")
	junit := c.String("junit", "", "also write the JUnit XML to `FILE`")
	asJSON := c.Bool("json", false, "print the merged results.json on stdout")
	pos, code, ok := c.parse(args, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) == 0 {
		return c.fail(stderr, "which suite directories? give every shard's STORE/suites/TIMESTAMP")
	}
	dir, err := reports.NewSuiteDir(*store, time.Now())
	if err != nil {
		fmt.Fprintf(stderr, "harness suite merge: %v\n", err)
		return exitHarness
	}
	suite, err := reports.MergeSuites(pos, dir)
	if err == nil {
		err = reports.WriteSuite(dir, suite)
	}
	if err == nil {
		var b []byte
		if b, err = reports.JUnit(suite); err == nil {
			err = os.WriteFile(filepath.Join(dir, "junit.xml"), b, 0o644)
		}
	}
	if err != nil {
		os.RemoveAll(dir)
		return c.fail(stderr, "%v", err)
	}
	human := stdout
	if *asJSON {
		human = stderr
	}
	status, code := suiteOutcome(suite)
	fmt.Fprintf(human, "suite %s merged from %d shards %s: %d met, %d missed, %d explored, %d harness errors, %.0f s (the longest shard)\n  report %s\n",
		suite.Name, len(pos), status, suite.Met, suite.Missed, suite.Explored, suite.Errors, suite.WallSec, filepath.Join(dir, "index.html"))
	if failed := writeOutcome(suite, *junit, *asJSON, stdout, stderr, "suite merge"); failed != 0 {
		return failed
	}
	return code
}

// wrap breaks text into lines of at most width, every line after the first
// starting with indent.
func wrap(text string, width int, indent string) string {
	var b strings.Builder
	line := 0
	for i, w := range strings.Fields(text) {
		if i > 0 && line+1+len(w) > width {
			b.WriteString("\n" + indent)
			line = 0
		} else if i > 0 {
			b.WriteByte(' ')
			line++
		}
		b.WriteString(w)
		line += len(w)
	}
	return b.String()
}
