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
// do (Can), never by its name.
const (
	Single   = "single"
	Sentinel = "sentinel"
	Redlock  = "redlock"
	// Target is a deployment the harness did not start (Spec.Target).
	Target = "target"
)

// registry lists every topology. A new topology is one file with a
// topology value and one line here.
var registry = []*topology{&single, &sentinel, &redlock, &redisCluster, &target, &targetSentinel}

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

// Capability is something a fault or recipe may need from a topology.
type Capability string

// Capabilities.
const (
	// Replication: replicas copy a primary through internal links that the
	// network can cut or slow (InternalLink).
	Replication Capability = "replication"
	// Failover: something watches the primary and promotes a replica when
	// it fails (Primary follows it; Failover forces one).
	Failover Capability = "failover"
	// Majorities: independent nodes, of which a client needs a majority
	// (Quorum, Majority).
	Majorities Capability = "majorities"
	// NodeControl: the harness runs the nodes, so it can pause, kill and
	// restart them and move their clocks.
	NodeControl Capability = "node-control"
	// Slots: keys are spread over shards by hash slot, each shard a
	// primary with replicas that take over on request (CLUSTER FAILOVER).
	Slots Capability = "slots"
)

// capabilityMeaning says in words what each capability is, for refusals.
var capabilityMeaning = map[Capability]string{
	Replication: "replicas that copy a primary through links the network can cut",
	Failover:    "an automatic failover that promotes a replica",
	Majorities:  "independent nodes of which a client needs a majority",
	NodeControl: "nodes the harness runs itself, so it can pause, kill and restart them and move their clocks",
	Slots:       "keys spread over shards by hash slot, whose replicas take over on request",
}

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

// Persistence is how the nodes keep their data across a restart
// (PersistNone, PersistAOFAlways).
func (c *Cluster) Persistence() string { return c.spec.Persistence }

// Shape is the topology a lock client sees: what recipes and workers are
// asked to run on. A target server is shaped as single.
func (c *Cluster) Shape() string { return cmp.Or(c.top.shape, c.top.name) }

// Capabilities lists what the topology offers.
func (c *Cluster) Capabilities() []Capability { return append([]Capability(nil), c.top.has...) }
