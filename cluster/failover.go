package cluster

import (
	"context"
	"fmt"
	"time"
)

// Primary is the node that takes key's writes now: for a topology with
// failover, the one its monitors (sentinels) or its peers (cluster, by
// the highest config epoch) name; otherwise the first node.
func (c *Cluster) Primary(ctx context.Context, key string) (Node, error) {
	if len(c.Nodes) == 0 {
		return nil, fmt.Errorf("topology %s has not started", c.Topology)
	}
	if c.top.primary == nil {
		return c.Nodes[0], nil
	}
	return c.top.primary(ctx, c, key)
}

// Failover asks the topology to fail key's primary over now, in one of
// FailoverModes ("" is plain): SENTINEL FAILOVER, or CLUSTER FAILOVER on a
// replica of key's shard.
func (c *Cluster) Failover(ctx context.Context, key, mode string) error {
	if err := c.Can(Failover); err != nil {
		return err
	}
	return c.top.failover(ctx, c, key, mode)
}

// Settle waits until the topology has a primary for every key again that
// answers as one; a topology without failover is always settled.
func (c *Cluster) Settle(ctx context.Context, within time.Duration) error {
	if c.top.settle == nil {
		return nil
	}
	return c.top.settle(ctx, c, within)
}

// CutOffWrites is how long a primary cut off from its peers goes on taking
// writes: for Redis Cluster the node timeout, after which the primary
// sees it is in the minority and refuses them; 0 means until it is
// demoted (Sentinel).
func (c *Cluster) CutOffWrites() time.Duration { return c.top.cutOffWrites }

// RoleChange is a change of roles the topology announced or its nodes were
// seen to make: To replaced From as primary, or (role) To changed its own
// role, with From empty.
type RoleChange struct {
	From, To string
	// Event names the change as the history records it: switch-master
	// (a sentinel's announcement), slot-owner (a cluster shard's slots
	// seen with a new primary) or role (a cluster node saying it became a
	// primary or a replica; From is empty).
	Event string
	// Role and WasRole are a role event's roles after and before
	// ("primary", "replica of n2"); Slots and Epoch a slot-owner's slots
	// and config epoch.
	Role, WasRole string
	Slots         string
	Epoch         int64
	// Detail is the change in words, as the history records it.
	Detail string
}

// WatchPrimary delivers every primary switch as soon as the topology
// shows it, until ctx ends; stop releases what the watch holds. A topology
// without failover has none to show.
func (c *Cluster) WatchPrimary(ctx context.Context) (<-chan RoleChange, func(), error) {
	if !c.WatchesRoles() {
		return nil, nil, fmt.Errorf("topology %s announces no role changes", c.Topology)
	}
	return c.top.watch(ctx, c)
}

// WatchesRoles reports whether the topology announces its role changes
// (WatchPrimary): one with a failover, and a Sentinel target, whose
// failovers are the deployment's own.
func (c *Cluster) WatchesRoles() bool { return c.top.watch != nil }

// Replicas are the nodes that replicate key's primary now, as each node's
// ROLE says (a replica names its primary's address); none on a topology
// without replication.
func (c *Cluster) Replicas(ctx context.Context, key string) ([]Node, error) {
	p, err := c.Primary(ctx, key)
	if err != nil {
		return nil, err
	}
	var out []Node
	for _, n := range c.Nodes {
		if n == p || !n.Running() || n.Paused() {
			continue
		}
		v, err := c.Do(ctx, n, "ROLE")
		if err != nil {
			continue
		}
		role, ok := v.([]any)
		if !ok || len(role) < 3 || fmt.Sprint(role[0]) != "slave" {
			continue
		}
		if c.NodeAt(fmt.Sprintf("%v:%v", role[1], role[2])) == p.Name() {
			out = append(out, n)
		}
	}
	return out, nil
}
