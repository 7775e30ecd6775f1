package faults

import (
	"bytes"
	"context"
	"math/rand"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/internal/options"
)

// No fault starts in the last moments of a run, where the time limit
// would heal it before its window could show anything; and a window the
// limit cuts short says so at its end, not only what it drew at its start.
func TestNoFaultStartsAtTheTimeLimit(t *testing.T) {
	var started atomic.Int32
	window := Fault{Name: "test-window", Run: func(ctx context.Context, env *Env, _ *rand.Rand, _ options.Values) error {
		started.Add(1)
		end := env.Begin(history.Facts{Nodes: []string{"n1"}}, "for 1s")
		sleep(ctx, time.Second)
		end("healed")
		return nil
	}}
	run := func(limit, gap time.Duration) (int32, string) {
		started.Store(0)
		var hist bytes.Buffer
		rec := history.NewRecorder(&hist)
		ctx, cancel := context.WithTimeout(context.Background(), limit)
		defer cancel()
		until, _ := ctx.Deadline()
		env := &Env{Rec: rec, Log: func(string, ...any) {}, Until: until}
		s := Schedule{Groups: Nemesis{{Injection{Fault: window}}}, Seed: 1, MinGap: gap, MaxGap: gap}
		if err := s.Run(ctx, env); err != nil {
			t.Fatal(err)
		}
		if err := rec.Close(); err != nil {
			t.Fatal(err)
		}
		return started.Load(), hist.String()
	}
	if n, _ := run(150*time.Millisecond, 100*time.Millisecond); n != 0 {
		t.Errorf("%d faults started with 50 ms of the run left, less than the 100 ms a schedule keeps between faults", n)
	}
	n, hist := run(400*time.Millisecond, 100*time.Millisecond)
	if n != 1 {
		t.Fatalf("%d faults started with 300 ms left after the first gap, want 1", n)
	}
	if !strings.Contains(hist, "healed (cut short by the time limit)") {
		t.Errorf("the window the time limit cut does not say so:\n%s", hist)
	}
}
