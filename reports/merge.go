package reports

import (
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// MergeSuites joins the results of a suite's shards (suite --shard i/n),
// read from dirs, into one suite as an unsharded run would have written it
// to out: rows in the whole suite's order, each cell's run directory
// relative to out. It refuses shards of different suites, of different
// splits, a shard given twice and a split with a shard missing, naming it.
func MergeSuites(dirs []string, out string) (Suite, error) {
	if len(dirs) == 0 {
		return Suite{}, fmt.Errorf("no shard directories to merge")
	}
	var merged Suite
	seen := map[int]string{}
	of := 0
	absOut, err := filepath.Abs(out)
	if err != nil {
		return Suite{}, err
	}
	for _, dir := range dirs {
		s, err := ReadSuite(dir)
		if err != nil {
			return Suite{}, fmt.Errorf("%s: %w", dir, err)
		}
		i, n, err := parseShard(s.Shard)
		if err != nil {
			return Suite{}, fmt.Errorf("%s: %w", dir, err)
		}
		switch {
		case merged.Name == "":
			merged = Suite{Name: s.Name, Started: s.Started, Complete: true, Overrides: s.Overrides}
			of = n
		case s.Name != merged.Name:
			return Suite{}, fmt.Errorf("%s is of suite %q, %s of %q: shards of one suite only", dir, s.Name, dirs[0], merged.Name)
		case n != of:
			return Suite{}, fmt.Errorf("%s is shard %s, %s of %d shards: one split only", dir, s.Shard, dirs[0], of)
		case s.Overrides != merged.Overrides:
			return Suite{}, fmt.Errorf("%s ran with %q, %s with %q: parts of one suite run alike only", dir, s.Overrides, dirs[0], merged.Overrides)
		}
		for _, r := range s.Rows {
			if r.Order%n != i-1 {
				return Suite{}, fmt.Errorf("%s: row %s (place %d in the suite) is not shard %s's", dir, r.Scenario, r.Order, s.Shard)
			}
		}
		if prev, dup := seen[i]; dup {
			return Suite{}, fmt.Errorf("shard %d/%d given twice: %s and %s", i, n, prev, dir)
		}
		seen[i] = dir
		if s.Started.Before(merged.Started) {
			merged.Started = s.Started
		}
		merged.WallSec = max(merged.WallSec, s.WallSec)
		merged.Planned += s.Planned
		merged.Complete = merged.Complete && s.Complete
		absDir, err := filepath.Abs(dir)
		if err != nil {
			return Suite{}, err
		}
		for _, r := range s.Rows {
			r.Cells = slices.Clone(r.Cells)
			for j := range r.Cells {
				if run := r.Cells[j].Run; run != "" && !filepath.IsAbs(run) {
					if rel, err := filepath.Rel(absOut, filepath.Join(absDir, run)); err == nil {
						r.Cells[j].Run = rel
					}
				}
			}
			merged.Rows = append(merged.Rows, r)
		}
		merged.Merged = append(merged.Merged, dir)
	}
	var missing []string
	for i := 1; i <= of; i++ {
		if _, ok := seen[i]; !ok {
			missing = append(missing, fmt.Sprintf("%d/%d", i, of))
		}
	}
	if len(missing) > 0 {
		return Suite{}, fmt.Errorf("shard %s missing: merge every shard of the split", strings.Join(missing, ", "))
	}
	sort.SliceStable(merged.Rows, func(a, b int) bool { return merged.Rows[a].Order < merged.Rows[b].Order })
	merged.Tally()
	return merged, nil
}

// parseShard reads "i/n".
func parseShard(s string) (i, n int, err error) {
	a, b, ok := strings.Cut(s, "/")
	if ok {
		i, err = strconv.Atoi(a)
		if err == nil {
			n, err = strconv.Atoi(b)
		}
	}
	if !ok || err != nil || n < 1 || i < 1 || i > n {
		if s == "" {
			return 0, 0, fmt.Errorf("not a shard's results (it was run without --shard)")
		}
		return 0, 0, fmt.Errorf("shard %q is not i/n with 1 <= i <= n", s)
	}
	return i, n, nil
}

// ParseShard reads suite --shard's "i/n" (1 <= i <= n).
func ParseShard(s string) (i, n int, err error) { return parseShard(s) }
