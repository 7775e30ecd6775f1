package faults

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/lockharness/lockharness/cluster"
)

func startNode(t *testing.T) cluster.Node {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server not installed; run `make setup`")
	}
	n, err := cluster.StartLocal(context.Background(), "n1", t.TempDir(), cluster.PersistNone)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Stop() })
	return n
}

func TestLinkBlackholeAndHeal(t *testing.T) {
	n := startNode(t)
	net := NewNetwork()
	defer net.Close()
	l, err := net.Link("c0-n1", n.Addr())
	if err != nil {
		t.Fatal(err)
	}
	other, _ := net.Link("c1-n1", n.Addr())
	if err := cluster.Ping(l.Addr(), time.Second); err != nil {
		t.Fatalf("healthy link: %v", err)
	}
	if err := l.Blackhole(); err != nil {
		t.Fatal(err)
	}
	if err := cluster.Ping(l.Addr(), 300*time.Millisecond); err == nil {
		t.Fatal("PING answered through a blackholed link")
	}
	if err := cluster.Ping(other.Addr(), time.Second); err != nil {
		t.Fatalf("a partition of one link cut another: %v", err)
	}
	l.Heal()
	if err := cluster.Ping(l.Addr(), time.Second); err != nil {
		t.Fatalf("healed link: %v", err)
	}
}

func TestLinkDelayIsBothWays(t *testing.T) {
	n := startNode(t)
	net := NewNetwork()
	defer net.Close()
	l, _ := net.Link("c0-n1", n.Addr())
	if err := l.Delay(100 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := cluster.Ping(l.Addr(), 2*time.Second); err != nil {
		t.Fatal(err)
	}
	if rtt := time.Since(start); rtt < 200*time.Millisecond {
		t.Errorf("round trip %v with 100ms each way, want at least 200ms", rtt)
	}
	net.HealAll()
	start = time.Now()
	cluster.Ping(l.Addr(), time.Second)
	if rtt := time.Since(start); rtt > 100*time.Millisecond {
		t.Errorf("round trip %v after heal", rtt)
	}
}

func TestLookupNemesis(t *testing.T) {
	fs, err := Lookup("partition,kill-node+pause-client")
	if err != nil || len(fs) != 2 || fs[1].Name() != "kill-node+pause-client" || len(fs[1]) != 2 {
		t.Fatalf("Lookup = %v, %v", fs, err)
	}
	if fs, err := Lookup("none"); err != nil || len(fs) != 0 {
		t.Fatalf("none = %v, %v", fs, err)
	}
	if _, err := Lookup("nosuch"); err == nil || !strings.HasPrefix(err.Error(), `unknown nemesis "nosuch" (valid: clock-jump, clock-strobe, failover, kill-client, kill-node, kill-primary, latency, none, partition, partition-majorities, partition-minority, partition-primary, pause-acquire, pause-client,`) {
		t.Fatalf("got %v", err)
	}
	if _, err := Lookup("none,partition"); err == nil {
		t.Fatal("none combined with a fault was accepted")
	}
}
