package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/lockharness/lockharness/faults"
	"github.com/lockharness/lockharness/locks"
	"github.com/lockharness/lockharness/scenario"
)

// cmdList prints the catalog, the recipes and the faults, one line each.
func cmdList(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		fmt.Fprintf(stderr, "harness list: takes no arguments, got %q\n", args[0])
		return exitHarness
	}
	fmt.Fprintln(stdout, "Scenarios (harness repro NAME):")
	for _, e := range scenario.Catalog {
		s := e.Spec
		fmt.Fprintf(stdout, "  %-28s %-9s %-12s %-34s %-30s %s\n", e.Name, s.Topology, s.Lock, s.Nemesis, e.Expect, e.Source)
	}
	fmt.Fprintln(stdout, "\nLocks (--lock NAME):")
	for _, r := range locks.Recipes {
		tops := r.Topologies
		if len(tops) == 0 {
			tops = []string{"single", "sentinel"}
		}
		fmt.Fprintf(stdout, "  %-12s %-18s %s\n", r.Name, strings.Join(tops, ","), r.Summary)
	}
	fmt.Fprintln(stdout, "\nFaults (--nemesis a,b or a+b to inject together):")
	for _, f := range faults.Registry {
		tops := "any"
		if len(f.Topologies) > 0 {
			tops = strings.Join(f.Topologies, ",")
		}
		fmt.Fprintf(stdout, "  %-22s %-9s %s\n", f.Name, tops, f.Summary)
	}
	return 0
}
