package cluster

import (
	"cmp"
	"context"
	"fmt"
	"github.com/lockharness/lockharness/access"
	"slices"
	"strings"
	"time"
)

// Topology names. Outside this package a topology is known by what it can
// do (Can, Offering), never by its name.
const (
	Single   = "single"
	Sentinel = "sentinel"
	Redlock  = "redlock"
	// Target is a deployment the harness did not start (Spec.Target).
	Target = "target"
)

// registry lists every topology. A new topology is one file with a
// topology value and one line here.
var registry = []*topology{&single, &sentinel, &redlock, &redisCluster, &target, &targetSentinel, &etcdTopology}

// Topologies lists the topologies' names, in registry order.
var Topologies = func() []string {
	var names []string
	for _, t := range registry {
		names = append(names, t.name)
	}
	return names
}()

// topology is one way of arranging nodes.
type topology struct {
	name, summary string
	// shape is the topology a lock client sees, when it is another's: a
	// target is one server, as single is. Empty: the topology itself.
	// A shaped topology offers a client what its shape does, since
	// workers that name topologies are matched to the shape and recipes
	// to what the topology itself offers.
	shape string
	// has lists what the topology offers the faults and recipes that ask.
	has []Capability
	// plan names the nodes a spec asks for, or says why it is impossible.
	plan func(s Spec) (plan, error)
	// start starts the planned nodes into c.Nodes and c.Sentinels (what
	// started is kept there on error, so that Close stops it).
	start func(ctx context.Context, c *Cluster) error
	// access says how a client reaches the lock service, given the address
	// of the client's own link to each node and sentinel.
	access func(c *Cluster, link func(node string) string) access.Access

	// For topologies with Failover: the node that takes key's writes now,
	// a wait until the topology is whole again, a failover of key's
	// primary on request (in one of FailoverModes, where the topology has
	// several), and a watch that reports every primary switch.
	primary  func(ctx context.Context, c *Cluster, key string) (Node, error)
	settle   func(ctx context.Context, c *Cluster, within time.Duration) error
	failover func(ctx context.Context, c *Cluster, key, mode string) error
	watch    func(ctx context.Context, c *Cluster) (<-chan RoleChange, func(), error)
	// asPlanned waits (within ctx) until the roles are as start left them,
	// or says why they are not (Reset); nil: every node a primary.
	asPlanned func(ctx context.Context, c *Cluster) error
	// For topologies of another server than Redis (nil: Redis's way):
	// wipe empties the started topology's data for another run (Reset,
	// after the roles are as planned) and says what it did; keys counts
	// what a node holds itself; version names the server a node runs.
	wipe    func(ctx context.Context, c *Cluster) (string, error)
	keys    func(ctx context.Context, n Node) (int64, error)
	version func(ctx context.Context, n Node) (string, error)
	// persistence is the one way the topology's nodes keep their data,
	// when it has only one; empty: the spec's (Persistences).
	persistence string
	// fixedClocks says why the clock shim cannot move the nodes' clocks;
	// empty: it can wherever the harness runs the nodes (NodeControl).
	fixedClocks string
	// keptIdentity says why a node cannot restart without its data (its
	// identity is in its data too); empty: LoseData does what a lost disk
	// would.
	keptIdentity string
	// cutOffWrites is how long a primary cut off from its peers goes on
	// taking writes (Redis Cluster: the node timeout, after which it sees
	// itself in the minority); 0: until it is demoted.
	cutOffWrites time.Duration
}

// startEachNode starts every planned node as it is, one after another:
// topologies of independent nodes need nothing more.
func startEachNode(ctx context.Context, c *Cluster) error {
	for _, name := range c.planned.nodes {
		n, err := c.startNode(ctx, c.nodeConfig(name))
		if err != nil {
			return err
		}
		c.Nodes = append(c.Nodes, n)
	}
	return nil
}

// eachNode is how a client reaches independent nodes: directly, through
// its link to each.
func eachNode(c *Cluster, link func(string) string) access.Access {
	var a access.Access
	for _, n := range c.planned.nodes {
		a.Nodes = append(a.Nodes, link(n))
	}
	return a
}

// plan is what a topology will start.
type plan struct {
	nodes, sentinels []string
	// shards is the number of primaries of a cluster topology, whose
	// first nodes they are.
	shards int
	// target is the deployment a target topology stands for.
	target *TargetURL
}

func lookup(name string) (*topology, error) {
	for _, t := range registry {
		if t.name == name {
			return t, nil
		}
	}
	return nil, OneOf("topology", name, Topologies)
}

// Summary describes the named topology in a line, for `harness list`.
func Summary(name string) string {
	if t, err := lookup(name); err == nil {
		return t.summary
	}
	return ""
}

// Capability is something a fault or recipe may need from a topology. The
// ones a lock client needs are access's (access.Primary, ...), where the
// recipes and the worker protocol name them; those declared here are what
// only faults need.
type Capability = access.Capability

// Capabilities.
const (
	// Replication: replicas copy a primary through internal links that the
	// network can cut or slow (InternalLink).
	Replication Capability = "replication"
	// Failover: something watches the primary and promotes a replica when
	// it fails (Primary follows it; Failover forces one).
	Failover Capability = "failover"
	// NodeControl: the harness runs the nodes, so it can pause, kill and
	// restart them and move their clocks.
	NodeControl Capability = "node-control"
	// Majorities (Quorum, Majority) and Slots (ShardOf, CLUSTER FAILOVER)
	// are what a lock client needs too; faults name them here with the
	// others they ask for.
	Majorities = access.Majorities
	Slots      = access.Slots
)

// capabilityMeaning says in words what each capability is, for refusals.
var capabilityMeaning = map[Capability]string{
	Replication:        "replicas that copy a primary through links the network can cut",
	Failover:           "an automatic failover that promotes a replica",
	Majorities:         "independent nodes of which a client needs a majority",
	NodeControl:        "nodes the harness runs itself, so it can pause, kill and restart them and move their clocks",
	Slots:              "keys spread over shards by hash slot, whose replicas take over on request",
	access.Primary:     "one primary per key that takes every client's writes to it",
	access.Independent: "nodes that are each a primary of their own, with no replica or failover, reached at their own addresses",
	access.Replicas:    "replicas a client can wait for (WAIT)",
	access.Sentinels:   "sentinels that name the primary",
	access.Etcd:        "an etcd cluster (v3 API) instead of Redis, whose members a client reaches at their client addresses",
	Consensus:          "members that agree through Raft over peer links the network can cut one pair at a time",
}

// Meaning says in words what the capability is, for refusals.
func Meaning(c Capability) string { return capabilityMeaning[c] }

// Can reports whether the topology offers the capability, or says why not
// and which topologies do.
func (c *Cluster) Can(want Capability) error {
	if slices.Contains(c.top.has, want) {
		return nil
	}
	var with []string
	for _, t := range registry {
		if slices.Contains(t.has, want) {
			with = append(with, t.name)
		}
	}
	return fmt.Errorf("topology %s has no %s (%s); topologies with it: %s",
		c.Topology, want, capabilityMeaning[want], strings.Join(with, ", "))
}

// Lacking lists the capabilities in needs that the topology does not
// offer: none when a recipe that needs them runs on it.
func (c *Cluster) Lacking(needs []Capability) []Capability { return lacking(c.top, needs) }

func lacking(t *topology, caps []Capability) []Capability {
	var out []Capability
	for _, c := range caps {
		if !slices.Contains(t.has, c) {
			out = append(out, c)
		}
	}
	return out
}

// Offering lists the topologies that offer every capability in needs: where
// a recipe that needs them runs, a topology added later included. Those
// that also offer everything in prefers come first (the first is the
// recipe's home: the libs suite and compare run it there); within each
// group the registry's order holds. A topology shaped as another (a
// target) is left out: a client reaches it as the one it is shaped as,
// which the list names, and it offers a client what that one does.
func Offering(needs, prefers []Capability) []string {
	var first, then []string
	for _, t := range registry {
		if t.shape != "" || !offers(t, needs) {
			continue
		}
		if offers(t, prefers) {
			first = append(first, t.name)
		} else {
			then = append(then, t.name)
		}
	}
	return append(first, then...)
}

func offers(t *topology, caps []Capability) bool { return len(lacking(t, caps)) == 0 }

// Persistence is how the nodes keep their data across a restart
// (PersistNone, PersistAOFAlways; an etcd member's PersistWAL).
func (c *Cluster) Persistence() string { return c.top.persistenceFor(c.spec.Persistence) }

// PersistenceOf is the persistence a topology's nodes run with when a
// spec asks for persistence.
func PersistenceOf(topology, persistence string) string {
	if t, err := lookup(topology); err == nil {
		return t.persistenceFor(persistence)
	}
	return persistence
}

// persistenceFor is the topology's one way of keeping data where it has
// only one, else the one asked for.
func (t *topology) persistenceFor(asked string) string { return cmp.Or(t.persistence, asked) }

// MoveClocks reports whether the clock faults can move the nodes' wall
// clocks (the clock shim), or says why not.
func (c *Cluster) MoveClocks() error {
	if err := c.Can(NodeControl); err != nil {
		return err
	}
	if c.top.fixedClocks != "" {
		return fmt.Errorf("topology %s's clocks cannot be moved: %s", c.Topology, c.top.fixedClocks)
	}
	return nil
}

// LoseData reports whether a node can restart as one whose disk was lost
// (Node.LoseData), or says why not.
func (c *Cluster) LoseData() error {
	if err := c.Can(NodeControl); err != nil {
		return err
	}
	if c.top.keptIdentity != "" {
		return fmt.Errorf("topology %s's nodes cannot lose their data: %s", c.Topology, c.top.keptIdentity)
	}
	return nil
}

// KeyCount is how many keys a started node holds itself.
func (c *Cluster) KeyCount(ctx context.Context, n Node) (int64, error) {
	if c.top.keys != nil {
		return c.top.keys(ctx, n)
	}
	v, err := c.Do(ctx, n, "DBSIZE")
	if err != nil {
		return 0, err
	}
	keys, ok := v.(int64)
	if !ok {
		return 0, fmt.Errorf("DBSIZE answered %T %v", v, v)
	}
	return keys, nil
}

// Wipe empties a started topology of another server than Redis (its
// wipe, as Reset does); a Redis topology is flushed with Do.
func (c *Cluster) Wipe(ctx context.Context) error {
	if c.top.wipe == nil {
		return fmt.Errorf("topology %s is flushed with FLUSHALL, not wiped", c.Topology)
	}
	_, err := c.top.wipe(ctx, c)
	return err
}

// SpeaksRedis reports whether the nodes are Redis servers, which the
// harness's own Redis commands (Do, the grant probes) can ask.
func (c *Cluster) SpeaksRedis() bool { return c.top.keys == nil }

// Shape is the topology a lock client sees: what recipes and workers are
// asked to run on. A target server is shaped as single.
func (c *Cluster) Shape() string { return cmp.Or(c.top.shape, c.top.name) }

// Capabilities lists what the topology offers.
func (c *Cluster) Capabilities() []Capability { return append([]Capability(nil), c.top.has...) }
