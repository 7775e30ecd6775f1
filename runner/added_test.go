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
	"github.com/lockharness/lockharness/locks"
	"github.com/lockharness/lockharness/reports"
	"github.com/lockharness/lockharness/scenario"
)

// stall is a fault written here, as a contributor would add one: one value
// and one registry line (addFault). It freezes the first client to reach
// its write for two TTLs and says so in its facts, and declares how the
// reports draw it.
var stall = faults.Fault{
	Name:         "test-stall",
	Summary:      "freeze a client before its write for 2 TTLs (a fault of this test)",
	Drawing:      history.Drawing{Colour: color.NRGBA{R: 140, G: 130, B: 40, A: 70}, Legend: "client stalled"},
	Waits:        true,
	StopsClients: true,
	Run: func(ctx context.Context, env *faults.Env, _ *rand.Rand, _ options.Values) error {
		slot, resume, _, err := env.Freeze(ctx, "before-write")
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
	// A second fault of the same name in one test takes the first's place.
	others := slices.DeleteFunc(slices.Clone(saved), func(g faults.Fault) bool { return g.Name == f.Name })
	faults.Registry = append(others, f)
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

// testCAD is a recipe added here, as a program built on the harness adds
// one: a value and one Register line. It is the harness's cad under a name
// of its own, registered for this test binary, whose workers are the
// binary itself (runtest.ServeWorker): the contract test
// (TestEveryRecipeRunsCleanEverywhereItRuns) runs it everywhere it runs.
var testCAD = func() locks.Recipe {
	r, err := locks.Lookup("cad")
	if err != nil {
		panic(err)
	}
	r.Name, r.Summary = "test-cad", "the harness's cad under a name of this test's"
	return r
}()

var testCADRegistered = locks.Register(testCAD)

// The added recipe runs and is judged as any: a holder frozen past its
// TTL writes stale data, caught and told with the recipe's own name.
func TestARecipeAddedInATestRunsAndIsCaught(t *testing.T) {
	if testCADRegistered != nil {
		t.Fatalf("the test's recipe was refused: %v", testCADRegistered)
	}
	s := spec(testCAD.Name, "pause-client", 10*time.Second, 1)
	s.Hold = scenario.Duration(300 * time.Millisecond)
	out := runOutcome(t, s)
	wantAnomaly(t, out.Results, checker.StaleWrite)
	if lock := out.Results.Provenance.Lock; lock == nil || lock.Name != testCAD.Name {
		t.Errorf("results.json names the lock %+v, want %s", lock, testCAD.Name)
	}
	events, err := history.ReadFile(history.InDir(out.Dir))
	if err != nil {
		t.Fatal(err)
	}
	var told []string
	for _, f := range out.Results.Checker.Findings {
		if f.Anomaly == checker.StaleWrite {
			told = append(told, reports.Causes(events, f)...)
		}
	}
	if !slices.ContainsFunc(told, func(c string) bool { return strings.Contains(c, "was frozen") }) {
		t.Errorf("no stale write's causes tell the frozen holder: %q", told)
	}
}
