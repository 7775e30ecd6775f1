package runner

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	docker "github.com/moby/moby/client"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/cluster"
	"github.com/lockharness/lockharness/internal/proc"
	"github.com/lockharness/lockharness/reports"
	"github.com/lockharness/lockharness/scenario"
)

// onDocker moves a spec to the docker backend; the test skips only when no
// Docker engine answers, and checks afterwards that no container of this
// process is left.
func onDocker(t *testing.T, s scenario.Spec) scenario.Spec {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: no containers")
	}
	cli, err := cluster.DockerEngine(context.Background())
	if err != nil {
		t.Skipf("skipping the docker backend's runs: %v", err)
	}
	t.Cleanup(func() {
		list, err := cli.ContainerList(context.Background(), docker.ContainerListOptions{All: true,
			Filters: make(docker.Filters).Add("label", cluster.LabelOwner+"="+strconv.Itoa(os.Getpid()))})
		if err != nil {
			t.Error(err)
		} else if len(list.Items) != 0 {
			t.Errorf("%d containers left after the run", len(list.Items))
		}
	})
	s.Backend = cluster.BackendDocker
	return s
}

func dockerEntry(t *testing.T, name string, seed int64) reports.Results {
	t.Helper()
	e, err := scenario.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	e.Spec.Seed = seed
	var stopOn []string
	if e.Expect.Unsafe && e.Expect.Anomaly != "" {
		stopOn = append(stopOn, e.Expect.Anomaly)
	}
	r := runStopping(t, onDocker(t, e.Spec), stopOn...).Results
	if ok, why := e.Expect.Met(r); !ok {
		t.Errorf("%s on docker, seed %d: expectation %q not met: %s; anomalies %v, notes %v", name, seed, e.Expect, why, r.Anomalies, r.Checker.Notes)
	}
	return r
}

// The same scenarios both ways on containers: the failover double grant and
// a clock jump (the shim mounted into the container) are caught; the
// sentinel topology without faults and a paused node are not flagged.
func TestDockerFailoverDoubleGrant(t *testing.T) { dockerEntry(t, "failover-double-grant", 1) }
func TestDockerClockJumpSingle(t *testing.T)     { dockerEntry(t, "clock-jump-single", 1) }
func TestDockerClusterFailoverDoubleGrant(t *testing.T) {
	dockerEntry(t, "cluster-failover-double-grant", 1)
}

func TestDockerSentinelWithoutFaultsIsValid(t *testing.T) {
	s := spec("cad", "none", 5*time.Second, 1)
	s.Topology = "sentinel"
	wantValid(t, run(t, onDocker(t, s)))
}

func TestDockerPauseNodeIsSafeForCad(t *testing.T) {
	r := run(t, onDocker(t, spec("cad", "pause-node", 6*time.Second, 1)))
	wantValid(t, r)
	if r.Faults["pause-node"] < 1 {
		t.Errorf("no pause-node fault happened: %v", r.Faults)
	}
}

// Restarts of a container: empty without persistence (a double grant),
// from the AOF with aof-always (safe).
func TestDockerRestartNoPersist(t *testing.T) { dockerEntry(t, "restart-no-persist", 1) }

func TestDockerRestartAOFAlways(t *testing.T) {
	r := dockerEntry(t, "restart-aof-always", 1)
	if r.Faults["kill-node"] < 1 {
		t.Errorf("no kill-node fault happened: %v", r.Faults)
	}
}

// An interrupt removes every container, whether it comes while the topology
// starts (the run ends with an error of its start) or while the clients run
// (the run is checked, and is not called valid). The interrupt is timed from
// the run's own progress lines, not from its start: a loaded machine may take
// longer than any fixed delay to start a Sentinel topology in containers.
func TestDockerInterruptRemovesContainers(t *testing.T) {
	needRedis(t)
	t.Cleanup(proc.KillAll)
	interrupt := func(t *testing.T, line string, after time.Duration) (Outcome, error) {
		s := onDocker(t, spec("cad", "pause-node", 60*time.Second, 1))
		s.Topology = "sentinel"
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		progress := &cancelAfterLine{line: line, after: after, cancel: cancel}
		return RunSpec(ctx, s, Options{Store: t.TempDir(), WorkerBin: workerBin, Progress: progress})
	}
	t.Run("while-starting", func(t *testing.T) {
		out, err := interrupt(t, "starting sentinel topology", 300*time.Millisecond)
		if err == nil {
			t.Fatalf("a run interrupted while its topology started ended without an error")
		}
		res, rerr := reports.ReadResults(out.Dir)
		if rerr != nil {
			t.Fatal(rerr)
		}
		if res.Valid == checker.Valid {
			t.Errorf("a run interrupted while starting was called valid")
		}
	})
	t.Run("while-running", func(t *testing.T) {
		out, err := interrupt(t, clientsRunning, 3*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		res, err := reports.ReadResults(out.Dir)
		if err != nil {
			t.Fatal(err)
		}
		if res.Valid == checker.Valid {
			t.Errorf("an interrupted run was called valid")
		}
	})
}
