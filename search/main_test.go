package search

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/lockharness/lockharness/internal/proc"
	"github.com/lockharness/lockharness/runner"
	"github.com/lockharness/lockharness/runner/runtest"
	"github.com/lockharness/lockharness/scenario"
)

// workerBin is this test binary in the worker's role (runtest).
var workerBin string

func TestMain(m *testing.M) {
	workerBin = runtest.ServeWorker()
	os.Exit(m.Run())
}

// runOutcome carries out a run of s and checks that nothing it started is
// left.
func runOutcome(t *testing.T, s scenario.Spec) runner.Outcome {
	t.Helper()
	runtest.NeedRedis(t)
	t.Cleanup(proc.KillAll)
	out, err := runner.RunSpec(context.Background(), s, runner.Options{Store: t.TempDir(), WorkerBin: workerBin})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if n := proc.Live(); n != 0 {
		t.Errorf("%d child processes still running after the run", n)
	}
	return out
}

// runEntryOutcome runs a catalog row with seed and holds it to its
// expectation.
func runEntryOutcome(t *testing.T, name string, seed int64) runner.Outcome {
	t.Helper()
	e, err := scenario.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	e.Spec.Seed = seed
	out := runOutcome(t, e.Spec)
	if ok, why := e.Expect.Met(out.Results); !ok {
		t.Errorf("%s seed %d: expectation %q not met: %s", name, seed, e.Expect, why)
	}
	return out
}

func spec(lock, nemesis string, limit time.Duration, seed int64) scenario.Spec {
	s := scenario.Defaults()
	s.Lock, s.Nemesis, s.TimeLimit, s.Seed = lock, nemesis, scenario.Duration(limit), seed
	s.TTL = scenario.Duration(time.Second)
	return s
}
