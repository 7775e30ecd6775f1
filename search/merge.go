package search

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// A campaign spreads one search over machines as suites do: each shard
// (explore --shard i/n) is a search of its own with its own draws, and a
// merge joins their records (harness explore merge) into one: every run,
// the first finding of each kind, each property's closest call, the
// features reached and the corpora kept.

// ExploreSource is a search a merge joined.
type ExploreSource struct {
	// Label names it in the merge's runs: its directory's name, which
	// carries its shard.
	Label    string  `json:"label"`
	Dir      string  `json:"dir"`
	Strategy string  `json:"strategy"`
	Seed     int64   `json:"seed"`
	Shard    string  `json:"shard,omitempty"`
	Runs     int     `json:"runs"`
	Seconds  float64 `json:"seconds"`
}

// ShardSeed is the seed shard i of n searches with: n shards under one
// seed are n different searches, and shard 1/1 is the unsharded search.
func ShardSeed(seed int64, i, n int) int64 { return seed*int64(n) + int64(i-1) }

// ParseShard reads "i/n" (1 ≤ i ≤ n).
func ParseShard(s string) (i, n int, err error) {
	if _, err := fmt.Sscanf(s, "%d/%d", &i, &n); err != nil || fmt.Sprintf("%d/%d", i, n) != s || n < 1 || i < 1 || i > n {
		return 0, 0, fmt.Errorf("--shard must be i/n with 1 ≤ i ≤ n, got %q", s)
	}
	return i, n, nil
}

// ReadExplored reads a search's record from its directory.
func ReadExplored(dir string) (ExploredRun, error) {
	b, err := os.ReadFile(filepath.Join(dir, ExploreFile))
	if err != nil {
		if os.IsNotExist(err) {
			return ExploredRun{}, fmt.Errorf("%s is not a search's directory: it has no %s", dir, ExploreFile)
		}
		return ExploredRun{}, err
	}
	var ex Explored
	if err := json.Unmarshal(b, &ex); err != nil {
		return ExploredRun{}, fmt.Errorf("%s: %v", filepath.Join(dir, ExploreFile), err)
	}
	return ExploredRun{Explored: ex, Dir: dir}, nil
}

// Merge joins searches of one lock on one topology and workload. Its runs
// are every search's, numbered anew in the order they ended, each counted
// from its own search's start (shards run side by side); a kind's finding
// is its earliest one that was shrunk to a minimal scenario, else its
// earliest; a property's closest call is the smallest; the features
// reached are summed and the corpora joined, a schedule kept by two
// searches kept once.
func Merge(list []ExploredRun) (Explored, error) {
	if len(list) == 0 {
		return Explored{}, fmt.Errorf("nothing to merge")
	}
	first := list[0]
	out := Explored{Lock: first.Lock, Topology: first.Topology, Workload: first.Workload, Want: first.Want,
		Strategy: first.Strategy, Budget: first.Budget, Reached: map[string]int{}}
	seen := map[string]bool{}
	var strategies, budgets []string
	// Runs are numbered anew once all are in: until then a finding and a
	// closest call keep where they came from.
	type origin struct {
		search string
		run    int
	}
	renumber := map[origin]int{}
	var findings []ExploreFinding
	var closest []ClosestCall
	var findingFrom, closestFrom []origin
	for _, ex := range list {
		if ex.Lock != first.Lock || ex.Topology != first.Topology || ex.Workload != first.Workload {
			return Explored{}, fmt.Errorf("cannot merge %s (%s on %s, workload %s) with %s (%s on %s, workload %s): a merge joins searches of one lock on one topology and workload",
				first.Dir, first.Lock, first.Topology, first.Workload, ex.Dir, ex.Lock, ex.Topology, ex.Workload)
		}
		if !slices.Equal(ex.Want, first.Want) {
			return Explored{}, fmt.Errorf("cannot merge %s (seeking %s) with %s (seeking %s): their findings were sought differently",
				first.Dir, sought(first.Want), ex.Dir, sought(ex.Want))
		}
		abs, _ := filepath.Abs(ex.Dir)
		if seen[abs] {
			return Explored{}, fmt.Errorf("%s is named twice, or is a search a merge named holds already", ex.Dir)
		}
		seen[abs] = true
		for _, src := range ex.Sources {
			// A merge's own searches must not be counted twice.
			held, _ := filepath.Abs(src.Dir)
			if seen[held] {
				return Explored{}, fmt.Errorf("%s is named twice, or is a search a merge named holds already", src.Dir)
			}
			seen[held] = true
		}
		label := filepath.Base(ex.Dir)
		for n := 2; slices.ContainsFunc(out.Sources, func(s ExploreSource) bool { return s.Label == label }); n++ {
			label = fmt.Sprintf("%s (%d)", filepath.Base(ex.Dir), n)
		}
		out.Sources = append(out.Sources, ExploreSource{Label: label, Dir: ex.Dir, Strategy: ex.Strategy, Seed: ex.Seed, Shard: ex.Shard, Runs: len(ex.Runs), Seconds: ex.Seconds})
		strategies, budgets = append(strategies, ex.Strategy), append(budgets, ex.Budget)
		for _, f := range ex.Faults {
			if !slices.Contains(out.Faults, f) {
				out.Faults = append(out.Faults, f)
			}
		}
		out.Seconds = max(out.Seconds, ex.Seconds)
		out.Interrupted = out.Interrupted || ex.Interrupted
		for _, r := range ex.Runs {
			r.Search, r.SearchRun = label, r.N
			out.Runs = append(out.Runs, r)
		}
		for f, n := range ex.Reached {
			out.Reached[f] += n
		}
		for _, k := range ex.Kept {
			if k.Search == "" {
				k.Search = label
			}
			out.Kept = append(out.Kept, k)
		}
		for _, f := range ex.Findings {
			i := slices.IndexFunc(findings, func(o ExploreFinding) bool { return o.Anomaly == f.Anomaly })
			switch {
			case i < 0:
				findings, findingFrom = append(findings, f), append(findingFrom, origin{label, f.Run})
			case f.Minimal != "" && findings[i].Minimal == "",
				(f.Minimal != "") == (findings[i].Minimal != "") && f.Seconds < findings[i].Seconds:
				findings[i], findingFrom[i] = f, origin{label, f.Run}
			}
		}
		for _, c := range ex.Closest {
			i := slices.IndexFunc(closest, func(o ClosestCall) bool { return o.Property == c.Property })
			switch {
			case i < 0:
				closest, closestFrom = append(closest, c), append(closestFrom, origin{label, c.Run})
			case c.Ms < closest[i].Ms:
				closest[i], closestFrom[i] = c, origin{label, c.Run}
			}
		}
	}
	if s := slices.Compact(slices.Sorted(slices.Values(strategies))); len(s) > 1 {
		out.Strategy = strings.Join(s, "+")
	}
	if b := slices.Compact(slices.Sorted(slices.Values(budgets))); len(b) > 1 {
		out.Budget = strings.Join(b, ", ")
	}
	slices.SortStableFunc(out.Runs, func(a, b ExploreRun) int { return cmp.Compare(a.Seconds, b.Seconds) })
	reached := map[string]bool{}
	for i := range out.Runs {
		r := &out.Runs[i]
		r.N = i + 1
		renumber[origin{r.Search, r.SearchRun}] = r.N
		r.New = 0
		for _, f := range r.Reached {
			if !reached[f] {
				reached[f] = true
				r.New++
			}
		}
		r.Features = len(reached)
	}
	// A run's parent, a finding's and a closest call's run are numbered
	// as the merge numbers them.
	for i := range out.Runs {
		if r := &out.Runs[i]; r.From > 0 {
			r.From = renumber[origin{r.Search, r.From}]
		}
	}
	for i := range findings {
		findings[i].Run = renumber[findingFrom[i]]
	}
	slices.SortFunc(findings, func(a, b ExploreFinding) int { return cmp.Compare(a.Seconds, b.Seconds) })
	for i := range closest {
		closest[i].Run = renumber[closestFrom[i]]
	}
	out.Findings, out.Closest = findings, closest
	out.Kept = slices.CompactFunc(sortedKept(out.Kept), func(a, b Kept) bool { return a.Genome.key() == b.Genome.key() })
	out.Features, out.Corpus = len(out.Reached), len(out.Kept)
	return out, nil
}

// sortedKept orders a corpus by schedule, so that one kept twice is side
// by side, the first search's first.
func sortedKept(kept []Kept) []Kept {
	slices.SortStableFunc(kept, func(a, b Kept) int { return strings.Compare(a.Genome.key(), b.Genome.key()) })
	return kept
}

func sought(want []string) string {
	if len(want) == 0 {
		return "any anomaly"
	}
	return strings.Join(want, ", ")
}
