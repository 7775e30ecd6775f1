package checker

import (
	"slices"

	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/internal/hugepages"
)

// opStats counts each operation kind's outcomes and summarizes the latency
// of its completed operations, info included; an unfinished operation counts
// as info but has no latency.
func opStats(ops []history.Op, huge bool) map[string]OpStats {
	type kind struct {
		f         string
		stats     OpStats
		finished  int
		latencies []int64
	}
	// A handful of kinds: a slice searched from the last one used beats
	// hashing the kind of each of a soak's operations.
	var kinds []kind
	last := -1
	kindOf := func(o *history.Op) *kind {
		if last < 0 || kinds[last].f != o.F {
			last = slices.IndexFunc(kinds, func(k kind) bool { return k.f == o.F })
			if last < 0 {
				kinds = append(kinds, kind{f: o.F})
				last = len(kinds) - 1
			}
		}
		return &kinds[last]
	}
	finished := 0
	for i := range ops {
		o := &ops[i]
		k := kindOf(o)
		switch o.Type {
		case history.OK:
			k.stats.OK++
		case history.Fail:
			k.stats.Fail++
		default:
			k.stats.Info++
		}
		if o.Finished() {
			k.finished++
			finished++
		}
	}
	// The kinds' latencies share one array, counted out first: grown kind
	// by kind, a soak's made twice their size in copies.
	all := make([]int64, finished)
	if huge {
		hugepages.Advise(all)
	}
	for i := range kinds {
		k := &kinds[i]
		k.latencies, all = all[:0:k.finished], all[k.finished:]
	}
	for i := range ops {
		if o := &ops[i]; o.Finished() {
			k := kindOf(o)
			k.latencies = append(k.latencies, o.DoneT-o.InvT)
		}
	}
	stats := make(map[string]OpStats, len(kinds))
	for _, k := range kinds {
		if ls := k.latencies; len(ls) > 0 {
			k.stats.P50Ms = ms(nearestRank(ls, 50))
			k.stats.P99Ms = ms(nearestRank(ls, 99))
			k.stats.MaxMs = ms(slices.Max(ls))
		}
		stats[k.f] = k.stats
	}
	return stats
}

// nearestRank is the smallest value with at least pct percent of values
// at or below it. It reorders values.
func nearestRank(values []int64, pct int) int64 {
	rank := (pct*len(values) + 99) / 100
	return selectKth(values, max(rank, 1)-1)
}

// selectKth is the value that would be at index k if values were sorted,
// found by quickselect, which a million latencies need rather than a sort;
// it reorders values.
func selectKth(values []int64, k int) int64 {
	lo, hi := 0, len(values)-1
	for lo < hi {
		// The median of three as the pivot; Hoare's partition.
		mid := lo + (hi-lo)/2
		a, b, c := values[lo], values[mid], values[hi]
		pivot := max(min(a, b), min(max(a, b), c))
		i, j := lo, hi
		for i <= j {
			for values[i] < pivot {
				i++
			}
			for values[j] > pivot {
				j--
			}
			if i <= j {
				values[i], values[j] = values[j], values[i]
				i++
				j--
			}
		}
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return values[k]
		}
	}
	return values[k]
}

func ms(ns int64) float64 { return float64(ns) / 1e6 }
