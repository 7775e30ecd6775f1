package search

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/reports"
	"github.com/lockharness/lockharness/runner"
	"github.com/lockharness/lockharness/scenario"
)

// An oracle stands for real runs: the anomaly comes back when the
// schedule still has the kill and a pause of at least a second, with at
// least 3 clients. The search must end at exactly that, having tried the
// cuts in order, and must keep to its budget.
func TestShrinkFindsTheSmallestScenario(t *testing.T) {
	grant := scenario.Duration(0)
	spec := scenario.Defaults()
	spec.Clients, spec.TimeLimit, spec.TTL = 6, scenario.Duration(20*time.Second), scenario.Duration(time.Second)
	spec.Schedule = []scenario.Step{
		{Fault: "partition:clients=4/5:for=2s", At: scenario.Duration(time.Second)},
		{Fault: "pause-client:for=3s", At: scenario.Duration(3 * time.Second)},
		{Fault: "kill-node:delay=50ms", At: scenario.Duration(5 * time.Second), AfterGrant: &grant},
		{Fault: "partition:clients=1:for=2s", At: scenario.Duration(12 * time.Second)},
	}
	runs := 0
	oracle := func(_ context.Context, s scenario.Spec) (runner.Outcome, error) {
		runs++
		if _, err := s.Resolve(); err != nil {
			t.Fatalf("candidate does not resolve: %v", err)
		}
		kill, pause := false, false
		for _, st := range s.Schedule {
			kill = kill || strings.HasPrefix(st.Fault, "kill-node")
			if strings.HasPrefix(st.Fault, "pause-client") {
				d, _ := time.ParseDuration(strings.TrimPrefix(st.Fault, "pause-client:for="))
				pause = d >= time.Second
			}
			if strings.Contains(st.Fault, "clients=4/5") && s.Clients < 6 {
				t.Errorf("%d clients, a fault still on slots 4/5: %s", s.Clients, st.Fault)
			}
		}
		res := reports.Results{Valid: checker.Valid, Anomalies: map[string]int{}}
		if kill && pause && s.Clients >= 3 {
			res.Valid, res.Anomalies[checker.DoubleGrant] = checker.Invalid, 1
		}
		return runner.Outcome{Dir: "run", Results: res}, nil
	}
	got := Shrink(context.Background(), spec, 6*time.Second, ShrinkOptions{Anomaly: checker.DoubleGrant, Tries: 3, Budget: time.Hour, Try: oracle, Log: t.Logf})
	m := got.Minimal
	var faults []string
	for _, st := range m.Schedule {
		faults = append(faults, st.Fault)
	}
	if strings.Join(faults, " ") != "pause-client:for=1.5s kill-node:delay=50ms" || m.Clients != 3 || m.TimeLimit.D() != 4*time.Second ||
		m.Schedule[0].At.D() != time.Second || m.Schedule[1].At.D() != 3*time.Second {
		t.Errorf("minimal: %v, %d clients, %v", faults, m.Clients, m.TimeLimit)
	}
	var cuts []string
	for _, st := range got.Steps {
		cuts = append(cuts, map[bool]string{true: "+", false: "-"}[st.Kept]+st.Cut)
	}
	want := []string{
		"+time limit 7s, the faults after 6.0s dropped (3 of 4 left)",
		"-without fault 3 (kill-node:delay=50ms)", "-without fault 2 (pause-client:for=3s)", "+without fault 1 (partition:clients=4/5:for=2s)",
		"+the faults 2s earlier (time limit 5s)",
		"+3 clients", "-2 clients",
		"+fault 1 for half as long (pause-client:for=1.5s)", "-fault 1 for half as long (pause-client:for=750ms)",
		"+time limit 4s",
	}
	if strings.Join(cuts, "\n") != strings.Join(want, "\n") {
		t.Errorf("cuts:\n%s\nwant:\n%s", strings.Join(cuts, "\n"), strings.Join(want, "\n"))
	}
	// Every kept cut ran 3 tries, every rejected one stopped at its first.
	if runs != 6*3+4 || len(got.Runs) != 3 || got.OutOfBudget {
		t.Errorf("%d runs, %d kept runs, out of budget %v", runs, len(got.Runs), got.OutOfBudget)
	}

	slow := func(ctx context.Context, s scenario.Spec) (runner.Outcome, error) {
		time.Sleep(20 * time.Millisecond)
		return oracle(ctx, s)
	}
	runs = 0
	got = Shrink(context.Background(), spec, 6*time.Second, ShrinkOptions{Anomaly: checker.DoubleGrant, Tries: 3, Budget: 100 * time.Millisecond, Try: slow, Log: t.Logf})
	if !got.OutOfBudget || runs > 5 || got.Seconds > 0.2 {
		t.Errorf("budget 100ms: out of budget %v after %d runs and %.2fs", got.OutOfBudget, runs, got.Seconds)
	}
}

// A run that failed before its clients started keeps no schedule; replay
// and shrink say so instead of calling its schedule missing or old.
func TestARunThatNeverStartedIsNotReplayed(t *testing.T) {
	dir := t.TempDir()
	spec, _ := json.Marshal(scenario.Defaults())
	res := reports.Results{Valid: checker.Failed, Spec: spec, Error: &reports.RunError{Stage: reports.StageStart, Message: "no redis-server"}}
	if err := reports.WriteResults(dir, res); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadRecorded(dir); err == nil || !strings.Contains(err.Error(), "the run failed before its clients started (no redis-server): there is nothing to run again") {
		t.Errorf("ReadRecorded: %v", err)
	}
}
