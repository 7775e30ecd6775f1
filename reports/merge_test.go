package reports

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestMergeSuitesIsTheUnshardedMatrix splits a suite's rows between two
// shards as suite --shard does, writes each, merges them and wants the
// unsharded suite's rows, counts and verdict, with every run link pointing
// from the merged directory to the shard's run.
func TestMergeSuitesIsTheUnshardedMatrix(t *testing.T) {
	yes, no := true, false
	whole := Suite{Name: "quick", Started: time.Unix(100, 0).UTC(), Planned: 4, Met: 3, Missed: 1, Complete: true}
	for i, verdict := range []string{"valid", "invalid", "invalid", "valid"} {
		met := &yes
		if i == 2 {
			met = &no
		}
		whole.Rows = append(whole.Rows, SuiteRow{Scenario: "row" + string(rune('a'+i)), Spec: "spec", Expect: "safe", Order: i,
			Cells: []SuiteCell{{Seed: 1, Verdict: verdict, Met: met, Run: "../../row/" + verdict}}})
	}
	root := t.TempDir()
	var dirs []string
	for shard := 0; shard < 2; shard++ {
		part := Suite{Name: "quick", Started: time.Unix(int64(100+shard), 0).UTC(), Complete: true, Shard: []string{"1/2", "2/2"}[shard]}
		for _, r := range whole.Rows {
			if r.Order%2 == shard {
				part.Rows = append(part.Rows, r)
				part.Planned++
				if *r.Cells[0].Met {
					part.Met++
				} else {
					part.Missed++
				}
			}
		}
		dir := filepath.Join(root, "machine"+part.Shard[:1], "suites", "s")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := WriteSuite(dir, part); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, dir)
	}
	out := filepath.Join(root, "merged", "suites", "m")
	got, err := MergeSuites([]string{dirs[1], dirs[0]}, out)
	if err != nil {
		t.Fatal(err)
	}
	if got.Met != 3 || got.Missed != 1 || got.Planned != 4 || !got.Complete || got.Passed {
		t.Errorf("merged counts: %+v", got)
	}
	var names []string
	for i, r := range got.Rows {
		names = append(names, r.Scenario)
		if r.Cells[0].Verdict != whole.Rows[i].Cells[0].Verdict {
			t.Errorf("row %s: verdict %s, want %s", r.Scenario, r.Cells[0].Verdict, whole.Rows[i].Cells[0].Verdict)
		}
		shardDir := dirs[i%2]
		want, _ := filepath.Rel(out, filepath.Join(shardDir, whole.Rows[i].Cells[0].Run))
		if r.Cells[0].Run != want {
			t.Errorf("row %s: run %s, want %s", r.Scenario, r.Cells[0].Run, want)
		}
	}
	if !reflect.DeepEqual(names, []string{"rowa", "rowb", "rowc", "rowd"}) {
		t.Errorf("rows %v, want the unsharded order", names)
	}
	for _, tc := range []struct {
		dirs []string
		want string
	}{
		{dirs[:1], "shard 2/2 missing"},
		{[]string{dirs[0], dirs[0]}, "given twice"},
	} {
		if _, err := MergeSuites(tc.dirs, out); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("merge %v: %v, want %q", tc.dirs, err, tc.want)
		}
	}
	// A part run with another lock is another suite.
	other, _ := ReadSuite(dirs[1])
	other.Overrides = "--lock redlock"
	otherDir := filepath.Join(root, "other")
	os.MkdirAll(otherDir, 0o755)
	if err := WriteSuite(otherDir, other); err != nil {
		t.Fatal(err)
	}
	if _, err := MergeSuites([]string{dirs[0], otherDir}, out); err == nil || !strings.Contains(err.Error(), "run alike only") {
		t.Errorf("merging parts run with other overrides: %v", err)
	}
	unsharded := filepath.Join(root, "plain")
	os.MkdirAll(unsharded, 0o755)
	if err := WriteSuite(unsharded, whole); err != nil {
		t.Fatal(err)
	}
	if _, err := MergeSuites([]string{unsharded}, out); err == nil || !strings.Contains(err.Error(), "without --shard") {
		t.Errorf("merging an unsharded suite: %v", err)
	}
}
