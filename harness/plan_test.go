package harness

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lockharness/lockharness/internal/proc"
	"github.com/lockharness/lockharness/reports"
	"github.com/lockharness/lockharness/scenario"
)

// --plan resolves what a verb's runs need and starts none of them: the
// store stays unmade, no process is left, and a command line a real run
// refuses is refused with the same words and exit code.
func TestPlanResolvesWithoutStartingAndRefusesAsARunDoes(t *testing.T) {
	store := filepath.Join(t.TempDir(), "store")
	accepted := []struct {
		args []string
		runs int
		want []string
	}{
		{[]string{"run", "--topology", "sentinel", "--nemesis", "partition-primary,kill-node:delay=2s", "--seed", "7"}, 1,
			[]string{"nodes     n1 n2 n3; sentinels s1 s2 s3", "partition-primary (needs replication, failover: offered)", "kill-node:delay=2s (needs node-control: offered)", "--seed 7"}},
		// A scheduled row is re-run from the scenario that holds its
		// schedule.
		{[]string{"run", "--scenario", "redlock-drift-within-bound", "--seed", "3"}, 1,
			[]string{"step    partition-majorities", "re-run    harness run --scenario redlock-drift-within-bound ", "--seed 3 "}},
		{[]string{"repro", "failover-double-grant", "--seeds", "3"}, 3,
			[]string{"expect    unsafe: double-grant", "plan failover-double-grant, seed 3"}},
		{[]string{"suite", "quick", "--shard", "2/5"}, 0, []string{"expect"}},
		// A worker of one's own in the suite: rows it cannot take part in
		// (no fences, a topology it does not run on) are skipped.
		{[]string{"suite", "quick", "--lock", "exec", "--worker-cmd", scenario.RedisPyWorker}, 0, []string{"lock      redis-py-lock 4.3.4 (exec)"}},
		{[]string{"compare", "--locks", "cad,redsync", "--nemesis", "pause-client", "--seeds", "2"}, 8, []string{"lock      redsync"}},
		{[]string{"explore", "--lock", "redsync", "--topology", "redlock", "--nemesis", "partition-minority,clock-jump", "--seed", "5"}, 1,
			[]string{"partition-minority (needs majorities: offered)", "clock shim", "re-run    harness explore --lock redsync --nemesis partition-minority,clock-jump --store ", "--topology redlock --seed 5\n"}},
	}
	for _, c := range accepted {
		args := append(slices.Clone(c.args), "--plan", "--store", store)
		var stdout, stderr bytes.Buffer
		if code := run(args, &stdout, &stderr); code != 0 {
			t.Errorf("%v: exit %d, stderr %q", args, code, stderr.String())
			continue
		}
		for _, want := range c.want {
			if !strings.Contains(stdout.String(), want) {
				t.Errorf("%v: the plan lacks %q:\n%s", args, want, stdout.String())
			}
		}
		var doc plansJSON
		stdout.Reset()
		if code := run(append(args, "--json"), &stdout, &stderr); code != 0 {
			t.Errorf("%v --json: exit %d", args, code)
		}
		if err := json.Unmarshal(stdout.Bytes(), &doc); err != nil {
			t.Errorf("%v --json: %v: %q", args, err, stdout.String())
			continue
		}
		if doc.Verb != c.args[0] || len(doc.Runs) == 0 || c.runs > 0 && len(doc.Runs) != c.runs {
			t.Errorf("%v --json: verb %q, %d runs; want %q, %d", args, doc.Verb, len(doc.Runs), c.args[0], c.runs)
		}
		for _, d := range doc.Runs {
			if d.Topology == "" || len(d.Nodes) == 0 || d.Lock == "" || d.Command == "" {
				t.Errorf("%v --json: a run without its topology, nodes, lock or command: %+v", args, d)
			}
		}
	}
	if _, err := os.Stat(store); !os.IsNotExist(err) {
		t.Errorf("--plan made the store %s (%v)", store, err)
	}
	if n := proc.Live(); n != 0 {
		t.Errorf("--plan left %d processes", n)
	}

	fenced := t.TempDir()
	os.WriteFile(filepath.Join(fenced, "ours.toml"), []byte("name = \"ours-fenced\"\nexpect = \"safe\"\n\n[spec]\nlock = \"fenced\"\nworkload = \"inventory\"\nresource = \"postgres\"\nfencing = \"where\"\n"), 0o644)
	refused := [][]string{
		// Every row skipped would be a suite that passes saying nothing.
		{"suite", "--dir", fenced, "--lock", "naive"},
		{"run", "--nemesis", "partition-primary"},
		{"run", "--lock", "exec"},
		{"repro", "failover-double-grant", "--backend", "kubernetes"},
		{"compare", "--locks", "cad", "--nemesis", "gremlins"},
		{"explore", "--lock", "redsync", "--topology", "single", "--nemesis", "partition-majorities"},
	}
	for _, args := range refused {
		var planOut, planErr, realOut, realErr bytes.Buffer
		planCode := run(append(slices.Clone(args), "--plan", "--store", store), &planOut, &planErr)
		realCode := run(append(slices.Clone(args), "--store", store), &realOut, &realErr)
		if planCode != exitUsage || planCode != realCode || planErr.String() != realErr.String() || planOut.Len() > 0 {
			t.Errorf("%v: --plan exit %d, stderr %q, stdout %q; the run: exit %d, stderr %q", args, planCode, planErr.String(), planOut.String(), realCode, realErr.String())
		}
	}
}

// The command a plan says re-runs a run is the one the run records.
func TestPlanNamesTheCommandTheRunRecords(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a redis-server")
	}
	store := t.TempDir()
	args := []string{"run", "--time-limit", "1s", "--seed", "11", "--clients", "2", "--quiet", "--store", store}
	var stdout, stderr bytes.Buffer
	if code := run(append(slices.Clone(args), "--plan", "--json"), &stdout, &stderr); code != 0 {
		t.Fatalf("--plan: exit %d, %s", code, stderr.String())
	}
	var doc struct{ Runs []scenario.Described }
	if err := json.Unmarshal(stdout.Bytes(), &doc); err != nil || len(doc.Runs) != 1 {
		t.Fatalf("--plan --json: %v, %q", err, stdout.String())
	}
	stdout.Reset()
	if code := run(args, &stdout, &stderr); code != 0 {
		t.Fatalf("the run: exit %d, %s", code, stderr.String())
	}
	dirs, _ := filepath.Glob(filepath.Join(store, "*", "*", "results.json"))
	if len(dirs) != 1 {
		t.Fatalf("the run left %d results", len(dirs))
	}
	res, err := reports.ReadResults(filepath.Dir(dirs[0]))
	if err != nil {
		t.Fatal(err)
	}
	if want := doc.Runs[0].Command; res.Command != want {
		t.Errorf("the run recorded\n  %s\nthe plan said\n  %s", res.Command, want)
	}
}
