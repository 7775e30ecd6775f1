package reports

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockharness/lockharness/checker"
)

func TestRunDirsAndLatest(t *testing.T) {
	store := t.TempDir()
	now := time.Date(2026, 11, 29, 12, 0, 1, 0, time.UTC)
	a, err := NewRunDir(store, "clean-cad", now)
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewRunDir(store, "clean-cad", now)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(a) != "20261129T120001" || filepath.Base(b) != "20261129T120001-2" {
		t.Fatalf("run dirs %s and %s", a, b)
	}
	target, err := os.Readlink(filepath.Join(store, "latest"))
	if err != nil || target != filepath.Join("clean-cad", "20261129T120001-2") {
		t.Fatalf("latest -> %q, %v", target, err)
	}
}

// A lock's options (colons, '=') do not reach a directory's name, and two
// searches started in the same second get two directories.
func TestExploreDirsArePathSafeAndDistinct(t *testing.T) {
	store := t.TempDir()
	now := time.Date(2026, 12, 5, 8, 0, 0, 0, time.UTC)
	a, err := NewExploreDir(store, "redsync:setnx-on-extend:tries=1-redlock-guided", now)
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewExploreDir(store, "redsync:setnx-on-extend:tries=1-redlock-guided", now)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(a) != "redsync_setnx-on-extend_tries_1-redlock-guided-20261205T080000" || filepath.Base(b) != filepath.Base(a)+"-2" {
		t.Fatalf("explore dirs %s and %s", a, b)
	}
	run, err := NewRunDir(store, "explore-redsync:tries=1 x/y", now)
	if err != nil || filepath.Base(filepath.Dir(run)) != "explore-redsync_tries_1_x_y" {
		t.Fatalf("run dir %s, %v", run, err)
	}
}

// results.json is read by scripts: its top-level keys and the verdict's
// encoding are the contract.
func TestResultsContract(t *testing.T) {
	res := Results{Valid: checker.Invalid, Anomalies: map[string]int{"stale-write": 2}, Seed: 7,
		Spec: json.RawMessage(`{"lock":"cad"}`), Command: "harness run --seed 7", Checker: CheckerReport{Liveness: "ok"}}
	dir := t.TempDir()
	if err := WriteResults(dir, res); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(filepath.Join(dir, "results.json"))
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"valid", "anomalies", "fencing", "stats", "seed", "spec", "checker"} {
		if _, ok := top[k]; !ok {
			t.Errorf("results.json lacks %q", k)
		}
	}
	if string(top["valid"]) != "false" {
		t.Errorf("valid = %s, want false", top["valid"])
	}
	back, err := ReadResults(dir)
	if err != nil || back.Valid != checker.Invalid || back.Seed != 7 {
		t.Fatalf("read back %+v, %v", back, err)
	}
	var out bytes.Buffer
	Summary(&out, "run", "spec", back, dir)
	if !strings.Contains(out.String(), "INVALID (exit 1)") || !strings.Contains(out.String(), "stale-write 2") {
		t.Errorf("summary:\n%s", out.String())
	}
}
