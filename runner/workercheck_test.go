package runner

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockharness/lockharness/cluster"
	"github.com/lockharness/lockharness/internal/proc"
	"github.com/lockharness/lockharness/scenario"
)

func checkWorker(t *testing.T, command string, topologies ...string) []WorkerSession {
	t.Helper()
	t.Cleanup(proc.KillAll)
	_, sessions, err := CheckWorker(context.Background(), command, WorkerCheckOptions{Topologies: topologies, OpTimeout: 500 * time.Millisecond,
		ReplyWithin: 3 * time.Second, Dir: t.TempDir(), Stderr: io.Discard, Log: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	return sessions
}

// A worker is checked as it will run: on every topology it announces, its
// hello shaped as a run's, and against PostgreSQL when it writes there.
func TestWorkerCheckOnEveryTopologyAndTheDatabase(t *testing.T) {
	needRedis(t)
	needPostgres(t)
	sessions := checkWorker(t, workerBin+" worker --lock fenced")
	var names []string
	for _, s := range sessions {
		names = append(names, s.Name())
		if !s.Report.OK() {
			t.Errorf("%s: %q", s.Name(), s.Report.Problems)
		}
	}
	// test-tally is the workload this package's tests add: a workload a
	// build registers is checked as the built-in ones are.
	if want := []string{"single", "sentinel", "cluster", "single + postgres inventory", "single + postgres jobs", "single + postgres test-tally"}; !slices.Equal(names, want) {
		t.Fatalf("sessions %q, want %q", names, want)
	}
	passed := func(i int) string { return strings.Join(sessions[i].Report.Passed, "\n") }
	for _, step := range []string{"dial: ", "write under the lease: ok"} {
		if !strings.Contains(passed(1), step) {
			t.Errorf("the sentinel session passed no %q:\n%s", step, passed(1))
		}
	}
	for i, steps := range map[int][]string{
		3: {"the write's ledger row: 1 row of its token", "write under a fence lower than the database holds: fail (rejected)"},
		4: {"read of what to write: ok", "the write's done row: 1 row of its token"},
		5: {"the write's tally row: 1 row of its token"},
	} {
		for _, step := range steps {
			if !strings.Contains(passed(i), step) {
				t.Errorf("%s passed no %q:\n%s", sessions[i].Name(), step, passed(i))
			}
		}
	}
}

// A worker that connects to the addresses a sentinel announces instead of
// its own links works, and would never feel a fault on them: named.
func TestWorkerCheckNamesAWorkerThatIgnoresDial(t *testing.T) {
	needRedis(t)
	needRedisPy(t)
	strip := `/usr/bin/python3 -c 'import json, subprocess, sys
h = json.loads(sys.stdin.readline()); h.pop("dial", None)
p = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, text=True)
p.stdin.write(json.dumps(h) + "\n"); p.stdin.flush()
for line in sys.stdin:
    p.stdin.write(line); p.stdin.flush()
p.stdin.close(); sys.exit(p.wait())' ` + workerBin + " worker --lock cad"
	sessions := checkWorker(t, strip, "sentinel")
	if len(sessions) == 0 || sessions[0].Name() != "sentinel" {
		t.Fatalf("sessions %+v, want the sentinel's first", sessions)
	}
	if got := strings.Join(sessions[0].Report.Problems, "\n"); !strings.Contains(got, "it never dialled through the hello's dial map") {
		t.Errorf("problems %q, want the ignored dial named", got)
	}
}

// The reference worker runs on single and on sentinel (through redis-py's
// Sentinel client, dialling through dial), and writes to PostgreSQL
// itself: checked in every one of those.
func TestWorkerCheckTheReferenceWorker(t *testing.T) {
	needRedisPy(t)
	needPostgres(t)
	sessions := checkWorker(t, scenario.RedisPyWorker)
	var names []string
	for _, s := range sessions {
		names = append(names, s.Name())
	}
	if want := "single; sentinel; single + postgres inventory; single + postgres jobs"; strings.Join(names, "; ") != want {
		t.Fatalf("sessions %q, want %q", strings.Join(names, "; "), want)
	}
	for _, s := range sessions {
		if !s.Report.OK() {
			t.Errorf("%s: %q", s.Name(), s.Report.Problems)
		}
	}
}

// worker-check refuses, before any server starts, a topology the worker's
// ready line does not announce, and a worker no topology serves.
func TestWorkerCheckRefusesWhereTheReadyLineSaysNothing(t *testing.T) {
	needy := readyWorker(`{"kind":"ready","protocol":1,"name":"needy","needs":["primary","replicas"],"unsupported":{"single":"WAIT needs a replica"}}`)
	nowhere := readyWorker(`{"kind":"ready","protocol":1,"name":"nowhere","needs":["majorities","sentinels"]}`)
	if _, _, err := CheckWorker(context.Background(), needy, WorkerCheckOptions{Topologies: []string{cluster.Single}, Stderr: io.Discard, Log: t.Logf}); !errors.Is(err, ErrNotAnnounced) ||
		!strings.Contains(err.Error(), "--topology single: not a topology the worker announces (it runs on sentinel, cluster)") {
		t.Errorf("worker-check of the needy worker on single: %v", err)
	}
	if _, _, err := CheckWorker(context.Background(), nowhere, WorkerCheckOptions{Stderr: io.Discard, Log: t.Logf}); err == nil ||
		!strings.Contains(err.Error(), "its ready line: no topology offers all it needs: majorities, sentinels") {
		t.Errorf("worker-check of a worker no topology serves: %v", err)
	}
}

// readyWorker is a worker that announces ready and then does nothing.
func readyWorker(ready string) string {
	return "echo '" + ready + "'; cat >/dev/null"
}
