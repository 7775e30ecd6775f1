// Package hashslot is Redis Cluster's mapping of keys to hash slots, which
// decides the shard a key lives in: the topology spreads lock keys over
// shards with it, and recipes keep the keys one script touches in one slot.
package hashslot

import "strings"

// Count is the number of hash slots a Redis Cluster divides its keys into.
const Count = 16384

// Of is the hash slot of a key, as Redis Cluster computes it: CRC16
// (XMODEM) of the key, or of its hash tag (the text between the first {
// and the next }, when not empty), modulo 16384.
func Of(key string) int {
	if tag, ok := hashTag(key); ok {
		key = tag
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
	return int(crc) % Count
}

// hashTag is the part of key that decides its slot, when only a part does.
func hashTag(key string) (string, bool) {
	i := strings.IndexByte(key, '{')
	if i < 0 {
		return "", false
	}
	j := strings.IndexByte(key[i+1:], '}')
	if j <= 0 {
		return "", false
	}
	return key[i+1 : i+1+j], true
}

// Beside is a key in key's hash slot, named key+suffix: within key's own
// hash tag when it has one, else with the whole key made its tag
// ({lock}:fence beside lock; {a}b:fence beside {a}b). A key with a brace
// but no tag (a{}b) has no such neighbour; it gets key+suffix, elsewhere.
func Beside(key, suffix string) string {
	if _, ok := hashTag(key); ok || strings.ContainsAny(key, "{}") {
		return key + suffix
	}
	return "{" + key + "}" + suffix
}
