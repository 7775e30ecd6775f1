package harness

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/lockharness/lockharness/internal/proc"
	"github.com/lockharness/lockharness/scenario"
)

// cmdSuite runs a named suite and exits 0 exactly when every run with an
// expectation met it.
func cmdSuite(args []string, stdout, stderr io.Writer) int {
	c := newCommand("suite", strings.Join(scenario.Suites, "|")+" [flags]",
		"  quick  every catalog scenario once, seed 1 (the default)\n"+
			"  full   every catalog scenario for 5 seeds, plus randomised runs (each topology x recipe\n"+
			"         under a seeded mix of faults, 3 seeds) that explore without an expectation\n"+
			"  libs   every library (redsync, redislock, rueidislock, and redis-py through its Python worker)\n"+
			"         x {none, partition, pause-client, kill-node, clock-jump}, and x {none, partition,\n"+
			"         pause-client} with a long hold (2.5 TTLs: only renewal keeps the lock), 3 seeds;\n"+
			"         none must be safe, the rest are scored (scorecard.md)\n\n"+
			"--lock or --worker-cmd runs every scenario with that lock instead (rows on topologies it does\n"+
			"not run on are skipped).\n\n"+
			"Exits 0 exactly when every catalog run met its expectation, 1 when one did not.\n"+
			"Ctrl-C stops after the current run is stopped and keeps a partial report.")
	store := c.String("store", "store", "directory that keeps run directories; the suite report goes to STORE/suites/TIMESTAMP/")
	checkTimeout := c.Duration("check-timeout", 30*time.Second, "bound on each run's linearizability check")
	asJSON := c.Bool("json", false, "print the suite's results.json on stdout (the progress lines go to stderr)")
	junit := c.String("junit", "", "write JUnit XML to `FILE`: one testcase per scenario and seed, the anomaly narrative as its text")
	override := overrideFlags(c)
	pos, code, ok := c.parse(args, stdout, stderr)
	if !ok {
		return code
	}
	name := "quick"
	switch len(pos) {
	case 0:
	case 1:
		name = pos[0]
	default:
		return c.fail(stderr, "one suite at a time, got %q", pos)
	}
	plan, err := scenario.PlanSuite(name)
	if err != nil {
		return c.fail(stderr, "%v", err)
	}
	for i := range plan {
		override.apply(&plan[i].Spec)
	}
	if override.changesLock() {
		// The catalog spans topologies; a lock runs on some of them.
		kept := plan[:0]
		for _, p := range plan {
			if err := p.Spec.Validate(); !errors.Is(err, scenario.ErrLockTopology) {
				kept = append(kept, p)
			}
		}
		if skipped := len(plan) - len(kept); skipped > 0 {
			fmt.Fprintf(stderr, "suite %s: skipping %d runs on topologies the lock does not run on\n", name, skipped)
		}
		plan = kept
	}
	if err := scenario.ResolveSuite(plan); err != nil {
		return c.fail(stderr, "%v", err)
	}
	ctx, stop := interruptible(stderr)
	defer stop()
	defer proc.KillAll()
	human := stdout
	if *asJSON {
		human = stderr
	}
	fmt.Fprintf(human, "suite %s: %d runs\n", name, len(plan))
	suite, dir, err := scenario.RunSuite(ctx, name, plan, scenario.SuiteOptions{Store: *store, CheckTimeout: *checkTimeout, Progress: human})
	if err != nil {
		fmt.Fprintf(stderr, "harness suite: %v\n", err)
		return exitHarness
	}
	status := "PASSED"
	switch {
	case !suite.Complete:
		status = "INCOMPLETE (interrupted)"
	case !suite.Passed:
		status = "FAILED"
	}
	fmt.Fprintf(human, "suite %s %s: %d met, %d missed, %d explored, %.0f s\n  report %s\n", name, status,
		suite.Met, suite.Missed, suite.Explored, suite.WallSec, filepath.Join(dir, "index.html"))
	if code := writeOutcome(suite, *junit, *asJSON, stdout, stderr, "suite"); code != 0 {
		return code
	}
	if !suite.Passed {
		if !suite.Complete {
			return exitHarness
		}
		return 1
	}
	return 0
}
