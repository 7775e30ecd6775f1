package cluster

import (
	"cmp"
	"context"
	"fmt"
	"github.com/lockharness/lockharness/access"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lockharness/lockharness/internal/hashslot"
)

// Cluster topology defaults and timing: a node timeout short enough that
// a failover takes seconds.
const (
	RedisCluster       = "cluster"
	DefaultShards      = 3
	DefaultReplicas    = 1
	clusterNodeTimeout = 1000 * time.Millisecond
	maxShards          = 16
	maxReplicas        = 4
)

// Failover modes of CLUSTER FAILOVER: plain (the replica and its primary
// agree, no write is lost), FORCE (without the primary), TAKEOVER (without
// the primary or an election).
const (
	FailoverPlain    = "plain"
	FailoverForce    = "force"
	FailoverTakeover = "takeover"
)

// FailoverModes lists the modes a replica can be asked to take over in.
var FailoverModes = []string{FailoverPlain, FailoverForce, FailoverTakeover}

// redisCluster is Redis Cluster: --shards primaries, each owning an equal
// range of the 16384 slots, with --replicas replicas each. n1..nS are the
// first primaries, and n(S·r+s) is replica r of shard s. Every node
// announces two internal addresses: its client port, a link its replicas
// replicate through, and its cluster bus, a router that hands each peer's
// connection to that pair's own link (busRouter); so gossip, failure
// detection and replication can be cut like any client's link.
var redisCluster = topology{
	name:    RedisCluster,
	summary: fmt.Sprintf("Redis Cluster: --shards primaries (default %d) with --replicas replicas each (default %d), node timeout %v", DefaultShards, DefaultReplicas, clusterNodeTimeout),
	has:     []Capability{access.Primary, access.Replicas, Slots, NodeControl, Replication, Failover},
	keptIdentity: "a Redis Cluster node keeps its ID and slots in nodes.conf beside its data; " +
		"without them it comes back a stranger to its cluster, which takes CLUSTER FORGET, CLUSTER MEET and its slots assigned again (not built)",
	plan: func(s Spec) (plan, error) {
		if s.Nodes != 0 {
			return plan{}, fmt.Errorf("topology cluster is sized by --shards and --replicas, not --nodes %d", s.Nodes)
		}
		shards, replicas := clusterShards(s), clusterReplicas(s)
		if shards < 3 || shards > maxShards {
			return plan{}, fmt.Errorf("--shards %d: a cluster needs 3 to %d shards (a failover needs the votes of a majority of primaries, so fewer than 3 can never fail over)", shards, maxShards)
		}
		if replicas < 1 || replicas > maxReplicas {
			return plan{}, fmt.Errorf("--replicas %d: a cluster here has 1 to %d replicas per shard (a shard without one cannot fail over)", replicas, maxReplicas)
		}
		var p plan
		for i := 1; i <= shards*(1+replicas); i++ {
			p.nodes = append(p.nodes, fmt.Sprintf("n%d", i))
		}
		p.shards = shards
		return p, nil
	},
	start: startRedisCluster,
	access: func(c *Cluster, link func(string) string) access.Access {
		a := access.Access{Cluster: true, Dial: map[string]string{}}
		for _, n := range c.planned.nodes {
			a.Nodes = append(a.Nodes, c.internal[n])
			a.Dial[c.internal[n]] = link(n)
		}
		return a
	},
	primary:      clusterPrimary,
	settle:       clusterSettle,
	asPlanned:    clusterAsPlanned,
	failover:     clusterFailover,
	watch:        clusterWatch,
	cutOffWrites: clusterNodeTimeout,
}

func clusterShards(s Spec) int {
	if s.Shards == 0 {
		return DefaultShards
	}
	return s.Shards
}

func clusterReplicas(s Spec) int {
	if s.Replicas == 0 {
		return DefaultReplicas
	}
	return s.Replicas
}

// Shards are a cluster topology's shards and the replicas of each; 0, 0
// for a topology without shards.
func (c *Cluster) Shards() (shards, replicas int) {
	if c.planned.shards == 0 {
		return 0, 0
	}
	return c.planned.shards, len(c.planned.nodes)/c.planned.shards - 1
}

// busLinkName names the link that carries from's cluster bus traffic to to.
func busLinkName(from, to string) string { return "bus-" + from + "-" + to }

// sourceIP is the address node i (from 0) dials its peers from: loopback,
// distinct per node, so that a bus router tells its peers apart.
func sourceIP(i int) string { return fmt.Sprintf("127.0.0.%d", 11+i) }

func startRedisCluster(ctx context.Context, c *Cluster) error {
	s := c.spec
	if s.Link == nil {
		return fmt.Errorf("cluster topology needs a Link function for its internal proxies")
	}
	names := c.planned.nodes
	c.internal = map[string]string{}
	ports, busPorts := map[string]int{}, map[string]int{}
	for _, name := range names {
		var err error
		if ports[name], err = FreePort(); err != nil {
			return err
		}
		if busPorts[name], err = FreePort(); err != nil {
			return err
		}
		if c.internal[name], err = s.Link(internalLinkName(name), "127.0.0.1:"+strconv.Itoa(ports[name])); err != nil {
			return err
		}
	}
	for _, to := range names {
		links := map[string]string{}
		for i, from := range names {
			if from == to {
				continue
			}
			addr, err := s.Link(busLinkName(from, to), "127.0.0.1:"+strconv.Itoa(busPorts[to]))
			if err != nil {
				return err
			}
			links[sourceIP(i)] = addr
		}
		r, err := newBusRouter(to, links)
		if err != nil {
			return err
		}
		c.closers = append(c.closers, r.close)
		c.bus = append(c.bus, r)
	}
	for i, name := range names {
		_, announcePort, _ := net.SplitHostPort(c.internal[name])
		cfg := c.nodeConfig(name)
		cfg.Port = ports[name]
		cfg.Args = []string{
			"--cluster-enabled", "yes",
			"--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", strconv.FormatInt(clusterNodeTimeout.Milliseconds(), 10),
			"--cluster-port", strconv.Itoa(busPorts[name]),
			"--cluster-announce-ip", "127.0.0.1",
			"--cluster-announce-port", announcePort,
			"--cluster-announce-bus-port", strconv.Itoa(c.bus[i].port()),
			"--bind-source-addr", sourceIP(i),
			"--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "0",
		}
		if c.sec != nil && c.sec.tls {
			cfg.Args = append(cfg.Args, "--tls-cluster", "yes")
		}
		n, err := c.startNode(ctx, cfg)
		if err != nil {
			return err
		}
		c.Nodes = append(c.Nodes, n)
	}
	return c.formCluster(ctx)
}

// formCluster does what redis-cli --cluster create does: a config epoch
// per node, the slots to the primaries, every node met, the replicas
// attached; then it waits for the cluster to say it is whole.
func (c *Cluster) formCluster(ctx context.Context) error {
	ranges := shardRanges(c.planned.shards)
	ids := map[string]string{}
	for i, n := range c.Nodes {
		if _, err := c.Do(ctx, n, "CLUSTER", "SET-CONFIG-EPOCH", i+1); err != nil {
			return fmt.Errorf("node %s: CLUSTER SET-CONFIG-EPOCH: %w", n.Name(), err)
		}
		id, err := c.Do(ctx, n, "CLUSTER", "MYID")
		if err != nil {
			return fmt.Errorf("node %s: CLUSTER MYID: %w", n.Name(), err)
		}
		ids[n.Name()] = fmt.Sprint(id)
	}
	for s, r := range ranges {
		if _, err := c.Do(ctx, c.Nodes[s], "CLUSTER", "ADDSLOTSRANGE", r.lo, r.hi); err != nil {
			return fmt.Errorf("node %s: CLUSTER ADDSLOTSRANGE %v: %w", c.Nodes[s].Name(), r, err)
		}
	}
	for i, n := range c.Nodes[1:] {
		host, port, _ := net.SplitHostPort(c.internal[n.Name()])
		if _, err := c.Do(ctx, c.Nodes[0], "CLUSTER", "MEET", host, port, c.bus[i+1].port()); err != nil {
			return fmt.Errorf("node %s: CLUSTER MEET %s: %w", c.Nodes[0].Name(), n.Name(), err)
		}
	}
	if err := c.waitCluster(ctx, 30*time.Second, c.allMet); err != nil {
		return err
	}
	for i, n := range c.Nodes[c.planned.shards:] {
		primary := c.Nodes[i%c.planned.shards].Name()
		if _, err := c.Do(ctx, n, "CLUSTER", "REPLICATE", ids[primary]); err != nil {
			return fmt.Errorf("node %s: CLUSTER REPLICATE %s: %w", n.Name(), primary, err)
		}
	}
	return c.waitCluster(ctx, 30*time.Second, c.whole)
}

// waitCluster polls cond until it holds, never sleeping a fixed time.
func (c *Cluster) waitCluster(ctx context.Context, within time.Duration, cond func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	for {
		err := cond(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster topology did not settle within %v: %v", within, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// allMet: every node knows every other one, over a connected link.
func (c *Cluster) allMet(ctx context.Context) error {
	for _, n := range c.Nodes {
		v, err := c.view(ctx, n)
		if err != nil {
			return err
		}
		if len(v) != len(c.Nodes) {
			return fmt.Errorf("%s knows %d of %d nodes", n.Name(), len(v), len(c.Nodes))
		}
		for _, e := range v {
			if e.name == "" || strings.Contains(e.flags, "handshake") || !e.connected {
				return fmt.Errorf("%s has not met %s yet", n.Name(), c.NodeAt(e.addr))
			}
		}
	}
	return nil
}

// whole: every running node says the cluster is ok with every slot
// served, sees the planned number of shards, and every replica is in sync
// with its primary.
func (c *Cluster) whole(ctx context.Context) error {
	for _, n := range c.reachable() {
		info, err := c.infoFields(ctx, n, "CLUSTER", "INFO")
		if err != nil {
			return err
		}
		if info["cluster_state"] != "ok" || info["cluster_slots_ok"] != strconv.Itoa(hashslot.Count) ||
			info["cluster_size"] != strconv.Itoa(c.planned.shards) || info["cluster_known_nodes"] != strconv.Itoa(len(c.Nodes)) {
			return fmt.Errorf("%s: cluster_state %s, %s of %d slots ok, %s shards, %s nodes known", n.Name(),
				info["cluster_state"], info["cluster_slots_ok"], hashslot.Count, info["cluster_size"], info["cluster_known_nodes"])
		}
		repl, err := c.infoFields(ctx, n, "INFO", "replication")
		if err != nil {
			return err
		}
		if repl["role"] == "slave" && repl["master_link_status"] != "up" {
			return fmt.Errorf("replica %s: master link %s", n.Name(), repl["master_link_status"])
		}
	}
	return nil
}

// reachable are the running nodes that are not paused: the ones that can
// answer the harness.
func (c *Cluster) reachable() []Node {
	var out []Node
	for _, n := range c.Nodes {
		if n.Running() && !n.Paused() {
			out = append(out, n)
		}
	}
	return out
}

// infoFields runs an INFO-like command and reads its key:value lines.
func (c *Cluster) infoFields(ctx context.Context, n Node, args ...any) (map[string]string, error) {
	v, err := c.Do(ctx, n, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %v: %w", n.Name(), args, err)
	}
	out := map[string]string{}
	text, _ := v.(string)
	for _, line := range strings.Split(text, "\n") {
		if k, val, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			out[k] = val
		}
	}
	return out, nil
}

// viewEntry is one line of a node's CLUSTER NODES: what it believes of one
// node.
type viewEntry struct {
	id, addr, name, flags, master string
	epoch                         int64
	connected                     bool
	slots                         []slotRange
}

func (e viewEntry) isPrimary() bool { return strings.Contains(e.flags, "master") }
func (e viewEntry) myself() bool    { return strings.Contains(e.flags, "myself") }

// view is node n's CLUSTER NODES, parsed.
func (c *Cluster) view(ctx context.Context, n Node) ([]viewEntry, error) {
	ctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	v, err := c.Do(ctx, n, "CLUSTER", "NODES")
	if err != nil {
		return nil, fmt.Errorf("%s: CLUSTER NODES: %w", n.Name(), err)
	}
	text, _ := v.(string)
	var out []viewEntry
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		addr, _, _ := strings.Cut(f[1], "@")
		e := viewEntry{id: f[0], addr: addr, flags: f[2], master: f[3], connected: f[7] == "connected"}
		e.epoch, _ = strconv.ParseInt(f[6], 10, 64)
		if node := c.nodeByInternal(addr); node != nil {
			e.name = node.Name()
		}
		for _, s := range f[8:] {
			if strings.HasPrefix(s, "[") {
				continue // a slot being migrated
			}
			lo, hi, isRange := strings.Cut(s, "-")
			if !isRange {
				hi = lo
			}
			l, err1 := strconv.Atoi(lo)
			h, err2 := strconv.Atoi(hi)
			if err1 == nil && err2 == nil {
				e.slots = append(e.slots, slotRange{l, h})
			}
		}
		out = append(out, e)
	}
	return out, nil
}

// claim is a primary's claim to a slot range, with the config epoch that
// decides between rival claims.
type claim struct {
	owner string
	epoch int64
}

// owners asks every reachable node who owns each planned shard's slots
// and takes, for each shard, the claim with the highest config epoch: the
// rule by which Redis Cluster itself settles rival claims.
func (c *Cluster) owners(ctx context.Context) ([]claim, error) {
	out, _, err := c.survey(ctx)
	return out, err
}

// survey is owners, and each answering node's role as it states it
// ("primary", "replica of n5").
func (c *Cluster) survey(ctx context.Context) ([]claim, map[string]string, error) {
	ranges := shardRanges(c.planned.shards)
	roles := map[string]string{}
	out := make([]claim, len(ranges))
	for i := range out {
		out[i].epoch = -1
	}
	var last error
	answered := 0
	for _, n := range c.reachable() {
		v, err := c.view(ctx, n)
		if err != nil {
			last = err
			continue
		}
		answered++
		byID := map[string]string{}
		for _, e := range v {
			byID[e.id] = e.name
		}
		for _, e := range v {
			switch {
			case !e.myself():
			case e.isPrimary():
				roles[n.Name()] = "primary"
			case byID[e.master] != "":
				// A primary it cannot name yet (in a handshake) says nothing.
				roles[n.Name()] = "replica of " + byID[e.master]
			}
			if !e.isPrimary() || e.name == "" {
				continue
			}
			for _, sr := range e.slots {
				for i, r := range ranges {
					if sr.has(r.lo) && e.epoch > out[i].epoch {
						out[i] = claim{e.name, e.epoch}
					}
				}
			}
		}
	}
	if answered == 0 {
		return nil, nil, fmt.Errorf("no cluster node answered: %v", last)
	}
	return out, roles, nil
}

// shardOf is the index of the planned shard whose slots hold key.
func (c *Cluster) shardOf(key string) int {
	slot := hashslot.Of(key)
	for i, r := range shardRanges(c.planned.shards) {
		if r.has(slot) {
			return i
		}
	}
	return 0
}

func clusterPrimary(ctx context.Context, c *Cluster, key string) (Node, error) {
	owners, err := c.owners(ctx)
	if err != nil {
		return nil, err
	}
	o := owners[c.shardOf(key)]
	if o.owner == "" {
		return nil, fmt.Errorf("no node claims slot %d of key %q", hashslot.Of(key), key)
	}
	return c.Node(o.owner)
}

// ShardOf describes the shard that holds key, for the history: its slot
// and the shard's range ("slot 9244 of 5461-10921").
func (c *Cluster) ShardOf(key string) string {
	if c.planned.shards == 0 {
		return ""
	}
	return fmt.Sprintf("slot %d of %v", hashslot.Of(key), shardRanges(c.planned.shards)[c.shardOf(key)])
}

// clusterSettle waits until every reachable node says the cluster is ok
// and every shard's owner answers as a primary.
func clusterSettle(ctx context.Context, c *Cluster, within time.Duration) error {
	return c.waitCluster(ctx, within, func(ctx context.Context) error {
		for _, n := range c.reachable() {
			info, err := c.infoFields(ctx, n, "CLUSTER", "INFO")
			if err != nil {
				return err
			}
			if info["cluster_state"] != "ok" {
				return fmt.Errorf("%s: cluster_state %s", n.Name(), info["cluster_state"])
			}
		}
		owners, err := c.owners(ctx)
		if err != nil {
			return err
		}
		for _, o := range owners {
			n, err := c.Node(o.owner)
			if err != nil {
				return err
			}
			role, err := c.Do(ctx, n, "ROLE")
			if err != nil {
				return err
			}
			if r, _ := role.([]any); len(r) == 0 || r[0] != "master" {
				return fmt.Errorf("%s is not yet a primary", n.Name())
			}
		}
		return nil
	})
}

// clusterFailover asks a replica of key's shard to take over
// (CLUSTER FAILOVER in the given mode; "" is plain).
func clusterFailover(ctx context.Context, c *Cluster, key, mode string) error {
	mode = cmp.Or(mode, FailoverPlain)
	if err := OneOf("failover mode", mode, FailoverModes); err != nil {
		return err
	}
	p, err := clusterPrimary(ctx, c, key)
	if err != nil {
		return err
	}
	r, err := c.replicaOf(ctx, p)
	if err != nil {
		return err
	}
	if mode == FailoverPlain {
		// A plain failover is a handover the primary takes part in: the
		// replica must be linked to it and caught up, or the handover times
		// out (5 s) and is dropped without a word. A replica that has just
		// rejoined may still be syncing.
		if err := c.linkedToPrimary(ctx, r, 10*time.Second); err != nil {
			return err
		}
	}
	args := []any{"CLUSTER", "FAILOVER"}
	if mode != FailoverPlain {
		args = append(args, strings.ToUpper(mode))
	}
	if _, err := c.Do(ctx, r, args...); err != nil {
		return fmt.Errorf("%s: %v: %w", r.Name(), args, err)
	}
	return nil
}

// linkedToPrimary waits until replica r's link to its primary is up.
func (c *Cluster) linkedToPrimary(ctx context.Context, r Node, within time.Duration) error {
	return c.waitCluster(ctx, within, func(ctx context.Context) error {
		repl, err := c.infoFields(ctx, r, "INFO", "replication")
		if err == nil && repl["master_link_status"] != "up" {
			err = fmt.Errorf("%s's link to its primary is %s after %v: a plain CLUSTER FAILOVER would not be taken up", r.Name(), repl["master_link_status"], within)
		}
		return err
	})
}

// replicaOf is a reachable replica of primary p, as p's peers see it.
func (c *Cluster) replicaOf(ctx context.Context, p Node) (Node, error) {
	for _, n := range c.reachable() {
		if n == p {
			continue
		}
		v, err := c.view(ctx, n)
		if err != nil {
			continue
		}
		var pid string
		for _, e := range v {
			if e.name == p.Name() {
				pid = e.id
			}
		}
		for _, e := range v {
			if e.myself() && e.master == pid && pid != "" {
				return n, nil
			}
		}
	}
	return nil, fmt.Errorf("no reachable replica of %s", p.Name())
}

// clusterWatch polls the nodes every 100 ms and reports each shard whose
// owner changed (slot-owner) and each node that says it changed role
// (role: a replica promoted, a demoted primary rejoining as a replica, a
// replica following a new primary): Redis Cluster announces neither on a
// channel a client can subscribe to.
func clusterWatch(ctx context.Context, c *Cluster) (<-chan RoleChange, func(), error) {
	first, roles, err := c.survey(ctx)
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	out := make(chan RoleChange, 16)
	send := func(ch RoleChange) bool {
		select {
		case out <- ch:
			return true
		case <-ctx.Done():
			return false
		}
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(out)
		ranges := shardRanges(c.planned.shards)
		last := first
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
			now, nowRoles, err := c.survey(ctx)
			if err != nil {
				continue
			}
			for i, o := range now {
				if o.owner == "" || o.owner == last[i].owner {
					continue
				}
				if !send(RoleChange{From: last[i].owner, To: o.owner, Event: "slot-owner", Slots: fmt.Sprint(ranges[i]), Epoch: o.epoch,
					Detail: fmt.Sprintf("%s took slots %v from %s (config epoch %d)", o.owner, ranges[i], last[i].owner, o.epoch)}) {
					return
				}
				last[i] = o
			}
			for _, n := range c.planned.nodes {
				role, was := nowRoles[n], roles[n]
				if role == "" || role == was {
					continue
				}
				roles[n] = role
				if was != "" && !send(RoleChange{To: n, Event: "role", Role: role, WasRole: was, Detail: fmt.Sprintf("%s is now %s (was %s)", n, role, was)}) {
					return
				}
			}
		}
	}()
	return out, func() { cancel(); wg.Wait() }, nil
}
