package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockharness/lockharness/access"
)

// Sentinel timing: short enough for runs of seconds. A primary that has
// not answered for downAfter is subjectively down; failoverTimeout bounds
// a failover attempt.
const (
	masterName      = "lockharness"
	downAfter       = 1000 * time.Millisecond
	failoverTimeout = 3000 * time.Millisecond
	sentinelQuorum  = 2
)

// sentinel is a primary, two replicas and three sentinels. Each node has
// ONE internal address, a proxy, used by the replicas and the sentinels
// alike: Sentinel rewrites a replica's REPLICAOF to the address it
// monitors, so a private replication proxy per replica would not survive.
// Every node announces its internal address, so sentinels reach replicas,
// and later a promoted one, through their proxies too.
var sentinel = topology{
	name:    Sentinel,
	summary: "a primary, two replicas and three sentinels (down-after 1 s)",
	has:     []Capability{access.Primary, access.Replicas, access.Sentinels, NodeControl, Replication, Failover},
	plan: func(s Spec) (plan, error) {
		if s.Nodes != 0 && s.Nodes != 3 {
			return plan{}, fmt.Errorf("topology sentinel has 3 nodes (a primary and two replicas), not %d (--nodes is for topologies whose size can be chosen)", s.Nodes)
		}
		return plan{nodes: []string{"n1", "n2", "n3"}, sentinels: []string{"s1", "s2", "s3"}}, nil
	},
	start:     startSentinel,
	primary:   sentinelPrimary,
	settle:    sentinelSettle,
	asPlanned: sentinelAsPlanned,
	failover:  sentinelFailover,
	watch:     sentinelWatch,
	access:    sentinelAccess,
}

func startSentinel(ctx context.Context, c *Cluster) error {
	s := c.spec
	if s.Link == nil {
		return errors.New("sentinel topology needs a Link function for its internal proxies")
	}
	c.internal = map[string]string{}
	names := c.planned.nodes
	ports := map[string]int{}
	for _, name := range names {
		port, err := FreePort()
		if err != nil {
			return err
		}
		ports[name] = port
		addr, err := s.Link(internalLinkName(name), "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			return err
		}
		c.internal[name] = addr
	}
	primaryHost, primaryPort, _ := net.SplitHostPort(c.internal[names[0]])
	for i, name := range names {
		_, announcePort, _ := net.SplitHostPort(c.internal[name])
		cfg := c.nodeConfig(name)
		cfg.Port = ports[name]
		cfg.Args = []string{
			"--replica-announce-ip", "127.0.0.1", "--replica-announce-port", announcePort,
			// Full syncs start at once instead of waiting 5 s for more replicas.
			"--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "0",
		}
		if i > 0 {
			cfg.Args = append(cfg.Args, "--replicaof", primaryHost, primaryPort)
		}
		n, err := c.startNode(ctx, cfg)
		if err != nil {
			return err
		}
		c.Nodes = append(c.Nodes, n)
	}
	// Each sentinel is told its own id and the other sentinels' and the
	// replicas' addresses, as a sentinel that ran before would have
	// written them into its configuration: otherwise they learn of each
	// other from hello messages sent every 2 s, and a start waits for that.
	sentinelPorts := make([]int, len(c.planned.sentinels))
	for i := range sentinelPorts {
		port, err := FreePort()
		if err != nil {
			return err
		}
		sentinelPorts[i] = port
	}
	myID := func(i int) string { return fmt.Sprintf("%040x", i+1) }
	for i, name := range c.planned.sentinels {
		port := sentinelPorts[i]
		conf := []string{
			"sentinel myid " + myID(i),
			"sentinel announce-ip 127.0.0.1",
			"sentinel announce-port " + strconv.Itoa(port),
			fmt.Sprintf("sentinel monitor %s %s %s %d", masterName, primaryHost, primaryPort, sentinelQuorum),
			fmt.Sprintf("sentinel down-after-milliseconds %s %d", masterName, downAfter.Milliseconds()),
			fmt.Sprintf("sentinel failover-timeout %s %d", masterName, failoverTimeout.Milliseconds()),
			fmt.Sprintf("sentinel parallel-syncs %s 2", masterName),
		}
		for j, other := range sentinelPorts {
			if j != i {
				conf = append(conf, fmt.Sprintf("sentinel known-sentinel %s 127.0.0.1 %d %s", masterName, other, myID(j)))
			}
		}
		for _, replica := range names[1:] {
			host, port, _ := net.SplitHostPort(c.internal[replica])
			conf = append(conf, fmt.Sprintf("sentinel known-replica %s %s %s", masterName, host, port))
		}
		conf = append(conf, c.sec.sentinelAuth(masterName)...)
		n, err := c.startNode(ctx, NodeConfig{Name: name, Dir: filepath.Join(s.Dir, name), Port: port, Args: conf, Sentinel: true, sec: c.sec})
		if err != nil {
			return err
		}
		c.Sentinels = append(c.Sentinels, n)
	}
	return c.waitSettled(ctx, c.internal[names[0]], 30*time.Second)
}

// waitSettled waits until the primary at primaryAddr has both replicas
// online and every sentinel names it, sees both replicas and the other
// sentinels. It polls conditions; it never sleeps a fixed time.
func (c *Cluster) waitSettled(ctx context.Context, primaryAddr string, within time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	var last error
	for {
		if last = c.settled(ctx, primaryAddr); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("sentinel topology did not settle within %v: %v", within, last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (c *Cluster) settled(ctx context.Context, primaryAddr string) error {
	primary := c.nodeByInternal(primaryAddr)
	if primary == nil {
		return fmt.Errorf("no node has internal address %s", primaryAddr)
	}
	info, err := c.query(ctx, primary.Addr(), "INFO", "replication")
	if err != nil {
		return fmt.Errorf("primary %s: %v", primary.Name(), err)
	}
	text, _ := info.(string)
	if online := strings.Count(text, "state=online"); online < len(c.Nodes)-1 {
		return fmt.Errorf("primary %s has %d of %d replicas online", primary.Name(), online, len(c.Nodes)-1)
	}
	for _, s := range c.Sentinels {
		addr, err := c.sentinelMaster(ctx, s.Addr())
		if err != nil {
			return fmt.Errorf("%s: %v", s.Name(), err)
		}
		if addr != primaryAddr {
			return fmt.Errorf("%s names %s as primary, not %s", s.Name(), addr, primaryAddr)
		}
		for _, what := range []struct {
			sub  string
			want int
		}{{"replicas", len(c.Nodes) - 1}, {"sentinels", len(c.Sentinels) - 1}} {
			v, err := c.query(ctx, s.Addr(), "SENTINEL", what.sub, masterName)
			if err != nil {
				return fmt.Errorf("%s: SENTINEL %s: %v", s.Name(), what.sub, err)
			}
			list, _ := v.([]any)
			healthy := 0
			for _, entry := range list {
				if flags := field(entry, "flags"); !strings.Contains(flags, "down") && !strings.Contains(flags, "disconnected") {
					healthy++
				}
			}
			if healthy < what.want {
				return fmt.Errorf("%s sees %d healthy %s, want %d", s.Name(), healthy, what.sub, what.want)
			}
		}
	}
	return nil
}

// field reads a key from a RESP2 flat array or a RESP3 map entry.
func field(entry any, key string) string {
	switch e := entry.(type) {
	case []any:
		for i := 0; i+1 < len(e); i += 2 {
			if k, _ := e[i].(string); k == key {
				v, _ := e[i+1].(string)
				return v
			}
		}
	case map[any]any:
		v, _ := e[key].(string)
		return v
	}
	return ""
}

// master is the name the sentinels know the primary by: the harness's own,
// or a Sentinel target's.
func (c *Cluster) master() string {
	if t := c.planned.target; t != nil && t.Master != "" {
		return t.Master
	}
	return masterName
}

func (c *Cluster) nodeByInternal(addr string) Node {
	for _, n := range c.Nodes {
		if c.internal[n.Name()] == addr {
			return n
		}
	}
	return nil
}

func (c *Cluster) sentinelMaster(ctx context.Context, sentinelAddr string) (string, error) {
	v, err := c.query(ctx, sentinelAddr, "SENTINEL", "get-master-addr-by-name", c.master())
	if err != nil {
		return "", err
	}
	hp, _ := v.([]any)
	if len(hp) != 2 {
		return "", fmt.Errorf("unexpected master address %v", v)
	}
	return net.JoinHostPort(fmt.Sprint(hp[0]), fmt.Sprint(hp[1])), nil
}

func sentinelPrimary(ctx context.Context, c *Cluster, _ string) (Node, error) {
	votes := map[string]int{}
	for _, s := range c.Sentinels {
		if addr, err := c.sentinelMaster(ctx, s.Addr()); err == nil {
			votes[addr]++
		}
	}
	for addr, n := range votes {
		if n > len(c.Sentinels)/2 {
			if node := c.nodeByInternal(addr); node != nil {
				return node, nil
			}
		}
	}
	return nil, fmt.Errorf("the sentinels do not agree on a primary: %v", votes)
}

// sentinelFailover asks a sentinel to fail over now (SENTINEL FAILOVER),
// which has one mode.
func sentinelFailover(ctx context.Context, c *Cluster, _, mode string) error {
	if mode != "" && mode != FailoverPlain {
		return fmt.Errorf("topology sentinel fails over in one way (SENTINEL FAILOVER), not %q", mode)
	}
	_, err := c.query(ctx, c.Sentinels[0].Addr(), "SENTINEL", "FAILOVER", masterName)
	return err
}

// sentinelSettle waits until the sentinels agree on a primary that
// answers as one. It does not wait for a demoted primary to rejoin as a
// replica: sentinels notice a returning old primary only on their next
// INFO, up to 10 s later, and clients follow the sentinels, not the old
// primary.
func sentinelSettle(ctx context.Context, c *Cluster, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		p, err := sentinelPrimary(ctx, c, "")
		if err == nil {
			var role any
			if role, err = c.query(ctx, p.Addr(), "ROLE"); err == nil {
				if r, _ := role.([]any); len(r) > 0 && r[0] == "master" {
					return nil
				}
				err = fmt.Errorf("%s is not yet a primary: %v", p.Name(), role)
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// NodeAt names the node behind an internal address, or returns the address.
func (c *Cluster) NodeAt(addr string) string {
	if n := c.nodeByInternal(addr); n != nil {
		return n.Name()
	}
	return addr
}

// sentinelWatch reports the first sentinel's +switch-master for each
// switch.
func sentinelWatch(ctx context.Context, c *Cluster) (<-chan RoleChange, func(), error) {
	msgs, stop, err := c.subscribeSentinels(ctx, "+switch-master")
	if err != nil {
		return nil, nil, err
	}
	out := make(chan RoleChange, 16)
	go func() {
		defer close(out)
		for m := range msgs {
			// "<master> <old-ip> <old-port> <new-ip> <new-port>"
			ch := RoleChange{Detail: m, Event: "switch-master"}
			if f := strings.Fields(m); len(f) == 5 {
				ch.From, ch.To = c.NodeAt(f[1]+":"+f[2]), c.NodeAt(f[3]+":"+f[4])
				ch.Detail = fmt.Sprintf("%s replaced %s as primary", ch.To, ch.From)
			}
			out <- ch
		}
	}()
	return out, stop, nil
}

// subscribeSentinels subscribes to a channel on every sentinel and delivers
// each payload once, as soon as the first sentinel publishes it:
// sentinels learn of a failover at different times, and the first to know
// is the one that matters.
func (c *Cluster) subscribeSentinels(ctx context.Context, channel string) (<-chan string, func(), error) {
	out := make(chan string, 16)
	merged := make(chan string, 16)
	var closers []func()
	var last error
	for _, s := range c.Sentinels {
		opts := c.sec.options(s.Addr())
		opts.DialTimeout, opts.ReadTimeout, opts.ContextTimeoutEnabled = time.Second, 0, false
		cl := redis.NewClient(opts)
		ps := cl.Subscribe(ctx, channel)
		if _, err := ps.Receive(ctx); err != nil {
			last = err
			ps.Close()
			cl.Close()
			continue
		}
		closers = append(closers, func() { ps.Close(); cl.Close() })
		go func() {
			for m := range ps.Channel() {
				select {
				case merged <- m.Payload:
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	if len(closers) == 0 {
		return nil, nil, fmt.Errorf("no sentinel accepted a subscription: %v", last)
	}
	go func() {
		defer close(out)
		// The same switch reported by another sentinel arrives within a
		// few seconds; a later switch back and forth again is news.
		seen := map[string]time.Time{}
		for {
			select {
			case m := <-merged:
				if time.Since(seen[m]) > 10*time.Second {
					seen[m] = time.Now()
					out <- m
				}
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, func() {
		for _, f := range closers {
			f()
		}
	}, nil
}
