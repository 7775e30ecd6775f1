package harness

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockharness/lockharness/reports"
)

// TestSuiteMergeWritesOneSuite: `suite merge` joins two shards' directories
// into one under --store with results.json, index.html and junit.xml, exits
// 1 when a run missed, and refuses a split with a part missing.
func TestSuiteMergeWritesOneSuite(t *testing.T) {
	root := t.TempDir()
	yes, no := true, false
	var dirs []string
	for i, met := range []*bool{&yes, &no} {
		dir := filepath.Join(root, "part", string(rune('1'+i)))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		s := reports.Suite{Name: "quick", Planned: 1, Complete: true, Shard: []string{"1/2", "2/2"}[i],
			Rows: []reports.SuiteRow{{Scenario: []string{"a", "b"}[i], Expect: "safe", Order: i, Cells: []reports.SuiteCell{{Seed: 1, Verdict: "valid", Met: met}}}}}
		if *met {
			s.Met, s.Passed = 1, true
		} else {
			s.Missed = 1
		}
		if err := reports.WriteSuite(dir, s); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, dir)
	}
	store := filepath.Join(root, "store")
	var stdout, stderr bytes.Buffer
	if code := run(append([]string{"suite", "merge", "--store", store}, dirs...), &stdout, &stderr); code != 1 {
		t.Fatalf("merge exit %d, want 1 (a run missed): %s %s", code, stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), "merged from 2 shards FAILED: 1 met, 1 missed") {
		t.Errorf("merge said %q", stdout.String())
	}
	merged, _ := filepath.Glob(filepath.Join(store, "suites", "*"))
	if len(merged) != 1 {
		t.Fatalf("merged suites: %v", merged)
	}
	for _, f := range []string{"results.json", "index.html", "junit.xml", "scorecard.md"} {
		if _, err := os.Stat(filepath.Join(merged[0], f)); err != nil {
			t.Errorf("the merged suite has no %s: %v", f, err)
		}
	}
	stdout.Reset()
	stderr.Reset()
	if code := run([]string{"suite", "merge", "--store", store, dirs[0]}, &stdout, &stderr); code != exitUsage || !strings.Contains(stderr.String(), "shard 2/2 missing") {
		t.Errorf("merging one part of two: exit %d, %q", code, stderr.String())
	}
	if after, _ := filepath.Glob(filepath.Join(store, "suites", "*")); len(after) != 1 {
		t.Errorf("a refused merge left a directory: %v", after)
	}
}
