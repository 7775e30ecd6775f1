package harness

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/internal/proc"
	"github.com/lockharness/lockharness/internal/shell"
	"github.com/lockharness/lockharness/runner"
	"github.com/lockharness/lockharness/scenario"
	"github.com/lockharness/lockharness/search"
)

// cmdShrink searches for the smallest scenario that still shows a run's
// anomaly and writes it as a scenario file with a page beside it.
func cmdShrink(args []string, stdout, stderr io.Writer) int {
	c := newCommand("shrink", "DIR [flags]", "Starts from the invalid run in DIR and searches for a smaller scenario that\n"+
		"still finds the same anomaly in every one of --tries tries: fewer faults,\n"+
		"shorter fault windows, fewer clients, a shorter time limit. Each candidate\n"+
		"follows the run's schedule (as `harness replay` does) with one cut made, and is\n"+
		"kept only when every try finds the anomaly. The search stops when no cut is\n"+
		"left or at --budget. It writes DIR/shrink-TIMESTAMP/ with minimal.toml (the\n"+
		"minimal scenario, for `harness run --scenario` and `harness repro`), shrink.html\n"+
		"(the original and minimal timelines side by side, and every cut tried) and\n"+
		"shrink.json, and prints the command that re-runs the minimal scenario. Exits 0\n"+
		"when a smaller scenario was found, 1 when none was, 64 for a valid run.")
	budget := c.Duration("budget", 10*time.Minute, "bound on the whole search")
	tries := c.Int("tries", 3, "k: how many runs of a candidate must all find the anomaly")
	anomaly := c.String("anomaly", "", "the anomaly to keep, when the run found several: "+strings.Join(checker.AnomalyNames, ", ")+" (default: the first it found in that order)")
	store := c.storeFlag("")
	checkTimeout := c.checkTimeoutFlag()
	verbose := c.Bool("v", false, "print each try's progress lines")
	planOnly := c.planFlag()
	asJSON := c.Bool("json", false, "with --plan, print the plan as JSON")
	pos, code, ok := c.parse(args, stdout, stderr)
	if !ok {
		return code
	}
	switch {
	case len(pos) != 1:
		return c.fail(stderr, "want one run directory, got %d arguments", len(pos))
	case *tries < 1:
		return c.fail(stderr, "--tries must be at least 1, got %d", *tries)
	case *budget <= 0:
		return c.fail(stderr, "--budget must be positive, got %v", *budget)
	}
	rec, err := search.ReadRecorded(pos[0])
	if err != nil {
		return c.fail(stderr, "%v", err)
	}
	spec, kind, err := rec.ShrinkFrom(*anomaly)
	if err != nil {
		return c.fail(stderr, "%v", err)
	}
	plan, err := spec.Resolve()
	if err != nil {
		return c.fail(stderr, "shrinking %s: %v", rec.Dir, err)
	}
	if *planOnly {
		// The search starts from the run as it was; each cut is one less.
		d := describe(plan, *store, "")
		d.Command = runner.RerunCommand(plan.Spec, *store) + " --schedule " + shell.Quote(rec.Dir)
		d.Notes = append(d.Notes, fmt.Sprintf("the search starts from this run, needs the anomaly in %d of %d tries of a candidate, and cuts faults, fault windows, clients and time from it within --budget %v", *tries, *tries, *budget))
		return printPlan(stdout, "shrink", []scenario.Described{d}, *asJSON)
	}
	if *asJSON {
		return c.fail(stderr, "--json goes with --plan: a shrink writes shrink.json")
	}
	evident, found := rec.Evident(kind)
	when := fmt.Sprintf("evident at %.1fs", evident.Seconds())
	if !found {
		evident, when = spec.TimeLimit.D(), "not placed in time (no finding names its events)"
	}

	ctx, stop := interruptible(stderr)
	defer stop()
	defer proc.KillAll()
	fmt.Fprintf(stdout, "shrink %s (%s): %s\n  from %d faults, %d clients, time limit %v; the %s %s; %d of %d tries must find it; budget %v\n",
		rec.Dir, rec.Spec.Name, search.Found(rec.Results), len(spec.Schedule), spec.Clients, spec.TimeLimit, kind, when, *tries, *tries, *budget)
	opt := search.ShrinkRunOptions{Tries: *tries, Budget: *budget, Store: *store, CheckTimeout: *checkTimeout,
		Log: func(format string, args ...any) { fmt.Fprintf(stdout, format+"\n", args...) }}
	if *verbose {
		opt.Progress = stderr
	}
	done, err := search.ShrinkRecorded(ctx, rec, spec, kind, evident, opt)
	shrunk, page, dir := done.Shrunk, done.Page, done.Dir
	if ctx.Err() != nil {
		fmt.Fprintf(stdout, "  interrupted after %.0fs\n", shrunk.Seconds)
		return exitHarness
	}
	if err != nil {
		fmt.Fprintf(stderr, "harness shrink: %v\n", err)
		return exitHarness
	}
	m := shrunk.Minimal
	if !page.Kept {
		fmt.Fprintf(stdout, "no smaller scenario found the %s in %d of %d tries (%d cuts tried in %.0fs)\n", kind, *tries, *tries, len(shrunk.Steps), shrunk.Seconds)
	} else {
		fmt.Fprintf(stdout, "minimal: %d of %d faults, %d of %d clients, time limit %v of %v; found the %s in %d of %d tries (%d cuts tried in %.0fs%s)\n",
			len(m.Schedule), len(spec.Schedule), m.Clients, spec.Clients, m.TimeLimit, spec.TimeLimit, kind, *tries, *tries, len(shrunk.Steps), shrunk.Seconds,
			map[bool]string{true: ", stopped at the budget"}[shrunk.OutOfBudget])
		for _, st := range page.Minimal.Faults {
			fmt.Fprintf(stdout, "  %s\n", st)
		}
	}
	fmt.Fprintf(stdout, "  scenario  %s\n  page      %s\n  re-run    %s\n  seeds     %s\n", filepath.Join(dir, page.File), filepath.Join(dir, "shrink.html"), page.Command, page.Repro)
	if shrunk.HarnessError != "" {
		// What was kept before the failure stands; that no smaller one
		// exists is not known.
		fmt.Fprintf(stdout, "stopped by a harness error, so this is not known to be minimal: %s\n", shrunk.HarnessError)
		return exitHarness
	}
	if !page.Kept {
		return 1
	}
	return 0
}
