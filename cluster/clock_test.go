package cluster

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/lockharness/lockharness/internal/clockshim"
	"github.com/redis/go-redis/v9"
)

// startClockNode starts a node under a freshly built clock shim.
func startClockNode(t *testing.T, persistence string) *LocalNode {
	t.Helper()
	needRedis(t)
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc not installed; the clock shim cannot be built")
	}
	lib, err := clockshim.Build(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	n, err := StartLocalConfig(context.Background(), NodeConfig{Name: "n1", Dir: t.TempDir(), Persistence: persistence, Clock: true, ClockShim: lib})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Stop() })
	return n
}

// skew is how far the node's TIME is from ours.
func skew(t *testing.T, c *redis.Client) time.Duration {
	t.Helper()
	now, err := c.Time(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	return time.Until(now)
}

func near(d, want time.Duration) bool { return d > want-2*time.Second && d < want+2*time.Second }

func TestClockShimMovesTheNodesClock(t *testing.T) {
	ctx := context.Background()
	n := startClockNode(t, PersistNone)
	c := client(t, n)
	if d := skew(t, c); !near(d, 0) {
		t.Fatalf("a fresh node's clock is %v off", d)
	}
	if err := c.Set(ctx, "k", "v", 60*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	if err := n.SetClockOffset(120 * time.Second); err != nil {
		t.Fatal(err)
	}
	if got := n.ClockOffset(); got != 120*time.Second {
		t.Fatalf("ClockOffset = %v", got)
	}
	if v, err := c.Get(ctx, "k").Result(); err != redis.Nil {
		t.Fatalf("GET k 120s after a 60s PX = %q, %v; want no key", v, err)
	}
	if d := skew(t, c); !near(d, 120*time.Second) {
		t.Fatalf("TIME is %v off after +120s", d)
	}
	// The node keeps serving, on the skewed clock.
	if err := c.Set(ctx, "k2", "v", 10*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	if v, err := c.Get(ctx, "k2").Result(); err != nil || v != "v" {
		t.Fatalf("GET k2 = %q, %v", v, err)
	}
	if err := n.SetClockOffset(0); err != nil {
		t.Fatal(err)
	}
	if d := skew(t, c); !near(d, 0) {
		t.Fatalf("TIME is %v off after setting the offset back to 0", d)
	}
	// k2's expiry is absolute and on the skewed clock: back at true time it
	// has 130s to live instead of 10s.
	if ttl, err := c.PTTL(ctx, "k2").Result(); err != nil || ttl < 100*time.Second {
		t.Fatalf("PTTL k2 after jumping back = %v, %v; want about 130s", ttl, err)
	}
}

func TestRestartKeepsTheClockOffset(t *testing.T) {
	n := startClockNode(t, PersistNone)
	if err := n.SetClockOffset(-30 * time.Second); err != nil {
		t.Fatal(err)
	}
	if err := n.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := n.Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	if d := skew(t, client(t, n)); !near(d, -30*time.Second) {
		t.Fatalf("restarted node's clock is %v off, want -30s", d)
	}
}

func TestClockOffsetNeedsTheShim(t *testing.T) {
	n := startNode(t, PersistNone)
	if err := n.SetClockOffset(time.Second); err == nil {
		t.Fatal("SetClockOffset succeeded on a node without the shim")
	}
	if d := n.ClockOffset(); d != 0 {
		t.Fatalf("ClockOffset without the shim = %v", d)
	}
}

func TestStartFailsWhenTheShimIsNotLoaded(t *testing.T) {
	needRedis(t)
	_, err := StartLocalConfig(context.Background(), NodeConfig{Name: "n1", Dir: t.TempDir(), Clock: true, ClockShim: "/nonexistent/libclockshim.so"})
	if err == nil {
		t.Fatal("a node started although its clock shim does not exist")
	}
	t.Log(err)
}

func TestStartWithClockShimsEveryNode(t *testing.T) {
	needRedis(t)
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc not installed; the clock shim cannot be built")
	}
	c, err := Start(context.Background(), Spec{Topology: "single", Backend: "local", Persistence: PersistNone, Dir: t.TempDir(), Clock: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, n := range c.Nodes {
		if err := n.SetClockOffset(time.Hour); err != nil {
			t.Fatal(err)
		}
		if d := skew(t, client(t, n)); !near(d, time.Hour) {
			t.Errorf("%s: clock %v off after +1h", n.Name(), d)
		}
	}
}
