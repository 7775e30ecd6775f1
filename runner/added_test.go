package runner

import (
	"context"
	"image/color"
	"math/rand"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/faults"
	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/internal/options"
	"github.com/lockharness/lockharness/reports"
	"github.com/lockharness/lockharness/scenario"
)

// stall is a fault written here, as a contributor would add one: one value
// and one registry line (addFault). It freezes the first client to reach
// its write for two TTLs and says so in its facts, and declares how the
// reports draw it.
var stall = faults.Fault{
	Name:    "test-stall",
	Summary: "freeze a client before its write for 2 TTLs (a fault of this test)",
	Drawing: history.Drawing{Colour: color.NRGBA{R: 140, G: 130, B: 40, A: 70}, Legend: "client stalled"},
	Waits:   true,
	Run: func(ctx context.Context, env *faults.Env, _ *rand.Rand, _ options.Values) error {
		slot, resume, _, err := env.Clients.Freeze(ctx, "before-write")
		if err != nil {
			return nil
		}
		hold := 2 * env.TTL
		end := env.Begin(history.Facts{Clients: []int{slot}, PausedAt: "before-write", Frozen: true, HoldNs: int64(hold)}, "stalled")
		select {
		case <-time.After(hold):
		case <-ctx.Done():
		}
		err = resume()
		end("let go")
		return err
	},
}

// addFault registers f for the test, as its registry line would.
func addFault(t *testing.T, f faults.Fault) {
	saved := faults.Registry
	faults.Registry = append(slices.Clone(saved), f)
	t.Cleanup(func() { faults.Registry = saved })
}

// A fault added in one file and one registry line is parsed, run,
// recorded, drawn on the timeline in the colour and with the legend words
// it declares, and told in the causes, with no edit anywhere else.
func TestAFaultAddedInATestIsRunDrawnAndExplained(t *testing.T) {
	addFault(t, stall)
	if _, err := faults.Parse("test-stall"); err != nil {
		t.Fatalf("the added fault is not parsed: %v", err)
	}
	s := spec("cad", "test-stall", 6*time.Second, 1)
	s.Hold = scenario.Duration(300 * time.Millisecond)
	out := runOutcome(t, s)
	r := out.Results
	if r.Faults["test-stall"] < 1 || r.Anomalies[checker.StaleWrite] < 1 {
		t.Fatalf("the added fault did not run or was not caught: faults %v, anomalies %v", r.Faults, r.Anomalies)
	}
	events, err := history.ReadFile(history.InDir(out.Dir))
	if err != nil {
		t.Fatal(err)
	}
	timeline := reports.TimelineData(events, r)
	drawn := false
	for _, b := range timeline.Bands {
		drawn = drawn || strings.HasPrefix(b.Label(), "test-stall client ")
	}
	if !drawn {
		t.Error("the timeline draws no band for the added fault")
	}
	keyed := false
	for _, k := range timeline.FaultKeys() {
		if k.Fault == "test-stall" {
			keyed = true
			if k.Colour != stall.Drawing.Colour || k.Label != "fault: test-stall (client stalled)" {
				t.Errorf("the key draws the added fault as %v %q, it declares %v %q", k.Colour, k.Label, stall.Drawing.Colour, stall.Drawing.Legend)
			}
		}
	}
	if !keyed {
		t.Error("the timeline's key has no entry for the added fault")
	}
	var told []string
	for _, f := range r.Checker.Findings {
		if f.Anomaly == checker.StaleWrite {
			told = append(told, reports.Causes(events, f)...)
		}
	}
	if !slices.ContainsFunc(told, func(c string) bool {
		return strings.Contains(c, "was frozen at before-write for 2s (test-stall, ")
	}) {
		t.Errorf("no stale write's causes tell the added fault from its facts: %q", told)
	}
}
