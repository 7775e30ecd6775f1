package cluster

import (
	"fmt"

	"github.com/lockharness/lockharness/internal/hashslot"
)

// slotRange is a contiguous range of slots, both ends included.
type slotRange struct{ lo, hi int }

func (r slotRange) String() string { return fmt.Sprintf("%d-%d", r.lo, r.hi) }

func (r slotRange) has(slot int) bool { return slot >= r.lo && slot <= r.hi }

// shardRanges divides the slots evenly over shards, in order.
func shardRanges(shards int) []slotRange {
	out := make([]slotRange, shards)
	for s := range out {
		out[s] = slotRange{s * hashslot.Count / shards, (s+1)*hashslot.Count/shards - 1}
	}
	return out
}

// KeyNames are n lock keys named base:<j>. On a cluster topology they are
// spread over the shards, key i in shard i mod shards, so that a fault on
// one shard leaves the keys of the others alone; stores is where a lock
// on a key keeps its grant (a recipe's own key beside it, or the key
// itself when nil), whose slot decides. Elsewhere, for a cluster size the
// plan will refuse, and for a base key with a hash tag (every key in its
// slot), they are base:0 … base:n-1. The spec needs no started topology.
func KeyNames(s Spec, base string, n int, stores func(key string) string) []string {
	if n <= 0 {
		return nil
	}
	shards := clusterShards(s)
	if s.Topology != RedisCluster || shards < 3 || shards > maxShards {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("%s:%d", base, i)
		}
		return out
	}
	if stores == nil {
		stores = func(key string) string { return key }
	}
	ranges := shardRanges(shards)
	// Candidates base:0, base:1, ... go to the shard their slot is in,
	// until each shard has its share.
	want := make([]int, shards)
	for i := 0; i < n; i++ {
		want[i%shards]++
	}
	byShard := make([][]string, shards)
	// A base key with a hash tag puts every candidate in the tag's slot:
	// the search gives up and the keys stay in that one shard.
	limit := 64*n*shards + 1024
	for j, found := 0, 0; found < n; j++ {
		if j == limit {
			return KeyNames(Spec{}, base, n, nil)
		}
		name := fmt.Sprintf("%s:%d", base, j)
		slot := hashslot.Of(stores(name))
		for shard, r := range ranges {
			if r.has(slot) && len(byShard[shard]) < want[shard] {
				byShard[shard] = append(byShard[shard], name)
				found++
			}
		}
	}
	out := make([]string, n)
	for i := range out {
		out[i] = byShard[i%shards][i/shards]
	}
	return out
}
