package harness

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/internal/proc"
	"github.com/lockharness/lockharness/reports"
	"github.com/lockharness/lockharness/runner"
	"github.com/lockharness/lockharness/scenario"
)

// cmdRepro runs one catalog scenario for several seeds and says how often
// the harness reported what the catalog expects.
func cmdRepro(args []string, stdout, stderr io.Writer) int {
	c := newCommand("repro", "NAME|FILE [flags]", "Runs the catalog scenario NAME, or the scenario file FILE (*.toml, see\n"+
		"docs/scenarios.md), for --seeds seeds and exits 0 exactly when every seed met its\n"+
		"expectation (unsafe ones caught, safe ones passed), 1 when one did not, 255 when\n"+
		"the harness failed a seed (after running the others) or was interrupted. --json\n"+
		"prints the suite document of docs/design.md (schema 2).\n"+
		"Scenarios: "+strings.Join(catalogNames(), ", "))
	seeds := c.Int("seeds", 1, "how many seeds to run")
	first := c.Int64("first-seed", 1, "the first seed; the others follow it")
	store := c.storeFlag("")
	checkTimeout := c.checkTimeoutFlag()
	verbose := c.Bool("v", false, "print each run's progress lines")
	asJSON := c.Bool("json", false, "print one JSON summary on stdout (the human lines go to stderr)")
	junit := c.String("junit", "", "write JUnit XML to `FILE`: one testcase per seed, the anomaly narrative as its text")
	stopFlag := stopOnFlag(c, "expected")
	poolOpts := c.poolFlags("seeds", "")
	parallel, reuse := poolOpts.parallel, poolOpts.reuse
	override := overrideFlags(c)
	planOnly := c.planFlag()
	pos, code, ok := c.parse(args, stdout, stderr)
	if !ok {
		return code
	}
	switch {
	case len(pos) == 0:
		return c.fail(stderr, "which scenario? valid: %s", strings.Join(catalogNames(), ", "))
	case len(pos) > 1:
		return c.fail(stderr, "one scenario at a time, got %q", pos)
	case *seeds < 1:
		return c.fail(stderr, "--seeds must be at least 1, got %d", *seeds)
	case poolOpts.invalid() != "":
		return c.fail(stderr, "%s", poolOpts.invalid())
	}
	entry, err := scenario.LookupOrRead(pos[0])
	if err != nil {
		return c.fail(stderr, "%v", err)
	}
	override.apply(&entry.Spec)
	// A repro is a one-row suite: the entry for each seed.
	plan := runner.SeedRuns(entry, *seeds, *first)
	if err := runner.ResolveSuite(plan); err != nil {
		return c.fail(stderr, "%v", err)
	}
	stopKinds, err := stopOn(*stopFlag, &entry.Expect)
	if err != nil {
		return c.fail(stderr, "%v", err)
	}
	if *planOnly {
		return printPlan(stdout, "repro", describeAll(plan, *store, pos[0]), *asJSON)
	}

	ctx, stop := interruptible(stderr)
	defer stop()
	defer proc.KillAll()
	human := stdout
	if *asJSON {
		human = stderr
	}
	var report strings.Builder
	out := io.MultiWriter(human, &report)
	fmt.Fprintf(out, "repro %s (%s): %s\n  expect %s; %d seeds from %d; %s backend\n", entry.Name, entry.Source, entry.Story, entry.Expect, *seeds, *first, plan[0].Resolved().Backend)
	lanes := max(1, min(*parallel, *seeds))
	var runs []reports.Results
	opt := runner.SuiteOptions{Store: *store, CheckTimeout: *checkTimeout, Parallel: *parallel, Reuse: *reuse,
		StopOn: stopKinds,
		Done: func(p runner.Planned, cell reports.SuiteCell, outcome string, o runner.Outcome) {
			if cell.Met == nil {
				fmt.Fprintf(out, "  seed %-4d %s\n", p.Spec.Seed, outcome)
				return
			}
			// What the rates read, not the run's operations.
			runs = append(runs, reports.Results{Valid: o.Results.Valid, Anomalies: o.Results.Anomalies,
				Checker: reports.CheckerReport{Linearizability: o.Results.Checker.Linearizability}})
			if o.Results.StoppedEarly != "" {
				outcome += " (stopped early: " + o.Results.StoppedEarly + ")"
			}
			fmt.Fprintf(out, "  seed %-4d %-8s %s  %5.1fs  %s  %s\n", p.Spec.Seed, o.Results.Valid, anomalyLine(o.Results), cell.Seconds, outcome, o.Dir)
		}}
	if *verbose {
		opt.RunProgress = stderr
	}
	suite, dir, err := runner.RunSuite(ctx, "repro "+entry.Name, plan, opt)
	pageErr := err
	if err != nil && dir == "" {
		fmt.Fprintf(stderr, "harness repro: %v\n", err)
		return exitHarness
	}
	interrupted := ctx.Err() != nil
	if interrupted {
		fmt.Fprintf(out, "  interrupted; %d of %d seeds met the expectation so far\n", suite.Met, len(runs))
	} else {
		var ran []time.Duration
		for _, row := range suite.Rows {
			for _, cell := range row.Cells {
				ran = append(ran, time.Duration(cell.Seconds*float64(time.Second)))
			}
		}
		fmt.Fprintf(out, "%d of %d seeds met %q; median %.1fs per seed, %.1fs in all (%d at once)\n", suite.Met, *seeds, entry.Expect.String(), median(ran).Seconds(), suite.WallSec, lanes)
		if suite.Errors > 0 {
			fmt.Fprintf(out, "  %d of %d seeds failed as harness errors, which say nothing of the lock (exit 255): see each one's harness.log\n", suite.Errors, *seeds)
		}
		fmt.Fprintf(out, "  rates: %s\n", rates(runs))
		if entry.Compare != "" {
			if other := storedRuns(*store, entry.Compare); len(other) > 0 {
				fmt.Fprintf(out, "  %s in the same store (%d runs): %s\n", entry.Compare, len(other), rates(other))
			} else {
				fmt.Fprintf(out, "  compare with `harness repro %s --seeds %d --store %s`\n", entry.Compare, *seeds, *store)
			}
		}
		path := filepath.Join(*store, reports.PathSafe(entry.Name), "repro-"+time.Now().Format("20060102T150405")+".txt")
		if err := os.WriteFile(path, []byte(report.String()), 0o644); err == nil {
			fmt.Fprintf(human, "  written to %s\n", path)
		}
		if pageErr != nil {
			// The seeds' verdicts stand; only the page is missing.
			fmt.Fprintf(stderr, "harness repro: the suite page: %v\n", pageErr)
		} else {
			fmt.Fprintf(human, "  report %s\n", filepath.Join(dir, "index.html"))
		}
	}
	if code := writeOutcome(suite, *junit, *asJSON, stdout, stderr, "repro"); code != 0 {
		return code
	}
	switch {
	case interrupted, suite.Errors > 0:
		return exitHarness
	case suite.Met != *seeds:
		return 1
	}
	return 0
}

// writeOutcome writes a suite's JUnit XML to path (when asked) and prints
// it as JSON (when asked); it returns exitHarness if the file cannot be
// written.
func writeOutcome(s reports.Suite, junitPath string, asJSON bool, stdout, stderr io.Writer, verb string) int {
	if junitPath != "" {
		b, err := reports.JUnit(s)
		if err == nil {
			err = os.WriteFile(junitPath, b, 0o644)
		}
		if err != nil {
			fmt.Fprintf(stderr, "harness %s: --junit: %v\n", verb, err)
			return exitHarness
		}
	}
	if asJSON {
		printJSON(stdout, s)
	}
	return 0
}

func catalogNames() []string {
	var names []string
	for _, e := range scenario.Catalog {
		names = append(names, e.Name)
	}
	return names
}

func anomalyLine(r reports.Results) string {
	var parts []string
	for _, name := range checker.AnomalyNames {
		parts = append(parts, name+" "+reports.AnomalyCount(r, name))
	}
	return strings.Join(parts, " ")
}

// rates summarises how often a set of runs saw each anomaly.
func rates(runs []reports.Results) string {
	if len(runs) == 0 {
		return "no runs"
	}
	var parts []string
	for _, name := range []string{checker.DoubleGrant, checker.StaleWrite} {
		total, with := 0, 0
		for _, r := range runs {
			total += r.Anomalies[name]
			if r.Anomalies[name] > 0 {
				with++
			}
		}
		parts = append(parts, fmt.Sprintf("%s %.1f per run (in %d of %d runs)", name, float64(total)/float64(len(runs)), with, len(runs)))
	}
	invalid, illegal := 0, 0
	for _, r := range runs {
		if r.Valid == checker.Invalid {
			invalid++
		}
		if r.Checker.Linearizability.Result == checker.LinearIllegal {
			illegal++
		}
	}
	return strings.Join(parts, "; ") + fmt.Sprintf("; not linearizable %d of %d; invalid %d of %d", illegal, len(runs), invalid, len(runs))
}

// storedRuns reads every results.json of a scenario in the store.
func storedRuns(store, name string) []reports.Results {
	dirs, _ := filepath.Glob(filepath.Join(store, name, "*", "results.json"))
	sort.Strings(dirs)
	var out []reports.Results
	for _, p := range dirs {
		// A run the harness failed or that was stopped is no rate.
		if r, err := reports.ReadResults(filepath.Dir(p)); err == nil && r.Error == nil && !r.Interrupted {
			out = append(out, r)
		}
	}
	return out
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}
