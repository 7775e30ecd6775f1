package harness

import (
	"bytes"
	"context"
	"math/rand"
	"slices"
	"strings"
	"testing"

	"github.com/lockharness/lockharness/access"
	"github.com/lockharness/lockharness/cluster"
	"github.com/lockharness/lockharness/faults"
	"github.com/lockharness/lockharness/internal/options"
	"github.com/lockharness/lockharness/locks"
	"github.com/lockharness/lockharness/resource"
	"github.com/lockharness/lockharness/workloads"
)

// A fault, a recipe and a workload added outside their packages, each one
// value and one registration, are in `harness list` with where they apply,
// and the fault and the workload are in run's help and taken by --nemesis
// and --workload, with no other edit.
func TestAddedFaultAndRecipeAreListed(t *testing.T) {
	stall := faults.Fault{Name: "test-stall", Summary: "a fault of this test", Needs: []cluster.Capability{cluster.NodeControl},
		Run: func(context.Context, *faults.Env, *rand.Rand, options.Values) error { return nil }}
	saved := faults.Registry
	faults.Registry = append(slices.Clone(saved), stall)
	t.Cleanup(func() { faults.Registry = saved })
	cad, err := locks.Lookup("cad")
	if err != nil {
		t.Fatal(err)
	}
	mine := cad
	mine.Name, mine.Summary = "test-lock", "a recipe of this test"
	savedRecipes := slices.Clone(locks.Recipes)
	if err := locks.Register(mine); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { locks.Recipes = savedRecipes })
	tally := workloads.Workload{Name: "test-tally", Summary: "a workload of this test", Resources: []string{resource.Memory}}
	if err := workloads.Register(tally); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { workloads.Unregister(tally.Name) })

	var stdout, stderr bytes.Buffer
	if code := run([]string{"list"}, &stdout, &stderr); code != 0 {
		t.Fatalf("list: exit %d: %s", code, stderr.String())
	}
	for _, want := range []string{"test-stall", "a fault of this test", "test-lock", "a recipe of this test", "test-tally", "a workload of this test"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("harness list lacks %q", want)
		}
	}
	faultLines, recipeLines := 0, 0
	for _, line := range strings.Split(stdout.String(), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "test-stall") {
			faultLines++
			if !strings.Contains(line, "single") || strings.Contains(line, "target,") {
				t.Errorf("the added fault's line does not say where it applies (node-control: not on a target): %q", line)
			}
		}
		if fields := strings.Fields(line); len(fields) > 0 && fields[0] == "test-lock" {
			recipeLines++
			if len(fields) < 3 || fields[1] != "single,sentinel,cluster" || fields[2] != "primary" {
				t.Errorf("the added recipe's line does not say where it runs (where a primary is offered) and what it needs: %q", line)
			}
		}
	}
	if faultLines != 1 || recipeLines != 1 {
		t.Errorf("harness list has %d lines for the added fault and %d for the added recipe, want 1 each", faultLines, recipeLines)
	}
	stdout.Reset()
	stderr.Reset()
	run([]string{"run", "--help"}, &stdout, &stderr)
	if help := stdout.String() + stderr.String(); !strings.Contains(help, "test-stall") || !strings.Contains(help, "test-tally (a workload of this test; memory)") {
		t.Errorf("run --help's --nemesis or --workload does not name the added fault or workload:\n%s", help)
	}
	stderr.Reset()
	if code := run([]string{"run", "--nemesis", "test-stal", "--time-limit", "1s"}, &stdout, &stderr); code == 0 || !strings.Contains(stderr.String(), "did you mean test-stall?") {
		t.Errorf("a misspelt added fault: exit %d, %s", code, stderr.String())
	}
	stderr.Reset()
	if code := run([]string{"run", "--workload", "test-taly", "--time-limit", "1s"}, &stdout, &stderr); code == 0 || !strings.Contains(stderr.String(), "did you mean test-tally?") {
		t.Errorf("a misspelt added workload: exit %d, %s", code, stderr.String())
	}
}

// A recipe that needs what no topology offers would run nowhere: the
// binary built around it refuses to start, saying so.
func TestMainRefusesARecipeNoTopologyServes(t *testing.T) {
	cad, err := locks.Lookup("cad")
	if err != nil {
		t.Fatal(err)
	}
	savedRecipes := slices.Clone(locks.Recipes)
	t.Cleanup(func() { locks.Recipes = savedRecipes })
	nowhere := cad
	nowhere.Name, nowhere.Needs = "test-nowhere", []access.Capability{access.Majorities, access.Sentinels}
	if code := Main([]string{"version"}, nowhere); code != exitHarness {
		t.Errorf("Main with a recipe that needs majorities and sentinels: exit %d, want %d", code, exitHarness)
	}
}
