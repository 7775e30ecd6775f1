package cluster_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/lockharness/lockharness/cluster"
	"github.com/lockharness/lockharness/faults"
)

func startSentinelTopology(t *testing.T) (*cluster.Cluster, *faults.Network) {
	return startTopology(t, "redis-sentinel", cluster.Spec{Topology: "sentinel", Persistence: cluster.PersistNone})
}

// startTopology starts spec's topology on the local backend with its
// links through a fault network, both stopped when the test ends; a test
// whose server binary is not installed is skipped.
func startTopology(t *testing.T, binary string, spec cluster.Spec) (*cluster.Cluster, *faults.Network) {
	t.Helper()
	if _, err := exec.LookPath(binary); err != nil {
		t.Skipf("%s not installed; run `make setup`", binary)
	}
	net := faults.NewNetwork()
	t.Cleanup(net.Close)
	start := time.Now()
	spec.Backend, spec.Dir, spec.Link = "local", t.TempDir(), net.Proxy
	c, err := cluster.Start(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	t.Logf("%s topology up in %v", spec.Topology, time.Since(start))
	return c, net
}

func TestSentinelPromotesAReplicaWhenThePrimaryIsCutOff(t *testing.T) {
	c, net := startSentinelTopology(t)
	ctx := context.Background()
	if len(c.Nodes) != 3 || len(c.Sentinels) != 3 {
		t.Fatalf("%d nodes, %d sentinels", len(c.Nodes), len(c.Sentinels))
	}
	p, err := c.Primary(ctx, "")
	if err != nil || p.Name() != "n1" {
		t.Fatalf("primary %v, %v; want n1", p, err)
	}
	// Cut the primary's internal address: replicas and sentinels lose it.
	names, err := c.InternalLinks("n1")
	if err != nil || len(names) != 1 {
		t.Fatal(names, err)
	}
	l := net.Get(names[0])
	if err := l.Blackhole(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		p, err = c.Primary(ctx, "")
		if err == nil && p.Name() != "n1" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no failover 20s after cutting the primary off: %v %v", p, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("promoted %s", p.Name())
	l.Heal()
	if err := c.Settle(ctx, 30*time.Second); err != nil {
		t.Fatalf("after heal: %v", err)
	}
	// The primary moved for good: no reset can make this a fresh topology.
	if did, err := c.Reset(ctx, 5*time.Second); err == nil || !strings.Contains(err.Error(), "is the primary, not n1") {
		t.Errorf("Reset after a failover: %q, %v; want refused, naming the primary", did, err)
	}
}

// TestResetEmptiesAFreshSentinelTopology: keys written to the primary are
// gone from every node after Reset, which proves n1 still the primary.
func TestResetEmptiesAFreshSentinelTopology(t *testing.T) {
	c, _ := startSentinelTopology(t)
	ctx := context.Background()
	for _, k := range []string{"a", "b", "c"} {
		if _, err := c.Do(ctx, c.Nodes[0], "SET", k, "v"); err != nil {
			t.Fatal(err)
		}
	}
	did, err := c.Reset(ctx, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(did, "1 primaries flushed") {
		t.Errorf("reset said %q", did)
	}
	for _, n := range c.Nodes {
		if size, err := c.Do(ctx, n, "DBSIZE"); err != nil || size != int64(0) {
			t.Errorf("%s after Reset: DBSIZE %v, %v", n.Name(), size, err)
		}
	}
}

// A Sentinel deployment as a --target: its nodes are the ones its
// sentinels announce, each client reaches every sentinel through a link of
// its own, and every node address the sentinels announce is mapped to the
// client's own link for that node, so that no client traffic passes the
// proxies by; and the harness stops none of it when it closes.
func TestTargetSentinelPutsEveryAnnouncedAddressBehindAProxy(t *testing.T) {
	team, _ := startSentinelTopology(t)
	var sentinels []string
	for _, s := range team.Sentinels {
		sentinels = append(sentinels, s.Addr())
	}
	target, err := cluster.New(cluster.Spec{Target: "redis-sentinel://" + strings.Join(sentinels, ",") + "/lockharness", Backend: cluster.BackendLocal})
	if err != nil {
		t.Fatal(err)
	}
	links := map[string]string{} // proxy → upstream
	link := func(name, upstream string) (string, error) {
		proxy := "proxy-" + name
		links[proxy] = upstream
		return proxy, nil
	}
	if err := target.Start(context.Background(), t.TempDir(), link); err != nil {
		t.Fatal(err)
	}
	if target.Topology != cluster.TargetSentinel || target.Shape() != cluster.Sentinel || target.Can(cluster.NodeControl) == nil {
		t.Fatalf("topology %s shape %s node control %v: want a sentinel-shaped target without node control", target.Topology, target.Shape(), target.Can(cluster.NodeControl))
	}
	access, err := target.ConnectClient(0, false)
	if err != nil {
		t.Fatal(err)
	}
	if access.Master != "lockharness" || len(access.Sentinels) != 3 {
		t.Errorf("access %+v: want the master's name and the 3 sentinels", access)
	}
	for _, s := range access.Sentinels {
		if up := links[s]; !strings.Contains(strings.Join(sentinels, ","), up) || up == "" {
			t.Errorf("sentinel address %s is no link to a sentinel (upstream %q)", s, up)
		}
	}
	ctx := context.Background()
	announced := map[string]bool{}
	for _, n := range team.Nodes {
		// The team's topology announces its nodes by their internal
		// addresses: what its sentinels name.
		announced[team.InternalAddr(n.Name())] = true
	}
	for _, s := range team.Sentinels {
		// and its sentinels by their own (SENTINEL sentinels), which a
		// client that discovers sentinels dials.
		announced[s.Addr()] = true
	}
	if len(access.Dial) != len(announced) {
		t.Errorf("dial maps %d addresses, want the %d nodes and sentinels the sentinels announce: %v", len(access.Dial), len(announced), access.Dial)
	}
	for from, to := range access.Dial {
		if !announced[from] || links[to] != from {
			t.Errorf("dial %s → %s (upstream %s): want an announced address mapped to the client's link to it", from, to, links[to])
		}
	}
	if p, err := team.Primary(ctx, ""); err != nil || access.Dial[team.InternalAddr(p.Name())] == "" {
		t.Errorf("the primary %v (%v) is not behind a proxy", p, err)
	}
	target.Close()
	for _, n := range team.Servers() {
		if !n.Running() {
			t.Errorf("closing the target stopped the team's %s", n.Name())
		}
	}
}
