package faults

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
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

func TestParseNemesis(t *testing.T) {
	fs, err := Parse("partition,kill-node+pause-client")
	if err != nil || len(fs) != 2 || fs[1].String() != "kill-node+pause-client" || len(fs[1]) != 2 {
		t.Fatalf("Parse = %v, %v", fs, err)
	}
	if fs, err := Parse("none"); err != nil || len(fs) != 0 || fs.String() != "none" {
		t.Fatalf("none = %v, %v", fs, err)
	}
	for list, want := range map[string]string{
		"kill-node:delay=4s":                        "kill-node:delay=4s",
		"clock-jump:by=3s,node=holder":              "clock-jump:by=3s:node=holder",
		"clock-jump:by=-3s:node=n1,partition":       "clock-jump:by=-3s:node=n1,partition",
		"partition-majorities+kill-node:delay=4s":   "partition-majorities+kill-node:delay=4s",
		"partition:for=1s,latency:delay=5ms,for=2s": "partition:for=1s,latency:delay=5ms:for=2s",
	} {
		n, err := Parse(list)
		if err != nil || n.String() != want {
			t.Errorf("Parse(%q) = %q, %v; want %q", list, n, err, want)
			continue
		}
		if again, err := Parse(n.String()); err != nil || again.String() != want {
			t.Errorf("Parse(%q) again = %q, %v", want, again, err)
		}
	}
	for list, wants := range map[string][]string{
		"nosuch":                  {`unknown nemesis "nosuch" (valid: clock-drift, clock-jump, clock-skew, clock-strobe, cluster-failover, delay-write, failover, kill-client, kill-node, kill-primary, latency, none, partition, partition-holder, partition-majorities, partition-members, partition-minority, partition-primary, pause-acquire, pause-client,`},
		"none,partition":          {`"none" cannot be combined`},
		"kill-node:delay=soon":    {"delay=soon", "duration", "valid: delay=D, node=holder|random|NAME"},
		"kill-node:delay=-1s":     {"not negative"},
		"kill-node:speed=1":       {`unknown option "speed"`, "delay=D"},
		"clock-jump:by":           {"by needs a value"},
		"kill-client:for=1s":      {"kill-client takes no options"},
		"partition:for=1s,for=2s": {"given twice"},
	} {
		_, err := Parse(list)
		for _, w := range wants {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("Parse(%q) = %v, want it to mention %q", list, err, w)
			}
		}
	}
	n, _ := Parse("partition,kill-node+kill-node:node=n1")
	if got := n.WithOption("kill-node", "delay", "4s").String(); got != "partition,kill-node:delay=4s+kill-node:delay=4s:node=n1" {
		t.Errorf("WithOption: %s", got)
	}
}

func TestAvailableAsksTheTopology(t *testing.T) {
	single, sentinel := planned(t, cluster.Single), planned(t, cluster.Sentinel)
	for _, c := range []struct {
		list string
		cl   *cluster.Cluster
		want string
	}{
		{"partition,kill-node", single, ""},
		{"partition-primary", single, "nemesis partition-primary: topology single has no replication"},
		{"partition-primary", sentinel, ""},
		{"partition-majorities", sentinel, "topology sentinel has no majorities (independent nodes of which a client needs a majority); topologies with it: redlock"},
		{"kill-node:node=n2", single, `nemesis kill-node:node=n2: no node "n2" in topology single (valid: holder, random, n1)`},
		{"kill-node:node=n2", sentinel, ""},
	} {
		n, err := Parse(c.list)
		if err != nil {
			t.Fatal(err)
		}
		err = n.Available(c.cl)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s on %s: %v", c.list, c.cl.Topology, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s on %s: %v, want %q", c.list, c.cl.Topology, err, c.want)
		}
	}
}

// A refusing link closes what it carried and refuses new connections, so
// a client learns at once that nothing got through; healed, it listens on
// its own address again.
func TestRefusedLinkRefusesThenHeals(t *testing.T) {
	upstream := echoServer(t)
	n := NewNetwork()
	defer n.Close()
	l, err := n.Link("c0-n1", upstream)
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr()
	open, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()
	l.Refuse()
	if got := n.Faulted(); len(got) != 1 || !strings.Contains(got[0], "refusing connections") {
		t.Errorf("Faulted() = %q, want the link refusing", got)
	}
	// The connection open at the cut is closed: a read ends at once, and
	// not by the deadline.
	open.Write([]byte("x"))
	open.SetReadDeadline(time.Now().Add(time.Second))
	if _, err := open.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("a connection open at the cut: read %v, want it closed", err)
	}
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		t.Fatal("a refusing link took a connection")
	}
	if err := n.HealAll(); err != nil {
		t.Fatal(err)
	}
	if got := n.Faulted(); len(got) != 0 {
		t.Errorf("Faulted() after heal = %q", got)
	}
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("healed link on %s: %v", addr, err)
	}
	defer c.Close()
	c.Write([]byte("x"))
	c.SetReadDeadline(time.Now().Add(time.Second))
	if _, err := c.Read(make([]byte, 1)); err != nil {
		t.Errorf("healed link carried nothing: %v", err)
	}
}

// Two faults whose windows overlap on one link each add their own toxics
// and heal only those: two delays stack instead of clashing by name (a
// schedule whose two latency faults overlapped failed its run with
// "toxic already exists"), the first heal leaves the second's delay in
// place, and a link two faults refused listens again only when both have
// healed.
func TestOverlappingFaultsOnALinkHealTheirOwn(t *testing.T) {
	upstream := echoServer(t)
	n := NewNetwork()
	defer n.Close()
	if _, err := n.Link("c0-n1", upstream); err != nil {
		t.Fatal(err)
	}
	first, second := n.Get("c0-n1"), n.Get("c0-n1")
	if err := first.Delay(50 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := second.Delay(50 * time.Millisecond); err != nil {
		t.Fatalf("a second delay on the link: %v", err)
	}
	if got := n.Faulted(); len(got) != 1 || strings.Count(got[0], "latency") != 4 {
		t.Errorf("Faulted() = %q, want both delays, both ways", got)
	}
	if err := first.Heal(); err != nil {
		t.Fatal(err)
	}
	if got := n.Faulted(); len(got) != 1 || strings.Count(got[0], "latency") != 2 {
		t.Errorf("after the first heal Faulted() = %q, want the second delay only", got)
	}
	if err := second.Heal(); err != nil {
		t.Fatal(err)
	}
	if got := n.Faulted(); len(got) != 0 {
		t.Errorf("after both heals Faulted() = %q", got)
	}

	first.Refuse()
	second.Refuse()
	if err := first.Heal(); err != nil {
		t.Fatal(err)
	}
	if c, err := net.Dial("tcp", first.Addr()); err == nil {
		c.Close()
		t.Error("the link listened again while the second fault still refused it")
	}
	if err := second.Heal(); err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", first.Addr())
	if err != nil {
		t.Fatalf("healed by both: %v", err)
	}
	c.Close()
}

// echoServer listens on a local port and echoes what each connection
// sends, until the test ends; it returns its address.
func echoServer(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go io.Copy(c, c)
		}
	}()
	return l.Addr().String()
}

// A heal does not wait minutes on a toxic toxiproxy cannot let go of: a
// latency toxic holding megabytes for a destination that stopped reading
// is flushed into it as it is removed, 5 s a chunk. The heal returns after
// removeTimeout, naming the link as still faulted, so that no run starts
// on it.
func TestAHealDoesNotWaitOnAStuckRemoval(t *testing.T) {
	sink, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	go func() {
		for {
			c, err := sink.Accept()
			if err != nil {
				return
			}
			defer c.Close() // accepted, never read
		}
	}()
	n := NewNetwork()
	defer n.Close()
	l, err := n.Link("c0-n1", sink.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Delay(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", l.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	chunk := make([]byte, 1<<20)
	c.SetWriteDeadline(time.Now().Add(2 * time.Second))
	for range 48 {
		if _, err := c.Write(chunk); err != nil {
			break
		}
	}
	began := time.Now()
	l.Heal()
	if took := time.Since(began); took > removeTimeout+2*time.Second {
		t.Errorf("the heal took %v", took)
	}
	if got := n.Faulted(); len(got) != 1 || !strings.Contains(got[0], "still being removed") {
		t.Skipf("the removal was not held up this time (Faulted %q): nothing to check", got)
	}
	if err := n.HealAll(); err == nil || !strings.Contains(err.Error(), "c0-n1: ") {
		t.Errorf("HealAll with a removal under way: %v", err)
	}
}
