package search

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/reports"
	"github.com/lockharness/lockharness/runner"
	"github.com/lockharness/lockharness/scenario"
)

// fakeTry "breaks" the lock with a double grant under a kill-node, and
// gives every run an exclusivity margin that shrinks with its seed, so
// that searches differ in their closest calls.
func fakeTry(_ context.Context, spec scenario.Spec) (runner.Outcome, error) {
	res := reports.Results{Valid: checker.Valid, Anomalies: map[string]int{}}
	for _, st := range spec.Schedule {
		if strings.HasPrefix(st.Fault, "kill-node") {
			res.Anomalies[checker.DoubleGrant], res.Valid = 1, checker.Invalid
		}
	}
	res.Margins = []checker.Margin{{Property: checker.Exclusivity, Ms: float64(spec.Seed % 997)}}
	time.Sleep(time.Millisecond)
	return runner.Outcome{Results: res}, nil
}

// shard runs one shard of a campaign with fakeTry and writes it.
func shard(t *testing.T, store string, base scenario.Spec, i, n int) ExploredRun {
	t.Helper()
	s, err := NewSpace(base, "pause-client,latency,kill-node")
	if err != nil {
		t.Fatal(err)
	}
	ex := Explore(context.Background(), ExploreOptions{Space: s, Strategy: Guided, Budget: 300 * time.Millisecond, Seed: ShardSeed(7, i, n),
		Want: []string{checker.DoubleGrant}, Parallel: 1, Try: fakeTry})
	ex.Shard = fmt.Sprintf("%d/%d", i, n)
	dir, err := reports.NewExploreDir(store, fmt.Sprintf("%s-%s-guided-shard-%d-of-%d", base.Lock, base.Topology, i, n), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	out := ExploredRun{Explored: ex, Dir: dir}
	if err := WriteExplore(out); err != nil {
		t.Fatal(err)
	}
	return out
}

// A merge keeps every shard's runs, numbered anew in the order they
// ended, and points each finding and closest call at the run (and shard)
// that made it.
func TestMergeJoinsTheShardsOfACampaign(t *testing.T) {
	store := t.TempDir()
	base := scenario.Defaults()
	a, b := shard(t, store, base, 1, 2), shard(t, store, base, 2, 2)
	if a.Seed == b.Seed {
		t.Fatalf("both shards searched with seed %d", a.Seed)
	}
	merged, err := MergeDirs([]string{a.Dir, b.Dir})
	if err != nil {
		t.Fatal(err)
	}
	ex, err := WriteMerged(store, merged)
	if err != nil {
		t.Fatal(err)
	}
	if len(ex.Runs) != len(a.Runs)+len(b.Runs) || len(ex.Sources) != 2 {
		t.Fatalf("%d runs from %d and %d; %d sources", len(ex.Runs), len(a.Runs), len(b.Runs), len(ex.Sources))
	}
	from := map[string]ExploredRun{filepath.Base(a.Dir): a, filepath.Base(b.Dir): b}
	for i, r := range ex.Runs {
		src, ok := from[r.Search]
		if r.N != i+1 || !ok || src.Runs[r.SearchRun-1].Genome.key() != r.Genome.key() {
			t.Fatalf("run %d: #%d of %q #%d", i+1, r.N, r.Search, r.SearchRun)
		}
		if i > 0 && r.Seconds < ex.Runs[i-1].Seconds {
			t.Errorf("run #%d ended before #%d", r.N, r.N-1)
		}
		if r.From > 0 && ex.Runs[r.From-1].Search != r.Search {
			t.Errorf("run #%d's parent #%d is of another search", r.N, r.From)
		}
	}
	f := ex.FirstWanted()
	if f == nil {
		t.Fatal("the merge lost the double grant")
	}
	if got := ex.Runs[f.Run-1]; got.Genome.key() != f.Genome.key() || got.Found == "valid" {
		t.Errorf("the finding points at run #%d, %s (%s), not at its own %s", f.Run, got.Genome, got.Found, f.Genome)
	}
	for _, c := range ex.Closest {
		want := min(closestOf(a, c.Property), closestOf(b, c.Property))
		if c.Ms != want || ex.Runs[c.Run-1].Margins[c.Property] != c.Ms {
			t.Errorf("closest %s %.0f ms in run #%d (%v); the shards' best is %.0f", c.Property, c.Ms, c.Run, ex.Runs[c.Run-1].Margins, want)
		}
	}
	for feature, n := range ex.Reached {
		if n != a.Reached[feature]+b.Reached[feature] {
			t.Errorf("%s reached %d times, the shards %d and %d", feature, n, a.Reached[feature], b.Reached[feature])
		}
	}
	if ex.Features != len(ex.Reached) || ex.Runs[len(ex.Runs)-1].Features != ex.Features {
		t.Errorf("%d features, %d reached, the last run says %d", ex.Features, len(ex.Reached), ex.Runs[len(ex.Runs)-1].Features)
	}
	seen := map[string]bool{}
	for _, k := range ex.Kept {
		if seen[k.Genome.key()] {
			t.Errorf("%s kept twice", k.Genome)
		}
		seen[k.Genome.key()] = true
	}
	page, err := os.ReadFile(filepath.Join(ex.Dir, "explore.html"))
	if err != nil || !strings.Contains(string(page), `id="sources"`) || !strings.Contains(string(page), filepath.Base(b.Dir)) {
		t.Errorf("explore.html does not list the searches merged: %v", err)
	}
	again, err := ReadExplored(ex.Dir)
	if err != nil || len(again.Runs) != len(ex.Runs) || len(again.Kept) != len(ex.Kept) {
		t.Errorf("the merge does not read back: %v", err)
	}

	// A merge refuses what it cannot join, naming why.
	other := base
	other.Lock = "del"
	c := shard(t, store, other, 1, 1)
	for _, bad := range []struct {
		dirs []string
		says string
	}{
		{[]string{a.Dir, c.Dir}, "cannot merge " + a.Dir + " (cad on single, workload mutex) with " + c.Dir + " (del on single"},
		{[]string{a.Dir, a.Dir}, a.Dir + " is named twice"},
		{[]string{ex.Dir, a.Dir}, a.Dir + " is named twice, or is a search a merge named holds already"},
		{[]string{store}, store + " is not a search's directory: it has no explore.json"},
	} {
		if _, err := MergeDirs(bad.dirs); err == nil || !strings.Contains(err.Error(), bad.says) {
			t.Errorf("merge %v: %v, want %q", bad.dirs, err, bad.says)
		}
	}
}

func closestOf(ex ExploredRun, prop string) float64 {
	for _, c := range ex.Closest {
		if c.Property == prop {
			return c.Ms
		}
	}
	return 1e9
}

func TestParseShard(t *testing.T) {
	for s, ok := range map[string]bool{"1/1": true, "2/4": true, "0/2": false, "3/2": false, "1/0": false, "a/b": false, "1/2/3": false, "1/2x": false, "": false} {
		if _, _, err := ParseShard(s); (err == nil) != ok {
			t.Errorf("%q: %v", s, err)
		}
	}
	if ShardSeed(5, 1, 1) != 5 || ShardSeed(5, 1, 3) == ShardSeed(5, 2, 3) {
		t.Error("shard seeds")
	}
}
