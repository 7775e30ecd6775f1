package resource

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startPostgres starts a server for one test, or skips the test when
// PostgreSQL is not installed; the server is stopped when the test ends,
// also when it fails.
func startPostgres(t *testing.T) *Server {
	t.Helper()
	if _, err := PostgresBin(); errors.Is(err, ErrNoPostgres) {
		t.Skipf("PostgreSQL is not installed (make setup installs it): %v", err)
	}
	srv, err := StartPostgres(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

func TestInventoryFencing(t *testing.T) {
	srv := startPostgres(t)
	ctx := context.Background()
	if err := Prepare(ctx, srv.Addr, Schema{Workload: Inventory}); err != nil {
		t.Fatal(err)
	}
	seedSQL, err := ParseStatement("UPDATE inventory SET quantity = quantity - 1, lock_token = :fence WHERE sku = :sku AND lock_token = :fence::bigint - 1")
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckStatement(ctx, srv.Addr, seedSQL); err != nil {
		t.Fatalf("the seed's statement: %v", err)
	}
	bad, _ := ParseStatement("UPDATE inventry SET quantity = quantity - 1 WHERE sku = :sku")
	if err := CheckStatement(ctx, srv.Addr, bad); err == nil || !strings.Contains(err.Error(), `relation "inventry" does not exist`) {
		t.Fatalf("a statement on a missing table: %v, want the database's error", err)
	}
	write := func(fencing string, fence int64) Outcome {
		t.Helper()
		w := NewWriter(WriterConfig{DSN: DSN(srv.Addr), Workload: Inventory, Fencing: fencing, Statement: seedSQL, Timeout: 5e9})
		defer w.Close()
		o, err := w.Write(Write{Client: 1, Key: "k", Token: "t", Fence: fence})
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	steps := []struct {
		fencing string
		fence   int64
		refused bool
	}{
		{FenceWhere, 5, false},
		{FenceWhere, 5, false}, // the same holder again: an equal fence passes
		{FenceWhere, 4, true},  // a lower fence loses in the statement
		{FenceAppCheck, 4, true},
		{FenceAppCheck, 6, false},
		{FenceCAS, 2, false}, // cas matches the version read, not the fence
		{FenceNone, 1, false},
		{FenceSQL, 2, false}, // lock_token is 1: the seed's 2 after 1 lands
		{FenceSQL, 2, true},
	}
	for i, s := range steps {
		if o := write(s.fencing, s.fence); o.Refused != s.refused {
			t.Fatalf("step %d (%s, fence %d): %+v, want refused %v", i, s.fencing, s.fence, o, s.refused)
		}
	}
	// The writer sells from the SKU it is given: there is no row "xyz".
	other := NewWriter(WriterConfig{DSN: DSN(srv.Addr), Workload: Inventory, SKU: "xyz", Timeout: 5e9})
	defer other.Close()
	if o, err := other.Write(Write{Client: 2, Token: "u", Fence: 9}); err != nil || !o.Refused {
		t.Fatalf("a write to a SKU with no row: %+v %v, want refused", o, err)
	}
	tables, err := Final(ctx, srv.Addr, Schema{Workload: Inventory}, FenceWhere)
	if err != nil {
		t.Fatal(err)
	}
	if len(tables.Ledger) != 6 || tables.Inventory[0].Quantity != Stock-6 || tables.Inventory[0].LockToken != 2 {
		t.Fatalf("final rows %+v", tables)
	}
	if l := tables.Ledger[1]; l.Fence != 5 || l.LockTokenBefore != 5 || l.LockTokenAfter != 5 {
		t.Fatalf("ledger row of the second write under fence 5: %+v", l)
	}
	if l := tables.Ledger[2]; l.Fence != 6 || l.LockTokenBefore != 5 || l.LockTokenAfter != 6 || l.Client != 1 || l.Token != "t" || l.QuantityBefore-l.QuantityAfter != 1 {
		t.Fatalf("ledger row %+v", l)
	}
}

func TestJobsIdempotent(t *testing.T) {
	srv := startPostgres(t)
	ctx := context.Background()
	schema := Schema{Workload: Jobs, Keys: []string{"k:0", "k:1"}, Idempotent: true}
	if err := Prepare(ctx, srv.Addr, schema); err != nil {
		t.Fatal(err)
	}
	w := NewWriter(WriterConfig{DSN: DSN(srv.Addr), Workload: Jobs, Idempotent: true, Timeout: 5e9})
	defer w.Close()
	job, err := w.Read("k:1")
	if err != nil || job != JobsPerKey+1 {
		t.Fatalf("first job behind k:1: %d %v", job, err)
	}
	for i, want := range []int64{1, 0} {
		if o, err := w.Write(Write{Client: i, Token: "t", Job: job}); err != nil || o.Stored != want {
			t.Fatalf("processing %d: %+v %v, want %d rows", i, o, err, want)
		}
	}
	if next, _ := w.Read("k:1"); next != job+1 {
		t.Fatalf("next job %d", next)
	}
	tables, err := Final(ctx, srv.Addr, schema, FenceNone)
	if err != nil || tables.Jobs != 2*JobsPerKey || len(tables.Done) != 1 || tables.Done[0].Key != "k:1" {
		t.Fatalf("final %+v %v", tables, err)
	}
}

func TestServerStops(t *testing.T) {
	srv := startPostgres(t)
	pgid := srv.cmd.Process.Pid
	if err := syscall.Kill(-pgid, 0); err != nil {
		t.Fatalf("no postgres process group while it runs: %v", err)
	}
	srv.Close()
	if err := syscall.Kill(-pgid, 0); !errors.Is(err, syscall.ESRCH) {
		out, _ := exec.Command("ps", "-o", "pid,args", "-g", strconv.Itoa(pgid)).Output()
		t.Fatalf("postgres processes remain after Close (%v):\n%s", err, out)
	}
}

func TestParseStatement(t *testing.T) {
	st, err := ParseStatement("UPDATE inventory SET lock_token = :fence WHERE sku = :sku AND lock_token < :fence AND note <> ':token' AND x = 1::int;")
	if err != nil {
		t.Fatal(err)
	}
	if want := "UPDATE inventory SET lock_token = $1 WHERE sku = $2 AND lock_token < $1 AND note <> ':token' AND x = 1::int"; st.SQL != want || strings.Join(st.Params, ",") != "fence,sku" {
		t.Fatalf("got %q %v", st.SQL, st.Params)
	}
	for text, want := range map[string]string{
		"UPDATE t SET a = :fence -- don't use :token here\nWHERE k = :sku":                     "UPDATE t SET a = $1 -- don't use :token here\nWHERE k = $2",
		"UPDATE t SET note = E'it\\'s :token; ok', b = $$ :client; $$ WHERE a[1:2] = :client;": "UPDATE t SET note = E'it\\'s :token; ok', b = $$ :client; $$ WHERE a[1:2] = $1",
		"UPDATE t /* :fence; */ SET a = :fence":                                                "UPDATE t /* :fence; */ SET a = $1",
	} {
		st, err := ParseStatement(text)
		if err != nil || st.SQL != want {
			t.Errorf("ParseStatement(%q) = %q, %v; want %q", text, st.SQL, err, want)
		}
	}
	for _, bad := range []string{"", "UPDATE t SET a = :nope", "UPDATE a SET b = 1; DELETE FROM a"} {
		if _, err := ParseStatement(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// A scratch directory is swept only once its owner is gone: not while the
// owner holds its lock (initdb's bootstrap writes a negative pid, which
// once made a live directory look abandoned), nor in the minute after it
// was made, before its lock file exists.
func TestSweepSparesLiveScratchDirectories(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	mk := func() string {
		d, err := os.MkdirTemp("", scratchPattern)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	live, dead, young := mk(), mk(), mk()
	owner, err := lockScratch(live)
	if err != nil {
		t.Fatal(err)
	}
	defer owner.Close()
	os.MkdirAll(filepath.Join(live, "data"), 0o700)
	os.WriteFile(filepath.Join(live, "data", "postmaster.pid"), []byte("-4242\n"), 0o600)
	gone, err := lockScratch(dead)
	if err != nil {
		t.Fatal(err)
	}
	gone.Close() // its harness died
	sweepScratch()
	for d, want := range map[string]bool{live: true, dead: false, young: true} {
		if _, err := os.Stat(d); (err == nil) != want {
			t.Errorf("%s: kept %v, want %v", filepath.Base(d), err == nil, want)
		}
	}
}

// Eight servers starting together under a private (0700) directory, twice:
// each initdb's scratch directory must survive the others' sweeps (it once
// vanished mid-initdb when another run started in the same second).
func TestServersStartTogetherUnderAPrivateStore(t *testing.T) {
	if _, err := PostgresBin(); errors.Is(err, ErrNoPostgres) {
		t.Skipf("PostgreSQL is not installed (make setup installs it): %v", err)
	}
	if testing.Short() {
		t.Skip("starts sixteen PostgreSQL servers")
	}
	store := t.TempDir() // 0700
	for round := range 2 {
		errs := make(chan error, 8)
		for i := range 8 {
			go func() {
				// Staggered, so that each sweep meets the others' initdb
				// at every stage of it.
				time.Sleep(time.Duration(i) * 70 * time.Millisecond)
				srv, err := StartPostgres(context.Background(), filepath.Join(store, strconv.Itoa(round), strconv.Itoa(i)))
				if err == nil {
					err = srv.Close()
				}
				errs <- err
			}()
		}
		for range 8 {
			if err := <-errs; err != nil {
				t.Errorf("round %d: %v", round, err)
			}
		}
	}
}
