package main

import (
	"flag"
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
	fs := flag.NewFlagSet("suite", flag.ContinueOnError)
	fs.SetOutput(stderr)
	store := fs.String("store", "store", "directory that keeps run directories; the suite report goes to STORE/suites/TIMESTAMP/")
	checkTimeout := fs.Duration("check-timeout", 30*time.Second, "bound on each run's linearizability check")
	onBackend := backendFlags(fs)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: harness suite [flags] %s\n\n  quick  every catalog scenario once, seed 1\n  full   every catalog scenario for 5 seeds, plus randomised runs (each topology x recipe\n         under a seeded mix of faults, 3 seeds) that explore without an expectation\n  libs   every library recipe x {none, partition, pause-client, kill-node, clock-jump},\n         3 seeds; none must be safe, the rest are scored (scorecard.md)\n\nExits 0 exactly when every catalog run met its expectation. Ctrl-C stops after\nthe current run is stopped and keeps a partial report.\n\nFlags:\n", strings.Join(scenario.Suites, "|"))
		fs.PrintDefaults()
	}
	name, code, ok := parseNamed(fs, args)
	if !ok {
		return code
	}
	if name == "" {
		name = "quick"
	}
	plan, err := scenario.PlanSuite(name)
	if err != nil {
		fmt.Fprintf(stderr, "harness suite: %v\n", err)
		return exitHarness
	}
	for i := range plan {
		onBackend(&plan[i].Spec)
		if err := plan[i].Spec.Validate(); err != nil {
			fmt.Fprintf(stderr, "harness suite: %v\n", err)
			return exitHarness
		}
	}
	ctx, stop := interruptible(stderr)
	defer stop()
	defer proc.KillAll()
	fmt.Fprintf(stdout, "suite %s: %d runs\n", name, len(plan))
	suite, dir, err := scenario.RunSuite(ctx, name, plan, scenario.SuiteOptions{Store: *store, CheckTimeout: *checkTimeout, Progress: stdout})
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
	fmt.Fprintf(stdout, "suite %s %s: %d met, %d missed, %d explored, %.0f s\n  report %s\n", name, status,
		suite.Met, suite.Missed, suite.Explored, suite.WallSec, filepath.Join(dir, "index.html"))
	if !suite.Passed {
		if !suite.Complete {
			return exitHarness
		}
		return 1
	}
	return 0
}
