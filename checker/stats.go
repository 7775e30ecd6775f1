package checker

import (
	"slices"

	"github.com/lockharness/lockharness/history"
)

// opStats counts each operation kind's outcomes and summarizes the latency
// of its completed operations, info included; an unfinished operation counts
// as info but has no latency.
func opStats(ops []history.Op) map[string]OpStats {
	stats := make(map[string]OpStats)
	latencies := make(map[string][]int64)
	for i := range ops {
		o := &ops[i]
		s := stats[o.F]
		switch o.Type {
		case history.OK:
			s.OK++
		case history.Fail:
			s.Fail++
		default:
			s.Info++
		}
		stats[o.F] = s
		if o.Finished() {
			latencies[o.F] = append(latencies[o.F], o.DoneT-o.InvT)
		}
	}
	for kind, ls := range latencies {
		slices.Sort(ls)
		s := stats[kind]
		s.P50Ms = ms(nearestRank(ls, 50))
		s.P99Ms = ms(nearestRank(ls, 99))
		s.MaxMs = ms(ls[len(ls)-1])
		stats[kind] = s
	}
	return stats
}

// nearestRank is the smallest value with at least pct percent of sorted at
// or below it.
func nearestRank(sorted []int64, pct int) int64 {
	rank := (pct*len(sorted) + 99) / 100
	return sorted[max(rank, 1)-1]
}

func ms(ns int64) float64 { return float64(ns) / 1e6 }
