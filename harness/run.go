package harness

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/lockharness/lockharness/faults"
	"github.com/lockharness/lockharness/internal/proc"
	"github.com/lockharness/lockharness/internal/shell"
	"github.com/lockharness/lockharness/reports"
	"github.com/lockharness/lockharness/runner"
	"github.com/lockharness/lockharness/scenario"
)

func cmdRun(args []string, stdout, stderr io.Writer) int {
	spec := scenario.Defaults()
	c := newCommand("run", "[--scenario FILE|NAME] [flags]", "Runs clients against a Redis topology under faults, checks the history, writes\n"+
		"STORE/NAME/TIMESTAMP/{history.jsonl,results.json,harness.log,nodes/} and exits\n"+
		"0 valid, 1 invalid, 2 unknown, 64 for a bad command line, 255 for a harness error.\n"+
		"--scenario starts from a scenario file's spec (or a catalog entry's); the other\n"+
		"flags change it.")
	// The scenario's spec is what the other flags start from, so it is
	// read before they are defined.
	if from, ok := scenarioArg(args); ok {
		e, err := scenario.LookupOrRead(from)
		if err != nil {
			return c.fail(stderr, "--scenario: %v", err)
		}
		spec = e.Spec
	}
	c.String("scenario", "", "start from the spec of this scenario `FILE` (*.toml, see docs/scenarios.md) or catalog entry")
	spec.RegisterFlags(c.FlagSet)
	schedule := c.String("schedule", "", "follow this fault schedule instead of drawing one from --nemesis: a run's schedule.json (`FILE`) or its directory, as `harness replay` does")
	restartDelay := c.Duration("restart-delay", 0, "alias for the kill-node option delay: how long kill-node keeps a node down (kill-node:delay=D)")
	store := c.storeFlag("")
	quiet := c.Bool("quiet", false, "no progress lines, only the summary")
	asJSON := c.Bool("json", false, "print one JSON summary on stdout (the human summary goes to stderr)")
	checkTimeout := c.checkTimeoutFlag()
	stopFlag := stopOnFlag(c, "off")
	planOnly := c.planFlag()
	pos, code, ok := c.parse(args, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return c.fail(stderr, "unexpected argument %q", pos[0])
	}
	if *stopFlag == "expected" {
		return c.fail(stderr, "--stop-on-anomaly expected: a run has no expectation (repro and suite do); name the anomalies, any or off")
	}
	stopKinds, err := stopOn(*stopFlag, nil)
	if err != nil {
		return c.fail(stderr, "%v", err)
	}
	if !c.set("seed") {
		spec.Seed = time.Now().UnixNano() % 1_000_000
	}
	if *schedule != "" {
		if c.set("nemesis") {
			return c.fail(stderr, "--schedule follows a schedule and --nemesis draws one: give one of them")
		}
		if spec.Schedule, err = scenario.ReadSchedule(*schedule); err != nil {
			return c.fail(stderr, "--schedule: %v", err)
		}
	} else if len(spec.Schedule) > 0 && c.set("nemesis") {
		return c.fail(stderr, "the scenario follows a schedule of its own, so --nemesis cannot draw one; leave --nemesis out, or write the nemesis in a file without [[spec.schedule]]")
	}
	if c.set("restart-delay") && len(spec.Schedule) > 0 {
		return c.fail(stderr, "--restart-delay sets the nemesis's kill-node delay, and this run follows a schedule: set delay= on the schedule's kill-node instead")
	}
	if c.set("restart-delay") {
		nemesis, err := faults.Parse(spec.Nemesis)
		if err != nil {
			return c.fail(stderr, "%v", err)
		}
		spec.Nemesis = nemesis.WithOption("kill-node", "delay", restartDelay.String()).String()
	}
	plan, err := spec.Resolve()
	if err != nil {
		return c.fail(stderr, "%v", err)
	}
	spec = plan.Spec
	if *planOnly {
		from, _ := scenarioArg(args)
		d := describe(plan, *store, from)
		if *schedule != "" {
			d.Command = runner.RerunCommand(spec, *store) + " --schedule " + shell.Quote(*schedule)
		}
		if !c.set("seed") {
			d.Notes = append(d.Notes, fmt.Sprintf("no --seed: the run draws its own when it starts; --seed %d runs this plan's", spec.Seed))
		}
		return printPlan(stdout, "run", []scenario.Described{d}, *asJSON)
	}

	ctx, stop := interruptible(stderr)
	defer stop()
	defer proc.KillAll()
	opt := runner.Options{Store: *store, CheckTimeout: *checkTimeout, StopOn: stopKinds, BeforeCheck: collectOften}
	if !*quiet {
		opt.Progress = stderr
	}
	human := stdout
	if *asJSON {
		human = stderr
	}
	out, err := runner.Run(ctx, plan, opt)
	if out.Dir != "" && out.Results.Spec != nil {
		reports.Summary(human, "lockharness run "+spec.Name, spec.Line(), out.Results, out.Dir)
		if *asJSON {
			printJSON(stdout, runSummary(out.Dir, out.Results))
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "harness run: %v\n", err)
		return exitHarness
	}
	return out.Results.Valid.ExitCode()
}

// runJSON is what --json prints for one run: results.json, with where the
// run directory is and the exit code.
type runJSON struct {
	Dir  string `json:"dir"`
	Exit int    `json:"exit"`
	reports.Results
}

func runSummary(dir string, r reports.Results) runJSON {
	return runJSON{Dir: dir, Exit: r.Valid.ExitCode(), Results: r}
}

func printJSON(w io.Writer, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		fmt.Fprintf(w, "{\"error\":%q}\n", err.Error())
		return
	}
	fmt.Fprintf(w, "%s\n", b)
}

// scenarioArg finds --scenario's value among a run's arguments, the last
// one given, as the flag package keeps it.
func scenarioArg(args []string) (value string, found bool) {
	for i, a := range args {
		if a == "--" {
			break
		}
		for _, name := range []string{"-scenario", "--scenario"} {
			if v, ok := strings.CutPrefix(a, name+"="); ok {
				value, found = v, true
			}
			if a == name && i+1 < len(args) {
				value, found = args[i+1], true
			}
		}
	}
	return value, found
}
