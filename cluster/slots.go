package cluster

import (
	"fmt"
	"strings"
)

// SlotCount is the number of hash slots a Redis Cluster divides its keys into.
const SlotCount = 16384

// Slot is the hash slot of a key, as Redis Cluster computes it: CRC16
// (XMODEM) of the key, or of its hash tag (the text between the first {
// and the next }, when not empty), modulo 16384.
func Slot(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	var crc uint16
	for k := 0; k < len(key); k++ {
		crc ^= uint16(key[k]) << 8
		for b := 0; b < 8; b++ {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc) % SlotCount
}

// HasHashTag reports whether only part of the key decides its slot.
func HasHashTag(key string) bool {
	i := strings.IndexByte(key, '{')
	return i >= 0 && strings.IndexByte(key[i+1:], '}') > 0
}

// SameSlot is a key beside key in key's hash slot, named key+suffix: the
// key's own hash tag when it has one, else the whole key made its tag.
func SameSlot(key, suffix string) string {
	if HasHashTag(key) {
		return key + suffix
	}
	return "{" + key + "}" + suffix
}

// slotRange is a contiguous range of slots, both ends included.
type slotRange struct{ lo, hi int }

func (r slotRange) String() string { return fmt.Sprintf("%d-%d", r.lo, r.hi) }

func (r slotRange) has(slot int) bool { return slot >= r.lo && slot <= r.hi }

// shardRanges divides the slots evenly over shards, as redis-cli --cluster
// create does.
func shardRanges(shards int) []slotRange {
	out := make([]slotRange, shards)
	for s := range out {
		out[s] = slotRange{s * SlotCount / shards, (s+1)*SlotCount/shards - 1}
	}
	return out
}

// KeyNames are n lock keys named base:<j>. On a cluster topology they are
// spread over the shards, key i in shard i mod shards, so that a fault on
// one shard leaves the keys of the others alone; elsewhere they are
// base:0 … base:n-1. The spec needs no started topology.
func KeyNames(s Spec, base string, n int) []string {
	if n <= 0 {
		return nil
	}
	if s.Topology != RedisCluster {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("%s:%d", base, i)
		}
		return out
	}
	ranges := shardRanges(clusterShards(s))
	var out []string
	used := map[int]bool{}
	for i := 0; i < n; i++ {
		want := ranges[i%len(ranges)]
		for j := 0; ; j++ {
			name := fmt.Sprintf("%s:%d", base, j)
			if !used[j] && want.has(Slot(name)) {
				used[j] = true
				out = append(out, name)
				break
			}
		}
	}
	return out
}
