package runner

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/faults"
	"github.com/lockharness/lockharness/reports"
	"github.com/lockharness/lockharness/scenario"
)

// TestReusedTopologyGivesTheFreshVerdict runs one catalog seed on a fresh
// topology, then the same seed again on it, reset, and wants the same
// verdict and the same kinds of anomaly; then a safe scenario of the same
// start on that topology (after the faults of both) stays valid. With the
// online audit on, as repro runs unsafe scenarios.
func TestReusedTopologyGivesTheFreshVerdict(t *testing.T) {
	needRedis(t)
	pool := NewTopologies()
	defer pool.Close()
	run := func(name string) reports.Results {
		t.Helper()
		e, err := scenario.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		e.Spec.Name, e.Spec.Seed = name, 2
		plan, err := e.Spec.Resolve()
		if err != nil {
			t.Fatal(err)
		}
		out, err := Run(context.Background(), plan, Options{Store: t.TempDir(), WorkerBin: workerBin, StopOn: e.Expect.StopOn(), Reuse: pool})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if met, why := e.Expect.Met(out.Results); !met {
			t.Errorf("%s (%s): %s", name, out.Results.Provenance.Topology, why)
		}
		return out.Results
	}
	fresh := run("gc-pause")
	reused := run("gc-pause")
	if fresh.Provenance.Topology != "fresh" || !strings.HasPrefix(reused.Provenance.Topology, "reused the single topology") {
		t.Fatalf("topology of the first run %q, of the second %q", fresh.Provenance.Topology, reused.Provenance.Topology)
	}
	if fresh.Valid != reused.Valid || !maps.Equal(kinds(fresh), kinds(reused)) {
		t.Errorf("fresh: %s %v; reused: %s %v", fresh.Valid, fresh.Anomalies, reused.Valid, reused.Anomalies)
	}
	if fresh.StoppedEarly == "" || reused.StoppedEarly == "" {
		t.Errorf("the online audit did not stop the runs: %q, %q", fresh.StoppedEarly, reused.StoppedEarly)
	}
	clean := run("clean-cad")
	if clean.Valid != checker.Valid || !strings.Contains(clean.Provenance.Topology, "run 3 on it") {
		t.Errorf("clean-cad after two gc-pause runs on one topology: %s, %q", clean.Valid, clean.Provenance.Topology)
	}
}

// kinds are the anomalies a run counted at least once.
func kinds(r reports.Results) map[string]bool {
	out := map[string]bool{}
	for name, n := range r.Anomalies {
		if n > 0 {
			out[name] = true
		}
	}
	return out
}

// TestSparesAreStartedAheadAndCleanedUp: with three runs planned one at a
// time, the first starts its own topology while a spare starts for the
// second, which gets it ready; a spare no run took is stopped at Close and
// its directory removed, while the one a run took stays.
func TestSparesAreStartedAheadAndCleanedUp(t *testing.T) {
	needRedis(t)
	e, err := scenario.Lookup("clean-cad")
	if err != nil {
		t.Fatal(err)
	}
	plan, err := e.Spec.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	// As if its faults moved roles, which a single node's cannot: the
	// mechanism is the same on every topology, and one node starts fast.
	if plan.Nemesis, err = faults.Parse("partition-primary"); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), ".spares")
	pool := NewTopologies()
	defer pool.Close()
	pool.expect(plan.Cluster, 3, 1, dir)
	logf := func(format string, args ...any) { t.Logf(format, args...) }
	if k, how, _ := pool.take(context.Background(), plan, logf); k != nil {
		t.Fatalf("the first run got a topology (%s); it starts its own", how)
	}
	pool.replenish(plan.Cluster) // as the first run does once its own is up
	k, how, _ := pool.take(context.Background(), plan, logf)
	if k == nil || !strings.Contains(how, "a spare single topology started ahead") {
		t.Fatalf("the second run got %v (%q), want the spare", k, how)
	}
	defer k.close()
	if n := k.cl.Nodes[0]; !n.Running() {
		t.Fatalf("the spare's node %s is not running", n.Name())
	}
	pool.Close()
	left, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 1 || filepath.Join(dir, left[0].Name()) != k.dir {
		t.Errorf("after Close, %s holds %v; want only the taken spare's %s", dir, left, k.dir)
	}
}

// Before runs alone, Trim stops what the suite kept but one topology of
// each start those runs take: the rest would run beside them.
func TestTrimKeepsOneOfEachStartToCome(t *testing.T) {
	needRedis(t)
	plan := func(name string) scenario.Plan {
		e, err := scenario.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		p, err := e.Spec.Resolve()
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	single, redlock := plan("clean-cad"), plan("redlock-clean")
	pool := NewTopologies()
	defer pool.Close()
	var kept []*keptTopology
	for _, p := range []scenario.Plan{single, single, redlock} {
		k := &keptTopology{cl: p.Cluster.Fresh(), net: faults.NewNetwork(), dir: t.TempDir()}
		if err := k.cl.Start(context.Background(), filepath.Join(k.dir, "nodes"), k.net.Proxy); err != nil {
			k.close()
			t.Fatal(err)
		}
		kept = append(kept, k)
		pool.give(k)
	}
	pool.Trim([]scenario.Plan{single, single})
	if len(pool.idle) != 1 || pool.idle[0] != kept[0] {
		t.Fatalf("kept %d topologies, want the first single one", len(pool.idle))
	}
	for i, k := range kept {
		if running := k.cl.Nodes[0].Running(); running != (i == 0) {
			t.Errorf("topology %d (%s): node running %v after Trim", i, k.cl.Topology, running)
		}
	}
}
