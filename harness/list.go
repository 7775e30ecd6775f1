package harness

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/lockharness/lockharness/access"
	"github.com/lockharness/lockharness/cluster"
	"github.com/lockharness/lockharness/faults"
	"github.com/lockharness/lockharness/internal/options"
	"github.com/lockharness/lockharness/locks"
	"github.com/lockharness/lockharness/resource"
	"github.com/lockharness/lockharness/scenario"
	"github.com/lockharness/lockharness/workloads"
)

// cmdList prints the topologies, the catalog, the recipes and the faults.
// Where a fault applies is what the topology answers when the fault asks
// (Fault.Available), the same answer that refuses a run up front.
func cmdList(args []string, stdout, stderr io.Writer) int {
	c := newCommand("list", "[--dir DIR]", "Lists the topologies, the scenario catalog, the lock recipes with their options,\n"+
		"and the faults with the topologies they apply to and their options; with --dir, the\n"+
		"scenario files in DIR beside the catalog's.")
	dir := c.String("dir", "", "also list the scenario files (*.toml) in `DIR`, as `harness suite --dir` runs them")
	pos, code, ok := c.parse(args, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return c.fail(stderr, "takes no arguments, got %q", pos[0])
	}
	var own []scenario.Entry
	if *dir != "" {
		var err error
		if own, err = scenario.ListScenarioDir(*dir); err != nil {
			return c.fail(stderr, "%v", err)
		}
	}
	planned := map[string]*cluster.Cluster{}
	for _, t := range cluster.Topologies {
		if cl, err := cluster.Describe(t); err == nil {
			planned[t] = cl
		}
	}

	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "Topologies (--topology NAME):")
	for _, t := range cluster.Topologies {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", t, capabilities(planned[t].Capabilities()), cluster.Summary(t))
	}
	fmt.Fprintln(tw, "\nScenarios (harness repro NAME):")
	listScenarios(tw, scenario.Catalog)
	if *dir != "" {
		fmt.Fprintf(tw, "\nScenarios in %s (harness repro FILE, harness suite --dir %s):\n", *dir, *dir)
		listScenarios(tw, own)
	}
	fmt.Fprintln(tw, "\nResources (--resource NAME):")
	for _, r := range resource.Resources {
		fmt.Fprintf(tw, "  %s\t%s\n", r.Name, r.Summary)
	}
	fmt.Fprintln(tw, "\nWorkloads (--workload NAME), the resources they write to, their requests, what they take:")
	for _, w := range workloads.Workloads() {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", w.Name, strings.Join(w.Resources, ","), strings.Join(w.Ops(), ","), orDash(w.Takes()), w.Summary)
	}
	fmt.Fprintln(tw, "  fencing modes (--fencing):")
	for _, f := range resource.Fencings {
		fmt.Fprintf(tw, "    --fencing %s\t\t%s\n", f, resource.Fencing(f))
	}
	fmt.Fprintln(tw, "\nLocks (--lock NAME or NAME:OPTION,...), where they run (the first: their home), what they need:")
	for _, r := range locks.Recipes {
		needs := capabilities(r.Needs)
		if len(r.Prefers) > 0 {
			needs += " (prefers " + capabilities(r.Prefers) + ")"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", r.Name, strings.Join(cluster.Offering(r.Needs, r.Prefers), ","), needs, r.Summary)
		printOptions(tw, r.Options)
	}
	fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", locks.Exec, "as announced", "as announced", "a lock of your own: the worker --worker-cmd starts for each client, speaking docs/worker-protocol.md (`harness worker-check` tries one)")
	fmt.Fprintln(tw, "\nFaults (--nemesis a,b or a+b to inject together; options after a colon), where they apply, what they need:")
	for _, f := range faults.Registry {
		var where []string
		for _, t := range cluster.Topologies {
			if f.Available(planned[t]) == nil {
				where = append(where, t)
			}
		}
		var needs []string
		if len(f.Needs) > 0 {
			needs = append(needs, capabilities(f.Needs))
		}
		if f.NeedsClock {
			needs = append(needs, "clock shim")
		}
		if f.NeedsDatabase {
			needs = append(needs, "--resource postgres")
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", f.Name, strings.Join(where, ","), orDash(strings.Join(needs, ",")), f.Summary)
		printOptions(tw, f.Options)
	}
	tw.Flush()
	return 0
}

func printOptions(w io.Writer, specs []options.Spec) {
	for _, o := range specs {
		fmt.Fprintf(w, "    :%s\t\t\t%s\n", o, o.Summary)
	}
}

// capabilities spells capabilities as `harness list` prints them.
func capabilities(caps []cluster.Capability) string { return orDash(access.Join(caps, ",")) }

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// listScenarios prints a line per scenario: its name, shape, expectation
// and source.
func listScenarios(w io.Writer, entries []scenario.Entry) {
	for _, e := range entries {
		s := e.Spec
		lock := s.Lock
		if s.Workload != workloads.Default {
			lock += " · " + s.Workload + " fencing " + s.Fencing
		}
		source := e.Source
		if e.SourceURL != "" {
			source += " " + e.SourceURL
		}
		fmt.Fprintf(w, "  %s\t%s\t%s\t%s\t%s\t%s\n", e.Name, s.Topology, lock, s.Nemesis, e.Expect, source)
	}
}
