package faults

import (
	"context"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/lockharness/lockharness/cluster"
)

// keyLives reports whether the node still holds key, by its own clock.
func keyLives(t *testing.T, env *Env, n cluster.Node, key string) bool {
	t.Helper()
	v, err := env.Cluster.Do(context.Background(), n, "EXISTS", key)
	if err != nil {
		t.Fatal(err)
	}
	return v == int64(1)
}

func setKey(t *testing.T, env *Env, n cluster.Node, key string, ttl time.Duration) {
	t.Helper()
	if _, err := env.Cluster.Do(context.Background(), n, "SET", key, "v", "PX", ttl.Milliseconds()); err != nil {
		t.Fatal(err)
	}
}

// A skew sets the clock ahead for its span, which Redis reads as time: a
// key due in 3 s is gone while the clock is 5 s ahead; then the clock is
// true again, and the fault's events say so in words and facts.
func TestClockSkewSetsTheClockForItsSpan(t *testing.T) {
	n := startClockNode(t)
	env := clockEnv(t, n, time.Second)
	setKey(t, env, n, "lease", 3*time.Second)
	nem, err := Parse("clock-skew:by=5s,for=400ms,node=n1")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- nem[0][0].run(context.Background(), env, rand.New(rand.NewSource(1))) }()
	time.Sleep(200 * time.Millisecond)
	if d := n.ClockOffset(); d != 5*time.Second {
		t.Errorf("offset during the skew = %v, want +5s", d)
	}
	if keyLives(t, env, n, "lease") {
		t.Error("a key due in 3 s outlived a clock 5 s ahead")
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if d := n.ClockOffset(); d != 0 {
		t.Errorf("offset after the skew = %v, want 0", d)
	}
	ev := nemesisEvents(env)
	if len(ev) != 2 || ev[0].F != "clock-skew" || ev[0].Detail != "n1's clock +5s for 400ms" || ev[1].Detail != "back to +0s" ||
		ev[0].Facts.Clock == nil || ev[0].Facts.Clock.ByNs != int64(5*time.Second) || ev[0].Facts.HoldNs != int64(400*time.Millisecond) {
		t.Fatalf("nemesis events %+v", ev)
	}
}

// for=run holds until the run ends.
func TestClockSkewForTheRun(t *testing.T) {
	n := startClockNode(t)
	env := clockEnv(t, n, time.Second)
	nem, err := Parse("clock-skew:by=-2s,for=run")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 600*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := nem[0][0].run(ctx, env, rand.New(rand.NewSource(1))); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < 550*time.Millisecond || took > 2*time.Second {
		t.Errorf("a skew for the run ended after %v; the run lasted 600ms", took)
	}
	ev := nemesisEvents(env)
	if len(ev) != 2 || !strings.HasSuffix(ev[0].Detail, "-2s for the rest of the run") || ev[0].Facts.HoldNs != 0 || n.ClockOffset() != 0 {
		t.Fatalf("nemesis events %+v, offset after %v", ev, n.ClockOffset())
	}
}

// A drift makes Redis's clock run fast: at 50% fast a key set with PX
// 1000 as it starts is gone after 800 ms of real time (1.2 s by the
// node's clock) but there after 500 ms (750 ms); at the end the clock is
// set back to where it stood and the end tells what it gained.
func TestClockDriftRunsTheClockFast(t *testing.T) {
	n := startClockNode(t)
	env := clockEnv(t, n, time.Second)
	nem, err := Parse("clock-drift:rate=50%,for=1s,node=n1")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- nem[0][0].run(context.Background(), env, rand.New(rand.NewSource(1))) }()
	deadline := time.Now().Add(time.Second)
	for n.ClockDrift() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	setKey(t, env, n, "lease", time.Second)
	set := time.Now()
	time.Sleep(500*time.Millisecond - time.Since(set))
	if !keyLives(t, env, n, "lease") {
		t.Error("at 50% fast a key due in 1 s was gone after 500 ms")
	}
	time.Sleep(800*time.Millisecond - time.Since(set))
	if keyLives(t, env, n, "lease") {
		t.Error("at 50% fast a key due in 1 s outlived 800 ms")
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if d, r := n.ClockOffset(), n.ClockDrift(); d != 0 || r != 0 {
		t.Errorf("after the drift: offset %v, rate %d; want both 0", d, r)
	}
	ev := nemesisEvents(env)
	if len(ev) != 2 || ev[0].Detail != "n1's clock runs 50% fast for 1s" || !strings.HasPrefix(ev[1].Detail, "gained +") || !strings.HasSuffix(ev[1].Detail, "taken back") ||
		ev[0].Facts.Clock == nil || ev[0].Facts.Clock.RatePPB != 500_000_000 {
		t.Fatalf("nemesis events %+v", ev)
	}
}

// A node option naming a role is refused where the topology has no such
// node, and bad rates and spans are refused with the valid forms.
func TestClockFaultOptionsAreChecked(t *testing.T) {
	for text, want := range map[string]string{
		"clock-drift:rate=2":      "want a percentage",
		"clock-drift:rate=80%":    "within ±50%",
		"clock-skew:for=forever":  "or run for the whole run",
		"clock-skew:node=replica": "topology single has no replicas (valid: primary, holder, random, n1)",
		"clock-skew:node=n9":      `no node "n9" in topology single (valid: primary, replica, replicas, holder, random, n1)`,
	} {
		nem, err := Parse(text)
		if err == nil {
			cl, cerr := cluster.New(cluster.Spec{Topology: cluster.Single, Backend: cluster.BackendLocal})
			if cerr != nil {
				t.Fatal(cerr)
			}
			err = nem[0][0].Available(cl)
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", text, err, want)
		}
	}
}
