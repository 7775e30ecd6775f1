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
