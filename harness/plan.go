package harness

import (
	"fmt"
	"io"

	"github.com/lockharness/lockharness/runner"
	"github.com/lockharness/lockharness/scenario"
)

// planFlag is --plan, as every verb that carries out runs declares it.
func (c *command) planFlag() *bool {
	return c.Bool("plan", false, "resolve every run as it would start (topology, nodes, links, each fault and what it needs, "+
		"the lock and an exec worker's ready line, the resource, the re-run command), print that (as JSON with --json) and exit 0 "+
		"without starting a run; a command line a run would refuse is refused alike")
}

// plansJSON is what --plan --json prints.
type plansJSON struct {
	Verb string               `json:"verb"`
	Runs []scenario.Described `json:"runs"`
}

// printPlan prints what a verb's runs will do (--plan) and returns the
// verb's exit code: 0, for nothing was started.
func printPlan(stdout io.Writer, verb string, runs []scenario.Described, asJSON bool) int {
	if asJSON {
		printJSON(stdout, plansJSON{Verb: verb, Runs: runs})
		return 0
	}
	fmt.Fprintf(stdout, "harness %s --plan: %s, nothing started\n", verb, plural(len(runs), "run"))
	for _, d := range runs {
		d.WriteText(stdout)
	}
	return 0
}

// describeAll says what each resolved run of a suite will do, into store;
// source is the scenario they came from, if one did.
func describeAll(plan []runner.Planned, store, source string) []scenario.Described {
	out := make([]scenario.Described, len(plan))
	for i, p := range plan {
		out[i] = p.Describe(store, source)
	}
	return out
}

// describe says what a resolved run will do, into store; source is the
// scenario it came from, if one did.
func describe(plan scenario.Plan, store, source string) scenario.Described {
	d := plan.Describe()
	d.Command = runner.PlannedCommand(plan.Spec, store, source)
	return d
}
