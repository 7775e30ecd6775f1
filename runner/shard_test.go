package runner

import (
	"testing"
)

// TestShardsSplitTheSuite: the parts of every split of every suite are
// disjoint, keep each row's seeds together and cover the whole suite.
func TestShardsSplitTheSuite(t *testing.T) {
	for _, name := range Suites {
		plan, err := PlanSuite(name)
		if err != nil {
			t.Fatal(err)
		}
		type run struct {
			row  string
			seed int64
		}
		for _, n := range []int{1, 2, 3, 7} {
			seen := map[run]int{}
			rowShard := map[string]int{}
			for i := 1; i <= n; i++ {
				part, err := Shard(plan, i, n)
				if err != nil {
					t.Fatal(err)
				}
				for _, p := range part {
					seen[run{p.Row, p.Spec.Seed}]++
					if s, ok := rowShard[p.Row]; ok && s != i {
						t.Fatalf("%s %d/%d: row %s is in shards %d and %d", name, i, n, p.Row, s, i)
					}
					rowShard[p.Row] = i
				}
			}
			for _, p := range plan {
				if seen[run{p.Row, p.Spec.Seed}] != 1 {
					t.Fatalf("%s split %d: %s seed %d is in %d shards", name, n, p.Row, p.Spec.Seed, seen[run{p.Row, p.Spec.Seed}])
				}
			}
			if len(seen) != len(plan) {
				t.Fatalf("%s split %d: %d runs in the shards, %d planned", name, n, len(seen), len(plan))
			}
		}
	}
	for _, bad := range [][2]int{{0, 2}, {3, 2}, {1, 0}} {
		if _, err := Shard(nil, bad[0], bad[1]); err == nil {
			t.Errorf("Shard %d/%d accepted", bad[0], bad[1])
		}
	}
}
