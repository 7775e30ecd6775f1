package cluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Reset readies a started topology for another run as a fresh one would
// start it: every paused node resumed, every clock back at true time,
// every key and script gone on every node, and the roles as the topology
// started them (sentinel: n1 primary with both replicas and every sentinel
// agreeing; cluster: every shard's planned primary owning its slots, every
// replica in sync). It says what it did. It returns an error when it cannot
// prove that state (a node down, a failover that moved a primary): the
// caller should close this topology and start a fresh one. The links
// between nodes are the caller's to heal (Spec.Link made them).
func (c *Cluster) Reset(ctx context.Context, within time.Duration) (string, error) {
	if c.backend == nil {
		return "", fmt.Errorf("topology %s has not started", c.Topology)
	}
	if c.planned.target != nil {
		return "", fmt.Errorf("a target deployment is not the harness's to reset")
	}
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	var did []string
	resumed := 0
	for _, n := range c.Servers() {
		if !n.Running() {
			return "", fmt.Errorf("%s is not running", n.Name())
		}
		if n.Paused() {
			if err := n.Resume(); err != nil {
				return "", fmt.Errorf("resuming %s: %w", n.Name(), err)
			}
			resumed++
		}
	}
	if resumed > 0 {
		did = append(did, fmt.Sprintf("%d resumed", resumed))
	}
	clocks := 0
	for _, n := range c.Nodes {
		if n.ClockOffset() != 0 || n.ClockDrift() != 0 {
			if err := n.SetClockOffset(0); err != nil {
				return "", fmt.Errorf("clock of %s: %w", n.Name(), err)
			}
			clocks++
		}
	}
	if clocks > 0 {
		did = append(did, fmt.Sprintf("%d clocks back at offset 0", clocks))
	}
	roles := c.top.asPlanned
	if roles == nil {
		roles = allPrimaries
	}
	if err := roles(ctx, c); err != nil {
		return "", fmt.Errorf("roles are not as started: %w", err)
	}
	if c.top.wipe != nil {
		wiped, err := c.top.wipe(ctx, c)
		if err != nil {
			return "", err
		}
		return strings.Join(append(did, wiped), ", "), nil
	}
	// The roles are as planned, so the planned primaries are the ones to
	// flush: asking each node its role again raced a cluster's failback,
	// where a replica still answered as the primary it had just been.
	flushed := 0
	for _, n := range c.Nodes {
		if c.plannedReplica(n.Name()) {
			continue
		}
		if _, err := c.query(ctx, n.Addr(), "FLUSHALL", "SYNC"); err != nil {
			return "", fmt.Errorf("%s: FLUSHALL: %w", n.Name(), err)
		}
		flushed++
	}
	// Replicas receive the flush through replication; every node's script
	// cache is its own.
	for _, n := range c.Nodes {
		if _, err := c.query(ctx, n.Addr(), "SCRIPT", "FLUSH", "SYNC"); err != nil {
			return "", fmt.Errorf("%s: SCRIPT FLUSH: %w", n.Name(), err)
		}
		for {
			size, err := c.query(ctx, n.Addr(), "DBSIZE")
			if err != nil {
				return "", fmt.Errorf("%s: DBSIZE: %w", n.Name(), err)
			}
			if size == int64(0) {
				break
			}
			select {
			case <-ctx.Done():
				return "", fmt.Errorf("%s still holds %v keys after the flush", n.Name(), size)
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	did = append(did, fmt.Sprintf("%d primaries flushed, every node empty", flushed))
	return strings.Join(did, ", "), nil
}

// plannedReplica reports whether the node started as a replica: on a
// cluster every node after the shards' primaries, on Sentinel every node
// after n1.
func (c *Cluster) plannedReplica(name string) bool {
	i := slices.Index(c.planned.nodes, name)
	switch c.Topology {
	case RedisCluster:
		return i >= c.planned.shards
	case Sentinel:
		return i >= 1
	}
	return false
}

// allPrimaries: a topology of independent nodes is as started when every
// node answers as a primary.
func allPrimaries(ctx context.Context, c *Cluster) error {
	for _, n := range c.Nodes {
		role, err := c.query(ctx, n.Addr(), "ROLE")
		if err != nil {
			return fmt.Errorf("%s: %w", n.Name(), err)
		}
		if r, _ := role.([]any); len(r) == 0 || r[0] != "master" {
			return fmt.Errorf("%s is not a primary: %v", n.Name(), role)
		}
	}
	return nil
}

// sentinelAsPlanned: n1 is the primary with every replica online and every
// sentinel naming it, seeing the replicas and the other sentinels. A
// failover moved the primary for good: sentinels cannot be told to give it
// back to n1, so that is no reset.
func sentinelAsPlanned(ctx context.Context, c *Cluster) error {
	first := c.internal[c.planned.nodes[0]]
	p, err := sentinelPrimary(ctx, c, "")
	if err != nil {
		return err
	}
	if p.Name() != c.planned.nodes[0] {
		return fmt.Errorf("%s is the primary, not %s", p.Name(), c.planned.nodes[0])
	}
	deadline, _ := ctx.Deadline()
	if err := c.waitSettled(ctx, first, time.Until(deadline)); err != nil {
		return err
	}
	// A failover begun but not yet carried out, or a sentinel in TILT,
	// would carry into the next run.
	for _, s := range c.Sentinels {
		v, err := c.query(ctx, s.Addr(), "SENTINEL", "MASTER", masterName)
		if err != nil {
			return fmt.Errorf("%s: SENTINEL MASTER: %w", s.Name(), err)
		}
		if flags := field(v, "flags"); flags != "master" {
			return fmt.Errorf("%s flags the primary %q, not just master", s.Name(), flags)
		}
		info, err := c.query(ctx, s.Addr(), "INFO", "sentinel")
		if err != nil {
			return fmt.Errorf("%s: INFO sentinel: %w", s.Name(), err)
		}
		if text, _ := info.(string); strings.Contains(text, "sentinel_tilt:1") {
			return fmt.Errorf("%s is in TILT mode", s.Name())
		}
	}
	return nil
}

// clusterAsPlanned: every shard's slots are owned by the primary it
// started with, and the cluster is whole.
func clusterAsPlanned(ctx context.Context, c *Cluster) error {
	owners, err := c.owners(ctx)
	if err != nil {
		return err
	}
	for i, o := range owners {
		if want := c.planned.nodes[i]; o.owner != want {
			return fmt.Errorf("shard %d is owned by %s, not %s", i+1, o.owner, want)
		}
	}
	deadline, _ := ctx.Deadline()
	return c.waitCluster(ctx, time.Until(deadline), c.whole)
}

// SameStart reports whether o, planned or started, starts as c does: the
// same topology, backend, image, persistence, clock, sizes, security and
// lock keys. Such a topology, reset, serves a run planned as o.
func (c *Cluster) SameStart(o *Cluster) bool {
	a, b := c.spec, o.spec
	a.Dir, a.Link, b.Dir, b.Link = "", nil, "", nil
	return c.Topology == o.Topology && a.Topology == b.Topology && a.Target == b.Target && a.Backend == b.Backend &&
		a.Image == b.Image && a.Persistence == b.Persistence && a.Clock == b.Clock && a.Nodes == b.Nodes &&
		a.Shards == b.Shards && a.Replicas == b.Replicas && a.Auth == b.Auth && a.TLS == b.TLS &&
		slices.Equal(a.LockKeys, b.LockKeys)
}

// Dir is the directory the started topology keeps its nodes' data and logs in.
func (c *Cluster) Dir() string { return c.spec.Dir }
