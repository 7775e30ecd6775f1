package search

import (
	"context"
	"math"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/faults"
	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/internal/proc"
	"github.com/lockharness/lockharness/reports"
	"github.com/lockharness/lockharness/runner"
	"github.com/lockharness/lockharness/runner/runtest"
	"github.com/lockharness/lockharness/scenario"
)

// replays runs a recorded run's replay n times on one kept topology,
// stopping each at the anomaly it looks for, and returns the outcomes.
func replays(t *testing.T, dir string, n int) (Recorded, []runner.Outcome) {
	t.Helper()
	rec, err := ReadRecorded(dir)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := rec.ReplaySpec()
	if err != nil {
		t.Fatal(err)
	}
	plan, err := spec.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proc.KillAll)
	pool := runner.NewTopologies()
	defer pool.Close()
	store := t.TempDir()
	pool.Expect(plan, n, 1, store)
	var outs []runner.Outcome
	for range n {
		out, err := runner.Run(context.Background(), plan, runner.Options{Store: store, WorkerBin: workerBin, Reuse: pool, StopOn: rec.Kinds()})
		if err != nil {
			t.Fatalf("replay: %v", err)
		}
		outs = append(outs, out)
	}
	return rec, outs
}

// A failover's double grant comes back when its schedule is replayed:
// the same cut, on the primary, for as long, as long after a grant, with
// the same clients cut off (the holder spared).
func TestReplayBringsTheDoubleGrantBack(t *testing.T) {
	runtest.NeedSentinel(t)
	orig := runEntryOutcome(t, "failover-double-grant", 2)
	rec, outs := replays(t, orig.Dir, 5)
	came := 0
	for i, out := range outs {
		if Reproduces(out.Results, rec.Kinds()) {
			came++
		}
		f, err := faults.ReadFollowed(out.Dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(f.Faults) == 0 {
			t.Errorf("replay %d followed no fault", i+1)
			continue
		}
		got, want := f.Faults[0], rec.Followed.Faults[0]
		gotIn, err1 := faults.ParseOne(got.Fault + ":" + got.Options)
		wantIn, err2 := faults.ParseOne(want.Fault + ":" + want.Options)
		if err1 != nil || err2 != nil || got.Fault != want.Fault || got.After == nil {
			t.Errorf("replay %d's first fault %s:%s after %+v, want %s:%s after a grant (%v %v)", i+1, got.Fault, got.Options, got.After, want.Fault, want.Options, err1, err2)
			continue
		}
		// The same options; the same number of clients cut off, the
		// replay's holder never among them (it takes the place of a
		// client the run did not cut when it was one of them).
		gotCut, _ := gotIn.Options.Slots("clients")
		wantCut, _ := wantIn.Options.Slots("clients")
		delete(gotIn.Options, "clients")
		delete(wantIn.Options, "clients")
		if gotIn.String() != wantIn.String() || len(gotCut) != len(wantCut) || slices.Contains(gotCut, got.After.Client) {
			t.Errorf("replay %d's first fault %s:%s, holder client %d; want %s:%s", i+1, got.Fault, got.Options, got.After.Client, want.Fault, want.Options)
		}
		// As long after a grant, and that grant near the recorded one.
		if d := got.After.Delay - want.After.Delay; d < -0.05 || d > 0.05 {
			t.Errorf("replay %d cut %.3fs after the grant, the run %.3fs", i+1, got.After.Delay, want.After.Delay)
		}
		// The grant it waited for is the first that came once its window
		// opened, a little before the recorded one's time: near that time
		// when the clients were granted as in the run, later only when no
		// client was granted meanwhile (a spare topology still settling
		// on a loaded machine gave one replay its first grant 2 s late).
		if d := (got.After.At - f.From) - (want.After.At - rec.Followed.From); d < -0.5 || d > 0.5 {
			opens := f.From + (want.After.At - rec.Followed.From) - min(rec.Spec.TTL.D()/4, 250*time.Millisecond).Seconds()
			if first := firstGrantFrom(t, out.Dir, opens); first < got.After.At-0.05 {
				t.Errorf("replay %d waited for a grant at %.3fs, the run's was at %.3fs, and passed over one at %.3fs", i+1, got.After.At-f.From, want.After.At-rec.Followed.From, first-f.From)
			} else {
				t.Logf("replay %d waited for a grant at %.3fs, the run's was at %.3fs: its first grant once the window opened", i+1, got.After.At-f.From, want.After.At-rec.Followed.From)
			}
		}
	}
	t.Logf("the double grant came back in %d of %d replays", came, len(outs))
	if came < 4 {
		t.Errorf("the double grant came back in %d of %d replays, want at least 4", came, len(outs))
	}
}

// firstGrantFrom is when, in seconds from the run's start, the first grant
// at or after from was answered (+Inf for none).
func firstGrantFrom(t *testing.T, dir string, from float64) float64 {
	t.Helper()
	events, err := history.ReadFile(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	first := math.Inf(1)
	for _, e := range events {
		if at := float64(e.Time) / 1e9; e.F == history.Acquire && e.Type == history.OK && at >= from && at < first {
			first = at
		}
	}
	return first
}

// A safe run replayed is safe again: a replay raises no alarm its run
// did not.
func TestReplayOfASafeRunIsSafe(t *testing.T) {
	runtest.NeedRedis(t)
	orig := runEntryOutcome(t, "gc-pause-fenced", 1)
	rec, outs := replays(t, orig.Dir, 1)
	if len(rec.Followed.Faults) == 0 {
		t.Fatal("the run followed no fault")
	}
	if r := outs[0].Results; !Reproduces(r, nil) || r.Fencing.Rejected == 0 {
		t.Errorf("replay: %s, %d writes fenced out; want valid with the stale write refused", Found(r), r.Fencing.Rejected)
	}
	// Its re-run command follows the schedule it was given, from the
	// file beside it; the nemesis is the schedule's, so no flag draws one.
	cmd := outs[0].Results.Command
	planned := filepath.Join(outs[0].Dir, scenario.PlannedFile)
	if !strings.HasSuffix(cmd, " --schedule "+planned) || strings.Contains(cmd, "--nemesis") {
		t.Errorf("re-run command %q", cmd)
	}
	spec, _ := rec.ReplaySpec()
	if steps, err := scenario.ReadSchedule(planned); err != nil || !reflect.DeepEqual(steps, spec.Schedule) {
		t.Errorf("%s: %v %v, want %v", planned, steps, err, spec.Schedule)
	}
}

// The acceptance scenario: kills, pauses and partitions of six clients
// for 20 s shrink to at most two faults and three clients that find the
// double grant 3 of 3 times, within the budget.
func TestShrinkAKilledNodesDoubleGrant(t *testing.T) {
	runtest.NeedRedis(t)
	s := spec("cad", "partition,pause-client,kill-node", 20*time.Second, 11)
	// The holder holds for a second, longer than a killed node takes to
	// come back even on a loaded machine: a holder that released while
	// its node was down would leave the later grant only possibly a
	// double one (its release unknown), and a cut that kept the double
	// grant would be rejected by chance.
	s.Clients, s.TTL, s.Hold = 6, scenario.Duration(2*time.Second), scenario.Duration(time.Second)
	orig := runOutcome(t, s)
	if orig.Results.Anomalies[checker.DoubleGrant] == 0 {
		t.Fatalf("the run found no double grant: %s", Found(orig.Results))
	}
	rec, err := ReadRecorded(orig.Dir)
	if err != nil {
		t.Fatal(err)
	}
	from, kind, err := rec.ShrinkFrom("")
	if err != nil || kind != checker.DoubleGrant {
		t.Fatalf("shrink from: %s %v", kind, err)
	}
	evident, ok := rec.Evident(kind)
	if !ok {
		t.Fatal("no time the double grant was evident")
	}
	pool := runner.NewTopologies()
	defer pool.Close()
	store := t.TempDir()
	try := func(ctx context.Context, s scenario.Spec) (runner.Outcome, error) {
		return runner.RunSpec(ctx, s, runner.Options{Store: store, WorkerBin: workerBin, Reuse: pool, StopOn: []string{kind}})
	}
	got := Shrink(context.Background(), from, evident, ShrinkOptions{Anomaly: kind, Tries: 3, Budget: 4 * time.Minute, Try: try, Log: t.Logf})
	m := got.Minimal
	if len(got.Runs) != 3 || len(m.Schedule) > 2 || m.Clients > 3 || m.TimeLimit >= s.TimeLimit {
		t.Errorf("minimal: %d faults, %d clients, %v, %d runs kept", len(m.Schedule), m.Clients, m.TimeLimit, len(got.Runs))
	}
	for _, dir := range got.Runs {
		if r, err := reports.ReadResults(dir); err != nil || r.Anomalies[kind] == 0 {
			t.Errorf("%s: %s %v", dir, Found(r), err)
		}
	}
}

// Shrinking refuses a run that found nothing, and an anomaly the run did
// not find, saying why.
func TestShrinkRefusesWhatItCannotShrink(t *testing.T) {
	valid := Recorded{Dir: "d", Results: reports.Results{Valid: checker.Valid, Anomalies: map[string]int{}}}
	if _, _, err := valid.ShrinkFrom(""); err == nil || !strings.Contains(err.Error(), "d found no anomaly (verdict valid), so there is nothing to shrink") {
		t.Errorf("a valid run: %v", err)
	}
	bad := Recorded{Dir: "d", Results: reports.Results{Valid: checker.Invalid, Anomalies: map[string]int{checker.StaleWrite: 1}},
		Followed: faults.Followed{Faults: []faults.FollowedFault{{Fault: "pause-client"}}}}
	if _, _, err := bad.ShrinkFrom(checker.DoubleGrant); err == nil || !strings.Contains(err.Error(), "d found stale-write, not double-grant") {
		t.Errorf("another anomaly: %v", err)
	}
	if _, kind, err := bad.ShrinkFrom(""); err != nil || kind != checker.StaleWrite {
		t.Errorf("its own anomaly: %s %v", kind, err)
	}
}
