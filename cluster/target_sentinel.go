package cluster

import (
	"context"
	"errors"
	"fmt"
	"github.com/lockharness/lockharness/access"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// TargetSentinel is a Sentinel deployment the harness did not start
// (--target redis-sentinel://...).
const TargetSentinel = "target-sentinel"

// targetSentinel is a team's Sentinel deployment: its sentinels, and the
// primary and replicas they name when the run starts. Clients see a
// sentinel topology: they ask the sentinels, through their own proxies,
// for the primary, and dial every node address the sentinels announce
// through their own proxy for that node (access.Access.Dial), so client and
// link faults reach all of their traffic. The nodes are not the harness's
// to pause, kill, restart, fail over or move the clock of: it offers no
// fault a capability, as a single target offers none, and the harness
// sends the deployment only PING, INFO, ROLE, SENTINEL queries and reads
// of its own keys. A client finds in it what it finds in sentinel, so the
// same locks run on both.
var targetSentinel = topology{
	name:    TargetSentinel,
	shape:   Sentinel,
	has:     []Capability{access.Primary, access.Replicas, access.Sentinels},
	summary: "an existing Sentinel deployment the harness did not start (--target redis-sentinel://HOST:PORT,.../MASTER): client and link faults only",
	plan: func(s Spec) (plan, error) {
		if s.describing {
			return plan{nodes: []string{"n1", "n2", "n3"}, sentinels: []string{"s1", "s2", "s3"}}, nil
		}
		t, err := ParseTarget(s.Target)
		if err != nil {
			return plan{}, err
		}
		if s.Auth || s.TLS {
			return plan{}, errors.New("--auth and --tls secure the servers the harness starts; a --target brings its own (user:password@ in its URL)")
		}
		if s.Backend != BackendLocal {
			return plan{}, fmt.Errorf("--target runs no nodes, so no backend: drop --backend %s", s.Backend)
		}
		// The nodes are whatever the sentinels name when the run starts.
		p := plan{target: t}
		for i := range t.Sentinels {
			p.sentinels = append(p.sentinels, fmt.Sprintf("s%d", i+1))
		}
		return p, nil
	},
	start:  startTargetSentinel,
	access: sentinelAccess,
	// Read-only: whom the sentinels name, and their +switch-master, so a
	// failover the deployment makes during the run is on the page.
	primary: sentinelPrimary,
	watch:   sentinelWatch,
}

// sentinelAccess is how a client reaches a Sentinel deployment: the
// sentinels through its links, and every address the sentinels announce,
// for a node or for another sentinel (go-redis adds the sentinels that
// SENTINEL sentinels names), mapped to its link for that server.
func sentinelAccess(c *Cluster, link func(string) string) access.Access {
	a := access.Access{Master: c.master(), Dial: map[string]string{}}
	for i, s := range c.planned.sentinels {
		a.Sentinels = append(a.Sentinels, link(s))
		if i < len(c.Sentinels) {
			a.Dial[c.Sentinels[i].Addr()] = link(s)
		}
		for _, announced := range c.announcedSentinels[s] {
			a.Dial[announced] = link(s)
		}
	}
	for _, n := range c.planned.nodes {
		a.Dial[c.internal[n]] = link(n)
	}
	return a
}

// startTargetSentinel asks the deployment's sentinels for the primary and
// its replicas and takes them as the run's nodes: n1 the primary, then the
// replicas the sentinels see up, in the order they list them. Every
// sentinel must answer and agree on the primary: a run against a
// deployment in the middle of a failover would start from no known state.
func startTargetSentinel(ctx context.Context, c *Cluster) error {
	t := c.planned.target
	for i, addr := range t.Sentinels {
		s := &externalNode{name: c.planned.sentinels[i], addr: addr}
		if err := c.Ping(s, 2*time.Second); err != nil {
			return fmt.Errorf("--target %s: sentinel %s does not answer PING: %w", t.Redacted(), addr, err)
		}
		c.Sentinels = append(c.Sentinels, s)
	}
	primary := ""
	for _, s := range c.Sentinels {
		v, err := c.query(ctx, s.Addr(), "SENTINEL", "get-master-addr-by-name", t.Master)
		if errors.Is(err, redis.Nil) {
			return fmt.Errorf("--target %s: sentinel %s knows no primary named %q", t.Redacted(), s.Addr(), t.Master)
		}
		if err != nil {
			return fmt.Errorf("--target %s: sentinel %s: SENTINEL get-master-addr-by-name %s: %w", t.Redacted(), s.Addr(), t.Master, err)
		}
		hp, _ := v.([]any)
		if len(hp) != 2 {
			return fmt.Errorf("--target %s: sentinel %s knows no primary named %q", t.Redacted(), s.Addr(), t.Master)
		}
		addr := net.JoinHostPort(fmt.Sprint(hp[0]), fmt.Sprint(hp[1]))
		if primary != "" && addr != primary {
			return fmt.Errorf("--target %s: the sentinels disagree on the primary (%s and %s): run when the deployment has settled", t.Redacted(), primary, addr)
		}
		primary = addr
	}
	v, err := c.query(ctx, c.Sentinels[0].Addr(), "SENTINEL", "replicas", t.Master)
	if err != nil {
		return fmt.Errorf("--target %s: SENTINEL replicas %s: %w", t.Redacted(), t.Master, err)
	}
	addrs := []string{primary}
	list, _ := v.([]any)
	for _, entry := range list {
		if flags := field(entry, "flags"); strings.Contains(flags, "down") || strings.Contains(flags, "disconnected") {
			continue
		}
		addrs = append(addrs, net.JoinHostPort(field(entry, "ip"), field(entry, "port")))
	}
	c.announceSentinels(ctx)
	c.internal = map[string]string{}
	c.planned.nodes = nil
	for i, addr := range addrs {
		n := &externalNode{name: fmt.Sprintf("n%d", i+1), addr: addr}
		if err := c.Ping(n, 2*time.Second); err != nil {
			return fmt.Errorf("--target %s: node %s, which the sentinels announce, does not answer PING from here: %w", t.Redacted(), addr, err)
		}
		c.Nodes = append(c.Nodes, n)
		c.planned.nodes = append(c.planned.nodes, n.name)
		// The address the sentinels announce is the one a client is
		// told to dial: Dial maps it to the client's link.
		c.internal[n.name] = addr
	}
	return nil
}

// announceSentinels learns the address each sentinel announces to the
// others (SENTINEL sentinels), where it differs from the one in the URL, so
// that a client that discovers sentinels dials them through its links too.
// An announced address that matches no sentinel of the URL by its run id
// stays unmapped.
func (c *Cluster) announceSentinels(ctx context.Context) {
	c.announcedSentinels = map[string][]string{}
	ids := map[string]string{} // run id → sentinel name
	for _, s := range c.Sentinels {
		if v, err := c.query(ctx, s.Addr(), "INFO", "server"); err == nil {
			text, _ := v.(string)
			for _, line := range strings.Split(text, "\n") {
				if id, ok := strings.CutPrefix(strings.TrimSpace(line), "run_id:"); ok {
					ids[id] = s.Name()
				}
			}
		}
	}
	for _, s := range c.Sentinels {
		v, err := c.query(ctx, s.Addr(), "SENTINEL", "sentinels", c.master())
		if err != nil {
			continue
		}
		list, _ := v.([]any)
		for _, entry := range list {
			if name, ok := ids[field(entry, "runid")]; ok {
				addr := net.JoinHostPort(field(entry, "ip"), field(entry, "port"))
				if !slices.Contains(c.announcedSentinels[name], addr) {
					c.announcedSentinels[name] = append(c.announcedSentinels[name], addr)
				}
			}
		}
	}
}
