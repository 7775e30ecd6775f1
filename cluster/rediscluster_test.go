package cluster_test

import (
	"context"
	"fmt"
	stdnet "net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockharness/lockharness/cluster"
	"github.com/lockharness/lockharness/faults"
)

func startClusterTopology(t *testing.T, s cluster.Spec) (*cluster.Cluster, *faults.Network) {
	t.Helper()
	net := faults.NewNetwork()
	t.Cleanup(net.Close)
	start := time.Now()
	s.Topology, s.Backend, s.Dir, s.Link = cluster.RedisCluster, "local", t.TempDir(), net.Proxy
	c, err := cluster.Start(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	t.Logf("cluster of %d nodes whole in %v", len(c.Nodes), time.Since(start))
	return c, net
}

func TestSlotMatchesRedis(t *testing.T) {
	// CLUSTER KEYSLOT's answers on Redis 7.0.
	for key, want := range map[string]int{"lock:orders": 9244, "{lock:orders}:fence": 9244, "foo": 12182, "{user1000}.following": 3443, "a{}b": 13694} {
		if got := cluster.Slot(key); got != want {
			t.Errorf("Slot(%q) = %d, want %d", key, got, want)
		}
	}
	if got := cluster.SameSlot("lock:orders", ":fence"); got != "{lock:orders}:fence" {
		t.Errorf("SameSlot = %q", got)
	}
	if got := cluster.SameSlot("{a}b", ":fence"); got != "{a}b:fence" {
		t.Errorf("SameSlot keeps a tag: %q", got)
	}
}

func TestKeyNamesSpreadOverShards(t *testing.T) {
	keys := cluster.KeyNames(cluster.Spec{Topology: cluster.RedisCluster}, "lock:orders", 6)
	seen := map[int]int{}
	for _, k := range keys {
		seen[cluster.Slot(k)*3/cluster.SlotCount]++
	}
	if len(keys) != 6 || seen[0] != 2 || seen[1] != 2 || seen[2] != 2 {
		t.Fatalf("keys %v by shard %v, want 2 in each of 3", keys, seen)
	}
	if got := cluster.KeyNames(cluster.Spec{Topology: cluster.Single}, "k", 2); fmt.Sprint(got) != "[k:0 k:1]" {
		t.Fatalf("single: %v", got)
	}
}

func TestClusterPlanRefusals(t *testing.T) {
	for _, c := range []struct {
		spec cluster.Spec
		want string
	}{
		{cluster.Spec{Shards: 2}, "--shards 2: a cluster needs 3 to 16 shards"},
		{cluster.Spec{Replicas: -1}, "--replicas -1"},
		{cluster.Spec{Nodes: 5}, "not --nodes 5"},
	} {
		c.spec.Topology, c.spec.Backend = cluster.RedisCluster, "local"
		if err := c.spec.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.spec, err, c.want)
		}
	}
}

// The cluster forms through its links, a client follows MOVED through its
// own ones, and cutting the lock key's primary off (its replication and its
// bus both ways) fails it over to its replica within seconds.
func TestClusterFailsOverACutOffPrimary(t *testing.T) {
	c, net := startClusterTopology(t, cluster.Spec{})
	ctx := context.Background()
	if len(c.Nodes) != 6 {
		t.Fatalf("%d nodes, want 6", len(c.Nodes))
	}
	key := "lock:orders" // slot 9244: shard 2, n2 with replica n5
	p, err := c.Primary(ctx, key)
	if err != nil || p.Name() != "n2" {
		t.Fatalf("primary of %s: %v, %v; want n2", key, p, err)
	}
	access, err := c.ConnectClient(0)
	if err != nil {
		t.Fatal(err)
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: access.Nodes,
		Dialer: func(ctx context.Context, network, addr string) (stdnet.Conn, error) {
			return (&stdnet.Dialer{}).DialContext(ctx, network, access.Dial[addr])
		}})
	defer cc.Close()
	for _, k := range cluster.KeyNames(cluster.Spec{Topology: cluster.RedisCluster}, "k", 6) {
		if err := cc.Set(ctx, k, "v", 0).Err(); err != nil {
			t.Fatalf("SET %s: %v", k, err)
		}
	}
	changes, stop, err := c.WatchPrimary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	names, err := c.InternalLinks(p.Name())
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != 1+2*5 {
		t.Fatalf("internal links of %s: %v", p.Name(), names)
	}
	cut := time.Now()
	for _, name := range names {
		if err := net.Get(name).Blackhole(); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case ch := <-changes:
		t.Logf("%v after the cut: %s", time.Since(cut), ch.Raw)
		if ch.From != "n2" || ch.To != "n5" || ch.Event != "slot-owner" {
			t.Fatalf("change %+v, want n5 replacing n2", ch)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("no failover within 15 s of cutting the primary off")
	}
	for _, name := range names {
		net.Get(name).Heal()
	}
	if err := c.Settle(ctx, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if q, err := c.Primary(ctx, key); err != nil || q.Name() != "n5" {
		t.Fatalf("primary after healing: %v, %v", q, err)
	}
	if err := c.Failover(ctx, key, cluster.FailoverPlain); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if q, err := c.Primary(ctx, key); err == nil && q.Name() == "n2" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("CLUSTER FAILOVER on n2 did not give it its slots back within 10 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
