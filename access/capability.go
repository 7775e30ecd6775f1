package access

import "strings"

// Capability is something a topology offers that a lock or a fault may
// need of it. The ones a lock client relies on are declared here, beside
// Access, so that recipes, workers and the worker protocol name them
// without the package that runs topologies; the ones only faults need
// (what the harness can do to the nodes) are declared in cluster.
type Capability string

// What a lock client may need of the lock service it reaches. A recipe
// runs on every topology that offers all it needs, so each names a
// property of the service, never a topology.
const (
	// Primary: each key has one primary that takes every client's writes
	// to it (with or without replicas behind it), so that clients contend
	// on one copy of the key.
	Primary Capability = "primary"
	// Independent: every node is a primary of its own, with no replica
	// and no failover behind it, reached at its own address: what a
	// Redlock assumes of its nodes (one node is a quorum of one).
	Independent Capability = "independent"
	// Majorities: several independent nodes, of which a lock takes a
	// majority.
	Majorities Capability = "majorities"
	// Replicas: a primary's writes reach replicas that a client can wait
	// for (WAIT).
	Replicas Capability = "replicas"
	// Sentinels: sentinels name the primary; a client asks them for it,
	// and again after a failover.
	Sentinels Capability = "sentinels"
	// Slots: keys are spread over shards by hash slot; a client follows
	// MOVED and ASK to a key's shard.
	Slots Capability = "slots"
	// Etcd: the lock service is an etcd cluster (v3 API), whose members a
	// client reaches at their client addresses (Nodes), not Redis.
	Etcd Capability = "etcd"
)

// Capabilities lists what a lock client may need, for the checks that
// refuse a recipe or a worker naming anything else: a need no topology
// can offer would leave it nowhere to run.
var Capabilities = []Capability{Primary, Independent, Majorities, Replicas, Sentinels, Slots, Etcd}

// Join spells capabilities as words joined by sep, for messages and lists.
func Join(caps []Capability, sep string) string {
	names := make([]string, len(caps))
	for i, c := range caps {
		names[i] = string(c)
	}
	return strings.Join(names, sep)
}
