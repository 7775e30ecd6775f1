package runner

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/cluster"
	"github.com/lockharness/lockharness/internal/proc"
	"github.com/lockharness/lockharness/reports"
	"github.com/lockharness/lockharness/resource"
	"github.com/lockharness/lockharness/scenario"
	"github.com/lockharness/lockharness/workloads"
)

func execSpecFor(workerCmd, nemesis string, limit time.Duration) scenario.Spec {
	s := spec(scenario.ExecLock, nemesis, limit, 1)
	s.WorkerCmd = workerCmd
	return s
}

// redisPyReady is the redis-py worker's ready line, read as Resolve reads
// it (once per worker command).
func redisPyReady() (workloads.Ready, error) {
	p, err := execSpecFor(scenario.RedisPyWorker, "none", time.Second).Resolve()
	return p.Worker, err
}

func needRedisPy(t *testing.T) {
	t.Helper()
	needRedis(t)
	if _, err := redisPyReady(); err != nil {
		t.Skipf("the redis-py worker does not start (Debian's python3-redis missing? run `make setup`): %v", err)
	}
}

// redis-py's own Lock, in a Python worker: safe without faults, caught
// writing stale data when its process is frozen past the TTL.
func TestExecRedisPy(t *testing.T) {
	needRedisPy(t)
	t.Run("none", func(t *testing.T) {
		r := run(t, execSpecFor(scenario.RedisPyWorker, "none", 4*time.Second))
		wantValid(t, r)
		if got := r.Stats["extend"].OK; got < 3 {
			t.Errorf("extend ok = %d: the worker announced extend, so holders extend", got)
		}
		// The lock under test keeps the name it announced, and no Go
		// library that did not run is named beside it.
		if pr := r.Provenance; pr == nil || pr.Lock == nil || pr.Lock.Name != "redis-py-lock" || pr.Lock.Version == "" || pr.Lock.Worker != scenario.RedisPyWorker || len(pr.Libraries) != 0 {
			t.Errorf("provenance %+v (lock %+v), want the worker's name and version, its command, and no libraries", pr, pr.Lock)
		}
	})
	t.Run("pause-client", func(t *testing.T) {
		wantAnomaly(t, run(t, execSpecFor(scenario.RedisPyWorker, "pause-client", 6*time.Second)), checker.StaleWrite)
	})
	// A team's Python service with its own database: redis-py's Lock, and
	// the worker's own psycopg2 writes to the run's PostgreSQL.
	t.Run("postgres", func(t *testing.T) {
		needPostgres(t)
		if r, _ := redisPyReady(); !slices.Contains(r.Writes, resource.Postgres) {
			t.Skip("the redis-py worker does not write to postgres (Debian's python3-psycopg2 missing? run `make setup`)")
		}
		s := execSpecFor(scenario.RedisPyWorker, "pause-client", 8*time.Second)
		s.Workload = "inventory"
		r := run(t, s)
		wantAnomaly(t, r, checker.StaleWrite)
		if db := r.Checker.Database; db == nil || db.Ledger < 5 || db.Sold != int64(db.Ledger) {
			t.Errorf("the Python worker's writes are not in the database: %+v", db)
		}
	})
	t.Run("named after the worker", func(t *testing.T) {
		p, err := execSpecFor(scenario.RedisPyWorker, "none", time.Second).Resolve()
		if err != nil {
			t.Fatal(err)
		}
		if p.Spec.Name != "single-redis-py-lock-none" || p.Spec.Lock != scenario.ExecLock {
			t.Errorf("name %q lock %q, want single-redis-py-lock-none and exec", p.Spec.Name, p.Spec.Lock)
		}
		if line := p.Line(); !strings.Contains(line, "lock redis-py-lock 4.") || !strings.Contains(line, " (exec)") {
			t.Errorf("the spec line %q does not name the worker's lock", line)
		}
	})
}

// What a worker cannot do is refused before the run, with the reason.
func TestExecRefusals(t *testing.T) {
	needRedisPy(t)
	redlock := execSpecFor(scenario.RedisPyWorker, "none", time.Second)
	redlock.Topology = cluster.Redlock
	onCluster := execSpecFor(scenario.RedisPyWorker, "none", time.Second)
	onCluster.Topology = cluster.RedisCluster
	tally := execSpecFor(scenario.RedisPyWorker, "none", time.Second)
	tally.Workload = "test-tally"
	cases := map[string]struct {
		s    scenario.Spec
		want string
	}{
		"topology the worker did not announce": {redlock, "unsupported topology: lock worker redis-py-lock does not run on topology redlock (it runs on single, sentinel)"},
		"and why, where it says":               {onCluster, "the addresses the nodes announce and takes no function to map them (address_remap came in redis-py 4.6)"},
		"exec without a command":               {execSpecFor("", "none", time.Second), "lock exec needs --worker-cmd"},
		"a command without exec":               {func() scenario.Spec { s := spec("cad", "none", time.Second, 1); s.WorkerCmd = "x"; return s }(), "goes with --lock exec, not --lock cad"},
		"another protocol": {execSpecFor(`echo '{"kind":"ready","protocol":2,"name":"future"}'; cat >/dev/null`, "none", time.Second),
			"it speaks worker protocol 2; this harness speaks protocol 1"},
		"no such program":                      {execSpecFor("/nonexistent/worker", "none", time.Second), "exited before its ready line"},
		"a workload the worker does not write": {tally, `worker redis-py-lock does not write the test-tally workload (its ready line's "workloads" are inventory, jobs)`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := tc.s.Resolve()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Resolve: %v, want an error saying %q", err, tc.want)
			}
			if n := proc.Live(); n != 0 {
				t.Errorf("%d worker processes left after the refusal", n)
			}
		})
	}
}

// A worker that says it cannot go on ends the run as a harness error with
// its message, never as a verdict.
func TestExecFatalIsAHarnessError(t *testing.T) {
	needRedis(t)
	t.Cleanup(proc.KillAll)
	worker := `read hello; echo '{"kind":"ready","protocol":1,"name":"badpass"}'; ` +
		`read req; echo '{"kind":"fatal","error":"WRONGPASS invalid username-password pair"}'; sleep 5`
	out, err := RunSpec(context.Background(), execSpecFor(worker, "none", 3*time.Second), Options{Store: t.TempDir(), WorkerBin: workerBin})
	if err == nil || !strings.Contains(err.Error(), "WRONGPASS invalid username-password pair") {
		t.Fatalf("run error %v, want the worker's fatal message", err)
	}
	if out.Results.Valid != checker.Failed || out.Results.Error == nil || out.Results.Error.Stage != reports.StageRun {
		t.Fatalf("verdict %v, error %v after a fatal worker, want error (exit 255) in the run stage", out.Results.Valid, out.Results.Error)
	}
	if n := proc.Live(); n != 0 {
		t.Errorf("%d processes left", n)
	}
}

// A lock that renews in the background is judged by its renewals when the
// worker reports them (valid), and not judged at all when it cannot
// (unknown, never invalid): the same worker, its events filtered out and
// its ready line saying so.
func TestRenewalsTheHarnessCannotSee(t *testing.T) {
	needRedis(t)
	long := func(workerCmd string) scenario.Spec {
		s := execSpecFor(workerCmd, "none", 6*time.Second)
		s.Hold = scenario.Duration(2500 * time.Millisecond)
		return s
	}
	builtin := workerBin + " worker --lock renew"
	t.Run("reported", func(t *testing.T) {
		r := run(t, long(builtin))
		wantValid(t, r)
	})
	t.Run("unreported", func(t *testing.T) {
		hidden := builtin + ` | grep --line-buffered -v '"kind":"event"' | sed -u 's/"renewals":"reported"/"renewals":"` + workloads.RenewUnreported + `"/'`
		r := run(t, long(hidden))
		if r.Valid != checker.Unknown {
			t.Fatalf("verdict %v (anomalies %v, unjudged %v), want unknown", r.Valid, r.Anomalies, r.Checker.Unjudged)
		}
		n := 0
		for _, v := range r.Checker.Unjudged {
			n += v
		}
		if n == 0 {
			t.Errorf("no unjudged findings: with its renewals hidden, holds past the TTL look like expiries")
		}
	})
}

// As deployed: every built-in recipe and outside worker gets the ACL user,
// its password and the CA through the hello, and runs valid without
// faults; a worker holding a wrong password ends the run as a harness
// error, never as a verdict.
func TestAuthAndTLS(t *testing.T) {
	needRedisPy(t)
	secure := func(s scenario.Spec) scenario.Spec { s.Auth, s.TLS = true, true; return s }
	t.Run("cad", func(t *testing.T) {
		wantValid(t, run(t, secure(spec("cad", "none", 3*time.Second, 1))))
	})
	t.Run("redlock", func(t *testing.T) {
		s := secure(spec("redlock", "none", 3*time.Second, 1))
		s.Topology, s.TTL = cluster.Redlock, scenario.Duration(2*time.Second)
		wantValid(t, run(t, s))
	})
	t.Run("redis-py", func(t *testing.T) {
		wantValid(t, run(t, secure(execSpecFor(scenario.RedisPyWorker, "none", 3*time.Second))))
	})
	wrongPassword := `sed -u 's/"password":"[^"]*"/"password":"wrong"/' | `
	for name, worker := range map[string]string{"wrong password, built-in": workerBin + " worker --lock cad", "wrong password, redis-py": scenario.RedisPyWorker} {
		t.Run(name, func(t *testing.T) {
			t.Cleanup(proc.KillAll)
			// A time limit far past what a loaded machine takes to start
			// the topology and the workers (8 s in a clean-clone CI), so
			// that ending at once and ending at the limit stay apart.
			s := execSpecFor(wrongPassword+worker, "none", 60*time.Second)
			s.Auth = true
			start := time.Now()
			out, err := RunSpec(context.Background(), s, Options{Store: t.TempDir(), WorkerBin: workerBin})
			if err == nil || !strings.Contains(err.Error(), "WRONGPASS") {
				t.Fatalf("run error %v, want the servers' WRONGPASS", err)
			}
			if out.Results.Valid == checker.Valid {
				t.Errorf("verdict valid with every client refused")
			}
			if took := time.Since(start); took > 30*time.Second {
				t.Errorf("the run took %v: a refused client should end it at once", took)
			}
		})
	}
}
