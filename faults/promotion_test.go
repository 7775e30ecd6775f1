package faults

import (
	"context"
	"io"
	"math/rand"
	"testing"
	"time"

	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/internal/options"
)

// A step anchored to a promotion waits for the first one from its time (an
// earlier one does not count), strikes its delay after it, records what it
// waited for, and a replay of the run follows it so again; with no
// promotion, it never strikes.
func TestAStepAfterAPromotionWaitsForIt(t *testing.T) {
	rec := history.NewRecorder(io.Discard)
	t.Cleanup(func() { rec.Close() })
	env := &Env{Rec: rec, Log: func(string, ...any) {}, TTL: time.Second}
	struck := make(chan time.Time, 1)
	probe := Injection{Fault: Fault{Name: "kill-node", Run: func(_ context.Context, env *Env, _ *rand.Rand, _ options.Values) error {
		struck <- time.Now()
		env.Begin(history.Facts{Nodes: []string{"n1"}}, "struck")("healed")
		return nil
	}}}
	promote := func(node, replaced string) time.Time {
		rec.Record(history.Event{Type: history.Info, Process: history.Nemesis, F: "switch-master", Phase: history.Instant,
			Facts: &history.Facts{Nodes: []string{node}, Replaced: replaced}})
		return time.Now()
	}
	start := time.Now()
	promote("n1", "n0") // before the step's time
	st := Step{Injection: probe, At: 50 * time.Millisecond, AfterPromotion: true, Delay: 100 * time.Millisecond}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- st.run(ctx, env, start, rand.New(rand.NewSource(1))) }()
	time.Sleep(300 * time.Millisecond)
	select {
	case <-struck:
		t.Fatal("the step struck with no promotion after its time")
	default:
	}
	promoted := promote("n2", "n1")
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if at := <-struck; at.Sub(promoted) < 100*time.Millisecond || at.Sub(promoted) > time.Second {
		t.Errorf("struck %v after the promotion, want its delay of 100ms", at.Sub(promoted))
	}
	events := rec.Events()
	history.Upgrade(events)
	f := FollowedOf(events, "kill-node", 1, 0)
	if len(f.Faults) != 1 || f.Faults[0].AfterPromotion == nil {
		t.Fatalf("followed %+v", f.Faults)
	}
	if p := f.Faults[0].AfterPromotion; p.Node != "n2" || p.Delay != 0.1 || p.Waited < 0.04 || p.Waited > 0.1 || p.At != secs(events[1].Time) {
		t.Errorf("the fault followed %+v, want n2's promotion, 100 ms after, waited for from 0.05 s", p)
	}
	steps, err := f.Steps()
	if err != nil || len(steps) != 1 || !steps[0].AfterPromotion || steps[0].Delay != 100*time.Millisecond || steps[0].At != time.Duration(f.Faults[0].AfterPromotion.Waited*1e9) {
		t.Errorf("a replay follows %+v (%v)", steps, err)
	}

	short, stop := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer stop()
	st.At = 0
	if err := st.run(short, env, time.Now(), rand.New(rand.NewSource(1))); err != nil {
		t.Fatal(err)
	}
	select {
	case <-struck:
		t.Error("a step struck with no promotion at all")
	default:
	}
}
