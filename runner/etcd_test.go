package runner

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func needEtcd(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("etcd"); err != nil {
		t.Skip("etcd not installed; run `make setup`")
	}
}

// etcdUnder lists the etcd processes whose data directories are under dir.
func etcdUnder(dir string) []string {
	var out []string
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		cmdline, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		args := strings.Split(string(cmdline), "\x00")
		if filepath.Base(args[0]) == "etcd" && bytes.Contains(cmdline, []byte(dir)) {
			out = append(out, filepath.Base(filepath.Dir(p)))
		}
	}
	return out
}

// No etcd member outlives the harness: not after Ctrl-C, and not after
// SIGKILL, when nothing of the harness runs to stop it.
func TestNoEtcdOrphans(t *testing.T) {
	needEtcd(t)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			store := t.TempDir()
			cmd := exec.Command(harnessBinary(t), "run", "--topology", "etcd", "--lock", "etcd", "--nemesis", "kill-node", "--time-limit", "60s", "--store", store)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			waitLogLine(t, store, clientsRunning)
			if n := len(etcdUnder(store)); n != 3 {
				t.Fatalf("%d etcd members under the store, want 3", n)
			}
			time.Sleep(500 * time.Millisecond)
			cmd.Process.Signal(sig)
			cmd.Wait()
			deadline := time.Now().Add(10 * time.Second)
			for {
				left := etcdUnder(store)
				if len(left) == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("etcd processes %v outlived the harness's %v; harness output:\n%s", left, sig, out.String())
				}
				time.Sleep(50 * time.Millisecond)
			}
		})
	}
}

// Jepsen's etcd result, both ways: a holder frozen past its session's TTL
// writes after the next holder (stale-write); fenced by the lock key's
// create revision, that write is refused and the run is valid. The
// client's keepalives are in the history as extends, and the checker
// judged the run allowing etcd's leases to outlive their TTL.
func TestEtcdPauseIsCaughtAndFencedIsSafe(t *testing.T) {
	needEtcd(t)
	r := runEntry(t, "etcd-pause", 1)
	if r.Anomalies["stale-write"] == 0 {
		t.Errorf("etcd-pause: no stale-write: %v", r.Anomalies)
	}
	r = runEntry(t, "etcd-pause-fenced", 1)
	if r.Checker.OutliveMs != 3500 {
		t.Errorf("etcd-pause-fenced judged with outlive %v ms, want 3500 (ttl 1s + 2.5s)", r.Checker.OutliveMs)
	}
	if r.Stats["extend"].OK == 0 {
		t.Errorf("no keepalive recorded as an extend: %+v", r.Stats)
	}
}

// A minority of members cut off, some clients on its side: safe.
func TestEtcdPartitionMinority(t *testing.T) {
	needEtcd(t)
	runEntry(t, "etcd-partition-minority", 1)
}

// A member killed just after a grant and restarted with its log: safe.
func TestEtcdKillMember(t *testing.T) {
	needEtcd(t)
	runEntry(t, "etcd-kill-member", 1)
}

// A member killed just after a grant, its data directory lost with it, is
// removed and added back empty: safe.
func TestEtcdReplaceMember(t *testing.T) {
	needEtcd(t)
	runEntry(t, "etcd-replace-member", 1)
}
