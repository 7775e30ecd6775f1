package faults

import (
	"context"
	"errors"
	"math/rand"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/lockharness/lockharness/cluster"
	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/internal/clockshim"
)

// grantingClients reports a grant to the given slot at once.
type grantingClients struct{ slot int }

func (c grantingClients) Freeze(ctx context.Context, point string) (int, func() error, func() error, error) {
	return 0, nil, nil, errors.New("not in this test")
}
func (c grantingClients) RecipePoint() string                           { return "" }
func (c grantingClients) AwaitGrant(ctx context.Context) (int, error)   { return c.slot, nil }
func (c grantingClients) AwaitRelease(ctx context.Context) (int, error) { return c.slot, nil }
func (c grantingClients) AwaitHolder(ctx context.Context) (int, time.Duration, error) {
	return c.slot, 0, nil
}
func (c grantingClients) Frozen() []int { return nil }

func startClockNode(t *testing.T) cluster.Node {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server not installed; run `make setup`")
	}
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc not installed; the clock shim cannot be built")
	}
	lib, err := clockshim.Build(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	n, err := cluster.StartLocalConfig(context.Background(), cluster.NodeConfig{Name: "n1", Dir: t.TempDir(), Clock: true, ClockShim: lib})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Stop() })
	return n
}

// planned is a planned topology whose nodes are the given ones.
func planned(t *testing.T, topology string, nodes ...cluster.Node) *cluster.Cluster {
	t.Helper()
	cl, err := cluster.New(cluster.Spec{Topology: topology, Backend: cluster.BackendLocal})
	if err != nil {
		t.Fatal(err)
	}
	cl.Nodes = nodes
	return cl
}

func clockEnv(t *testing.T, n cluster.Node, ttl time.Duration) *Env {
	return &Env{
		Cluster: planned(t, cluster.Single, n),
		Clients: grantingClients{slot: 2},
		Rec:     history.NewRecorder(nil),
		TTL:     ttl,
		Log:     func(string, ...any) {},
	}
}

// watch samples the node's clock offset until stop is closed.
func watch(n cluster.Node, stop <-chan struct{}) <-chan map[time.Duration]bool {
	out := make(chan map[time.Duration]bool, 1)
	go func() {
		seen := map[time.Duration]bool{}
		for {
			seen[n.ClockOffset()] = true
			select {
			case <-stop:
				out <- seen
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	return out
}

func nemesisEvents(env *Env) []history.Event {
	var out []history.Event
	for _, e := range env.Rec.Events() {
		if e.IsNemesis() {
			out = append(out, e)
		}
	}
	return out
}

func TestClockJumpMovesTheChosenNodeAndBack(t *testing.T) {
	n := startClockNode(t)
	env := clockEnv(t, n, 300*time.Millisecond)
	stop := make(chan struct{})
	seen := watch(n, stop)
	err := Injection{Fault: clockJump}.run(context.Background(), env, rand.New(rand.NewSource(1)))
	close(stop)
	if err != nil {
		t.Fatal(err)
	}
	if s := <-seen; !s[600*time.Millisecond] {
		t.Errorf("offsets seen %v, want +600ms among them", s)
	}
	if d := n.ClockOffset(); d != 0 {
		t.Errorf("offset after the fault = %v, want 0", d)
	}
	ev := nemesisEvents(env)
	if len(ev) != 2 || ev[0].F != "clock-jump" || ev[0].Target != "n1" || !strings.HasPrefix(ev[0].Detail, "+600ms; client 2 just acquired") ||
		!strings.Contains(ev[1].Detail, "-600ms jump") ||
		ev[0].Facts.Clock == nil || ev[0].Facts.Clock.ByNs != int64(600*time.Millisecond) || ev[0].Facts.After == nil || ev[0].Facts.After.Client != 2 {
		t.Fatalf("nemesis events %+v", ev)
	}
}

func TestClockStrobeFlipsTheClock(t *testing.T) {
	n := startClockNode(t)
	env := clockEnv(t, n, 200*time.Millisecond)
	stop := make(chan struct{})
	seen := watch(n, stop)
	err := Injection{Fault: clockStrobe}.run(context.Background(), env, rand.New(rand.NewSource(1)))
	close(stop)
	if err != nil {
		t.Fatal(err)
	}
	if s := <-seen; !s[200*time.Millisecond] || !s[0] || len(s) != 2 {
		t.Errorf("offsets seen %v, want exactly +200ms and 0", s)
	}
	if d := n.ClockOffset(); d != 0 {
		t.Errorf("offset after the fault = %v, want 0", d)
	}
	ev := nemesisEvents(env)
	if len(ev) != 2 || ev[0].F != "clock-strobe" || !strings.HasPrefix(ev[0].Detail, "between +200ms and +0s every 50ms") ||
		ev[0].Facts.Clock == nil || ev[0].Facts.Clock.EveryNs != int64(50*time.Millisecond) {
		t.Fatalf("nemesis events %+v", ev)
	}
}

func TestClockFaultsNeedTheShim(t *testing.T) {
	n := startNode(t)
	env := clockEnv(t, n, 100*time.Millisecond)
	for _, f := range []Fault{clockJump, clockStrobe} {
		err := Injection{Fault: f}.run(context.Background(), env, rand.New(rand.NewSource(1)))
		if err == nil || !strings.Contains(err.Error(), "cluster.Spec.Clock") {
			t.Errorf("%s on a node without the shim: %v", f.Name, err)
		}
	}
	if ev := nemesisEvents(env); len(ev) != 0 {
		t.Errorf("a fault that could not start recorded %+v", ev)
	}
}

func TestClockJumpTakesItsOptions(t *testing.T) {
	n := startClockNode(t)
	env := clockEnv(t, n, 300*time.Millisecond)
	stop := make(chan struct{})
	seen := watch(n, stop)
	nem, err := Parse("clock-jump:by=-450ms,node=n1,for=100ms")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = nem[0][0].run(context.Background(), env, rand.New(rand.NewSource(1)))
	close(stop)
	if err != nil {
		t.Fatal(err)
	}
	if s := <-seen; !s[-450*time.Millisecond] || s[600*time.Millisecond] {
		t.Errorf("offsets seen %v, want -450ms and not the default +600ms", s)
	}
	if took := time.Since(start); took > 300*time.Millisecond {
		t.Errorf("a jump for 100ms took %v", took)
	}
}

func TestNeedsClock(t *testing.T) {
	for list, want := range map[string]bool{"none": false, "partition,kill-node": false, "partition,kill-node+clock-jump": true, "clock-strobe": true} {
		n, err := Parse(list)
		if err != nil {
			t.Fatal(err)
		}
		if got := n.NeedsClock(); got != want {
			t.Errorf("NeedsClock(%s) = %v, want %v", list, got, want)
		}
	}
}
