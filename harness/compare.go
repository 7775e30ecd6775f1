package harness

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/lockharness/lockharness/internal/proc"
	"github.com/lockharness/lockharness/reports"
	"github.com/lockharness/lockharness/runner"
	"github.com/lockharness/lockharness/scenario"
)

func cmdCompare(args []string, stdout, stderr io.Writer) int {
	base := scenario.Defaults()
	c := newCommand("compare", "--locks A,B,... --nemesis F,G,... [flags]", "Runs each candidate lock under each fault (a column each; join faults with + to\n"+
		"inject them together) for the same seeds, and without faults to measure what it\n"+
		"costs, each lock on its own topology unless --topology names one. Writes\n"+
		"STORE/suites/TIMESTAMP/compare.html and compare.md: rows the locks, columns the\n"+
		"faults (and ttls), each cell the share of runs with an anomaly, linked to the runs,\n"+
		"beside each lock's acquire latency and handoffs a second without faults. Exits 0\n"+
		"once every run is done, whatever they found; 255 if the harness failed.")
	lockList := c.String("locks", "", "the candidate locks, comma-separated, each as --lock takes it (redsync:tries=1)")
	nemesisList := c.String("nemesis", "none", "the faults, comma-separated: one column each (none is added if missing)")
	ttlList := c.String("ttl", "", "lease times, comma-separated: more than one adds a column per ttl under each fault (default "+base.TTL.String()+")")
	seeds := c.Int("seeds", 3, "seeds per cell, 1 to N")
	// The spec's own flags, as run declares them; --topology, given, runs
	// every lock there instead of on its own.
	base.RegisterFlagsNamed(c.FlagSet, "topology", "time-limit", "clients", "hold", "backend", "image")
	store := c.storeFlag("the comparison goes to STORE/suites/TIMESTAMP/")
	checkTimeout := c.checkTimeoutFlag()
	poolOpts := c.poolFlags("runs", "")
	parallel, reuse := poolOpts.parallel, poolOpts.reuse
	planOnly := c.planFlag()
	asJSON := c.Bool("json", false, "with --plan, print the plan as JSON")
	pos, code, ok := c.parse(args, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return c.fail(stderr, "unexpected argument %q", pos[0])
	}
	if *lockList == "" {
		return c.fail(stderr, "which locks? --locks A,B,... (harness list names them)")
	}
	if bad := poolOpts.invalid(); bad != "" {
		return c.fail(stderr, "%s", bad)
	}
	var ttls []time.Duration
	if *ttlList != "" {
		for _, s := range split(*ttlList) {
			d, err := time.ParseDuration(s)
			if err != nil || d <= 0 {
				return c.fail(stderr, "--ttl %q: each is a positive duration such as 2s", s)
			}
			ttls = append(ttls, d)
		}
	}
	plan, err := runner.ComparePlan(split(*lockList), split(*nemesisList), ttls, *seeds, base, c.set("topology"))
	if err != nil {
		return c.fail(stderr, "%v", err)
	}
	if err := runner.ResolveSuite(plan); err != nil {
		return c.fail(stderr, "%v", err)
	}
	if *planOnly {
		return printPlan(stdout, "compare", describeAll(plan, *store, ""), *asJSON)
	}
	if *asJSON {
		return c.fail(stderr, "--json goes with --plan: a comparison writes compare.md and compare.html")
	}
	ctx, stop := interruptible(stderr)
	defer stop()
	defer proc.KillAll()
	alone := 0
	for _, p := range plan {
		if p.Alone {
			alone++
		}
	}
	if faulted := len(plan) - alone; faulted > 0 {
		fmt.Fprintf(stdout, "compare: %d runs under faults, %d at once, then ", faulted, max(1, min(*parallel, faulted)))
	} else {
		fmt.Fprint(stdout, "compare: ")
	}
	fmt.Fprintf(stdout, "%d without faults one at a time (they measure what each lock costs)\n", alone)
	suite, dir, err := runner.RunSuite(ctx, "compare", plan, runner.SuiteOptions{Store: *store, CheckTimeout: *checkTimeout,
		Progress: stdout, Parallel: *parallel, Reuse: *reuse})
	if err != nil {
		fmt.Fprintf(stderr, "harness compare: %v\n", err)
		return exitHarness
	}
	fmt.Fprintf(stdout, "\n%s\n  page %s\n  markdown %s\n", reports.CompareOf(dir, suite).Markdown(),
		filepath.Join(dir, "compare.html"), filepath.Join(dir, "compare.md"))
	if !suite.Complete {
		return exitHarness
	}
	return 0
}

// split is a comma-separated flag's values, blanks dropped.
func split(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}
