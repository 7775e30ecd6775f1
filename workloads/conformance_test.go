package workloads

import (
	"context"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/lockharness/lockharness/cluster"
)

const debianPython = "/usr/bin/python3"

// checkSession runs the conformance session on the shell command against
// a redis-server of its own.
func checkSession(t *testing.T, command string) *Conformance {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server not installed; run `make setup`")
	}
	n, err := cluster.StartLocal(context.Background(), "n1", t.TempDir(), cluster.PersistNone)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Stop()
	cmd := exec.Command("/bin/sh", "-c", command)
	cmd.Env = append(os.Environ(), workerEnv+"=1", "LOCKHARNESS_TEST_LOCK=renew")
	rep, err := CheckWorker(context.Background(), cmd, ConformanceConfig{Addr: n.Addr(), OpTimeout: 500 * time.Millisecond,
		ReplyWithin: 2 * time.Second, Stderr: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func needRedisPy(t *testing.T) {
	t.Helper()
	if err := exec.Command(debianPython, "-c", "import redis").Run(); err != nil {
		t.Skip("Debian's python3-redis is not installed; run `make setup`")
	}
}

func TestConformingWorkersPass(t *testing.T) {
	needRedisPy(t)
	for name, command := range map[string]string{
		"built-in renew (reported renewals)": os.Args[0],
		"redis-py reference":                 debianPython + " ../examples/workers/redis_py_lock.py",
		"broken_worker.py without a mode":    debianPython + " testdata/broken_worker.py",
	} {
		t.Run(name, func(t *testing.T) {
			rep := checkSession(t, command)
			if !rep.OK() {
				t.Fatalf("problems with a conforming worker: %q", rep.Problems)
			}
			if len(rep.Passed) < 8 {
				t.Fatalf("only %d steps passed: %q", len(rep.Passed), rep.Passed)
			}
		})
	}
}

// Every deliberate mistake gets its own message, and no other.
func TestBrokenWorkersAreNamed(t *testing.T) {
	needRedisPy(t)
	for mode, want := range map[string]string{
		"not-json":     `"starting the lock client..." is not a ready line: not JSON`,
		"wrong-type":   `field "protocol" is a JSON string; it must be a number`,
		"no-name":      `its ready line has no "name"`,
		"protocol-2":   "it speaks worker protocol 2; this harness speaks protocol 1",
		"junk":         `stdout line "did acquire": not JSON`,
		"wrong-id":     "a reply to id 101, which is not the outstanding request (id 1, acquire)",
		"no-reason":    `acquire reply {"kind": "reply", "id": 2, "type": "fail"}: a fail without "reason"`,
		"silent":       "no reply to acquire (id 1) within 2s",
		"crash":        "it crashed while the harness waited for its reply to acquire (id 1): exit status 3",
		"double-reply": "a second reply to acquire (id 1)",
		"always-ok":    "acquire of a held lock (another token) answered ok; want fail (busy)",
		"orphan-event": `an extend ok event for token "A" that never began (no invoke)`,
		"chatty":       "4997 more stdout lines that are not protocol lines",
	} {
		t.Run(mode, func(t *testing.T) {
			rep := checkSession(t, debianPython+" testdata/broken_worker.py "+mode)
			if rep.OK() {
				t.Fatalf("a worker broken by %s passed: %q", mode, rep.Passed)
			}
			found := false
			for _, p := range rep.Problems {
				found = found || strings.Contains(p, want)
			}
			if !found {
				t.Fatalf("problems %q; want one saying %q", rep.Problems, want)
			}
		})
	}
}
