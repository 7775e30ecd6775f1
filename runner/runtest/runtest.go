// Package runtest is what the tests that run real servers share: the
// test binary in the role of the built-in worker, so that what a test
// registers (a workload, a recipe) is its workers' too, and the skips for a
// machine without the servers.
package runtest

import (
	"flag"
	"os"
	"os/exec"
	"testing"

	"github.com/lockharness/lockharness/workloads"
)

// ServeWorker makes the test binary the built-in worker when it is run as
// one (`BINARY worker --lock NAME`, as the harness runs `harness worker`):
// it serves the worker protocol and exits. Otherwise it returns the
// binary's path, for Options.WorkerBin. TestMain calls it first.
func ServeWorker() string {
	if len(os.Args) > 1 && os.Args[1] == "worker" {
		os.Exit(runWorker(os.Args[2:]))
	}
	self, err := os.Executable()
	if err != nil {
		panic(err)
	}
	return self
}

func runWorker(args []string) int {
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	var cfg workloads.WorkerConfig
	fs.StringVar(&cfg.Lock, "lock", "cad", "lock recipe and its options")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	return workloads.ServeWorker(cfg, os.Stderr)
}

// NeedRedis skips a test that runs real redis-server processes under
// -short or where Redis is not installed.
func NeedRedis(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs real redis-server processes; skipped with -short")
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server not installed; run `make setup`")
	}
}

// NeedSentinel is NeedRedis for a test that runs sentinels too.
func NeedSentinel(t *testing.T) {
	t.Helper()
	NeedRedis(t)
	if _, err := exec.LookPath("redis-sentinel"); err != nil {
		t.Skip("redis-sentinel not installed; run `make setup`")
	}
}
