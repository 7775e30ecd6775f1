package runner

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/reports"
	"github.com/lockharness/lockharness/resource"
	"github.com/lockharness/lockharness/scenario"
	"github.com/lockharness/lockharness/workloads"
)

func needPostgres(t *testing.T) {
	t.Helper()
	needRedis(t)
	if _, err := resource.PostgresBin(); err != nil {
		t.Skipf("skipping the PostgreSQL resource: %v", err)
	}
}

func inventory(lock, fencing, nemesis string, limit time.Duration, seed int64) scenario.Spec {
	s := spec(lock, nemesis, limit, seed)
	s.Workload, s.Resource, s.Fencing = "inventory", resource.Postgres, fencing
	return s
}

// A clean inventory run is valid, and its evidence is the database's own
// rows: every acknowledged write is one unit sold and one ledger row.
func TestInventoryClean(t *testing.T) {
	needPostgres(t)
	r := run(t, inventory("cad", resource.FenceNone, "none", 5*time.Second, 1))
	wantValid(t, r)
	db := r.Checker.Database
	if db == nil || len(db.Inventory) != 1 {
		t.Fatalf("results.json has no final rows: %+v", db)
	}
	if ok := r.Stats["write"].OK; ok < 5 || db.Sold != int64(ok) || db.Ledger != ok || db.Inventory[0].Quantity != workloads.Stock-int64(ok) {
		t.Errorf("%d writes acknowledged; the database sold %d with %d ledger rows, quantity %d", ok, db.Sold, db.Ledger, db.Inventory[0].Quantity)
	}
}

// The delayed write both ways: without a fence the late write lands after
// the newer holder's (stale-write, in the ledger's order); with the fence
// in the statement the database refuses it.
func TestDelayedWrite(t *testing.T) {
	needPostgres(t)
	for _, name := range []string{"delayed-write", "delayed-write-fenced"} {
		t.Run(name, func(t *testing.T) {
			r := runEntry(t, name, 2)
			if r.Faults["delay-write"] < 1 {
				t.Errorf("no delay-write window: %v", r.Faults)
			}
		})
	}
}

// The jobs workload: a pause past the TTL makes two clients process the
// same job; an idempotent insert leaves one row per job; no faults, no
// duplicate.
func TestJobsDuplicateWork(t *testing.T) {
	needPostgres(t)
	jobs := func(nemesis string, idempotent bool) *checker.Database {
		s := spec("cad", nemesis, 8*time.Second, 1)
		s.Workload, s.Keys, s.Idempotent = "jobs", 5, idempotent
		r := run(t, s)
		if r.Checker.Database == nil {
			t.Fatalf("no database audit in %+v", r.Checker)
		}
		return r.Checker.Database
	}
	if db := jobs("pause-client", false); db.Duplicated < 1 || db.DuplicatePer1000 <= 0 {
		t.Errorf("pause-client: no duplicate work: %+v", db)
	}
	if db := jobs("pause-client", true); db.Duplicated != 0 || db.DoneRows != db.Processed || db.Absorbed < 1 {
		t.Errorf("idempotent: %+v, want no duplicate row and at least one absorbed repeat", db)
	}
	if db := jobs("none", false); db.Duplicated != 0 || db.Processed < 10 {
		t.Errorf("no faults: %+v", db)
	}
}

// A team's own statement runs as written; a bad one is refused by the
// database before anything starts.
func TestWriteSQL(t *testing.T) {
	needPostgres(t)
	dir := t.TempDir()
	seed := filepath.Join(dir, "seed.sql")
	os.WriteFile(seed, []byte("UPDATE inventory SET quantity = quantity - 1, lock_token = :fence\nWHERE sku = :sku AND lock_token < :fence;\n"), 0o644)
	s := inventory("fenced", resource.FenceNone, "pause-client", 8*time.Second, 1)
	s.WriteSQL = seed
	r := run(t, s)
	wantValid(t, r)
	if r.Fencing.Rejected < 1 || r.Checker.Database.Fencing != resource.FenceSQL {
		t.Errorf("the seed's statement refused no stale write: %+v, %+v", r.Fencing, r.Checker.Database)
	}

	// A statement that refuses the one legitimate holder is no fence: the
	// run is invalid, not safe. Three ways: every second grant refused,
	// every write refused, and the seed's "<" under several writes per
	// grant, which refuses a holder's own second write ("<=" does not).
	for _, c := range []struct {
		name, where string
		writes      int
		refused     bool
	}{
		{"every second grant", ":fence % 2 = 0", 1, true},
		{"every write", "false", 1, true},
		{"the seed's < with 3 writes a grant", "lock_token < :fence", 3, true},
		{"<= with 3 writes a grant", "lock_token <= :fence", 3, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-")+".sql")
			os.WriteFile(f, []byte("UPDATE inventory SET quantity = quantity - 1, lock_token = :fence WHERE sku = :sku AND "+c.where), 0o644)
			s := inventory("fenced", resource.FenceNone, "none", 4*time.Second, 1)
			s.WriteSQL, s.Writes, s.Hold = f, c.writes, scenario.Duration(600*time.Millisecond)
			r := run(t, s)
			if !c.refused {
				wantValid(t, r)
				return
			}
			if r.Valid != checker.Invalid || r.Anomalies[checker.RefusedWrite] < 1 {
				t.Errorf("verdict %v, refused-write %d: want invalid with refused writes", r.Valid, r.Anomalies[checker.RefusedWrite])
			}
		})
	}

	bad := filepath.Join(dir, "bad.sql")
	os.WriteFile(bad, []byte("UPDATE inventory SET quantity = quantity - 1 WHER sku = :sku"), 0o644)
	s.WriteSQL = bad
	err := s.Validate()
	if err == nil || !strings.Contains(err.Error(), `syntax error at or near "WHER"`) || !strings.Contains(err.Error(), bad) {
		t.Fatalf("bad SQL: %v, want the database's syntax error naming the file", err)
	}
}

// No PostgreSQL outlives the harness: not after Ctrl-C, and not after
// SIGKILL, when nothing of the harness runs to stop it.
func TestNoPostgresOrphans(t *testing.T) {
	needPostgres(t)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			store := t.TempDir()
			cmd := exec.Command(harnessBinary(t), "run", "--workload", "inventory", "--time-limit", "60s", "--store", store)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			pgid := waitPostgres(t, store)
			// Clients writing, on any machine's load: the interrupt comes
			// half a second after the run says its clients started.
			waitLogLine(t, store, clientsRunning)
			time.Sleep(500 * time.Millisecond)
			cmd.Process.Signal(sig)
			cmd.Wait()
			deadline := time.Now().Add(10 * time.Second)
			for syscall.Kill(-pgid, 0) == nil {
				if time.Now().After(deadline) {
					ps, _ := exec.Command("ps", "-o", "pid,args", "-g", fmt.Sprint(pgid)).Output()
					t.Fatalf("postgres (group %d) outlived the harness's %v:\n%s\nharness output:\n%s", pgid, sig, ps, out.String())
				}
				time.Sleep(50 * time.Millisecond)
			}
			if sig == syscall.SIGINT {
				dirs, _ := filepath.Glob(filepath.Join(store, "single-*", "*"))
				if len(dirs) != 1 {
					t.Fatalf("run dirs %v", dirs)
				}
				tables, err := history.ReadTables(dirs[0])
				if err != nil || tables == nil {
					t.Fatalf("an interrupted run kept no final rows: %v", err)
				}
				if res, err := reports.ReadResults(dirs[0]); err != nil || res.Valid == checker.Valid {
					t.Errorf("interrupted run: %v %v", res.Valid, err)
				}
			}
		})
	}
}

// waitPostgres waits for the run's PostgreSQL to listen and returns its
// process group, found by the port its log names.
func waitPostgres(t *testing.T, store string) int {
	t.Helper()
	listening := regexp.MustCompile(`listening on IPv4 address "127.0.0.1", port (\d+)`)
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		logs, _ := filepath.Glob(filepath.Join(store, "*", "*", "postgres", "postgres.log"))
		for _, l := range logs {
			b, _ := os.ReadFile(l)
			if m := listening.FindSubmatch(b); m != nil {
				if pid := pidWithArgs("-p", string(m[1])); pid > 0 {
					return pid
				}
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("the run's PostgreSQL never listened")
	return 0
}

// waitLogLine waits for a line containing line in the harness.log of the
// store's run.
func waitLogLine(t *testing.T, store, line string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		logs, _ := filepath.Glob(filepath.Join(store, "*", "*", "harness.log"))
		for _, l := range logs {
			if b, _ := os.ReadFile(l); bytes.Contains(b, []byte(line)) {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("the run never logged %q", line)
}

// pidWithArgs finds the process whose command line has the two arguments
// in a row.
func pidWithArgs(a, b string) int {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		cmdline, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		if bytes.Contains(cmdline, []byte("\x00"+a+"\x00"+b+"\x00")) {
			var pid int
			fmt.Sscanf(filepath.Base(filepath.Dir(p)), "%d", &pid)
			return pid
		}
	}
	return 0
}

// With --auth the ACL user may touch every job key.
func TestJobsWithAuth(t *testing.T) {
	needPostgres(t)
	s := spec("fenced", "none", 4*time.Second, 1)
	s.Workload, s.Keys, s.Auth = "jobs", 3, true
	r := run(t, s)
	wantValid(t, r)
	if r.Checker.Database == nil || r.Checker.Database.Processed < 5 {
		t.Errorf("jobs with --auth processed %+v", r.Checker.Database)
	}
}

// The closing liveness check takes every job key: one left without an
// expiry by a crash between SETNX and EXPIRE is a stuck lock.
func TestJobsStuckKey(t *testing.T) {
	needPostgres(t)
	s := spec("naive", "kill-client", 6*time.Second, 1)
	s.Workload, s.Keys = "jobs", 3
	wantAnomaly(t, run(t, s), checker.StuckLock)
}
