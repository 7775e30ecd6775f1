package harness

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/internal/proc"
	"github.com/lockharness/lockharness/internal/shell"
	"github.com/lockharness/lockharness/runner"
	"github.com/lockharness/lockharness/scenario"
	"github.com/lockharness/lockharness/search"
)

// cmdReplay runs a recorded run's schedule again and says whether its
// anomalies came back.
func cmdReplay(args []string, stdout, stderr io.Writer) int {
	c := newCommand("replay", "DIR [flags]", "Runs the run in DIR again with the same spec and seed, following the fault\n"+
		"schedule it followed (DIR/schedule.json): each fault on the target it drew, for\n"+
		"as long, at the same time from the start of the schedule, or as long after a\n"+
		"grant for a fault that waited for one (the holder it hits is that grant's). It\n"+
		"says for each replay whether the run's anomalies came back (for a valid run:\n"+
		"whether it was valid again), and exits 0 when they did in every replay, 1 when\n"+
		"not. Replays are named NAME"+search.ReplaySuffix+" in the store.")
	times := c.Int("times", 1, "how many times to replay it")
	store := c.storeFlag("")
	checkTimeout := c.checkTimeoutFlag()
	verbose := c.Bool("v", false, "print each replay's progress lines")
	full := c.Bool("full", false, "run each replay to its time limit instead of ending it once the anomaly it looks for is certain")
	planOnly := c.planFlag()
	asJSON := c.Bool("json", false, "with --plan, print the plan as JSON")
	pos, code, ok := c.parse(args, stdout, stderr)
	if !ok {
		return code
	}
	switch {
	case len(pos) != 1:
		return c.fail(stderr, "want one run directory, got %d arguments", len(pos))
	case *times < 1:
		return c.fail(stderr, "--times must be at least 1, got %d", *times)
	}
	rec, err := search.ReadRecorded(pos[0])
	if err != nil {
		return c.fail(stderr, "%v", err)
	}
	spec, err := rec.ReplaySpec()
	if err != nil {
		return c.fail(stderr, "%v", err)
	}
	plan, err := spec.Resolve()
	if err != nil {
		return c.fail(stderr, "replaying %s: %v", rec.Dir, err)
	}
	if *planOnly {
		d := describe(plan, *store, "")
		d.Command = runner.RerunCommand(plan.Spec, *store) + " --schedule " + shell.Quote(rec.Dir)
		runs := make([]scenario.Described, *times)
		for i := range runs {
			runs[i] = d
		}
		return printPlan(stdout, "replay", runs, *asJSON)
	}
	if *asJSON {
		return c.fail(stderr, "--json goes with --plan: a replay prints its lines")
	}
	kinds := rec.Kinds()
	var stopKinds []string
	if len(kinds) == 1 && slices.Contains(checker.OnlineAnomalies, kinds[0]) && !*full {
		stopKinds = kinds
	}

	ctx, stop := interruptible(stderr)
	defer stop()
	defer proc.KillAll()
	fmt.Fprintf(stdout, "replay %s (%s): %s\n  seed %d; %d faults followed:\n", rec.Dir, rec.Spec.Name, search.Found(rec.Results), spec.Seed, len(plan.Steps))
	for _, st := range plan.Steps {
		fmt.Fprintf(stdout, "    %s\n", st)
	}
	pool := runner.NewTopologies()
	defer pool.Close()
	pool.Expect(plan, *times, 1, *store)
	came := 0
	for i := range *times {
		opt := runner.Options{Store: *store, CheckTimeout: *checkTimeout, StopOn: stopKinds, Reuse: pool}
		if *verbose {
			opt.Progress = stderr
		}
		start := time.Now()
		out, err := runner.Run(ctx, plan, opt)
		if ctx.Err() != nil {
			fmt.Fprintf(stdout, "  interrupted; came back in %d of %d replays so far\n", came, i)
			return exitHarness
		}
		if err != nil {
			fmt.Fprintf(stderr, "harness replay: %v\n", err)
			return exitHarness
		}
		word := "did not come back"
		if search.Reproduces(out.Results, kinds) {
			word, came = "came back", came+1
		}
		fmt.Fprintf(stdout, "  replay %d of %d: %-40s %-17s %5.1fs  %s\n", i+1, *times, search.Found(out.Results), word, time.Since(start).Seconds(), out.Dir)
	}
	what := "the valid verdict"
	if len(kinds) > 0 {
		what = strings.Join(kinds, " and ")
	}
	fmt.Fprintf(stdout, "%s came back in %d of %d replays\n", what, came, *times)
	if came < *times {
		return 1
	}
	return 0
}
