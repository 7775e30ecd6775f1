package harness

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockharness/lockharness/cluster"
	"github.com/lockharness/lockharness/internal/clockshim"
	"github.com/lockharness/lockharness/reports"
)

// The harness's own image (make image, docker/harness) runs a repro with
// PostgreSQL inside it and a run of a worker mounted from the host, each
// writing its runs into a mounted store the host then reads, and leaves
// no container behind.
func TestTheHarnessImageRunsIntoAMountedStore(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: no image")
	}
	if _, err := cluster.DockerEngine(context.Background()); err != nil {
		t.Skipf("skipping the harness's image: %v", err)
	}
	work := t.TempDir()
	bin := filepath.Join(work, "bin")
	if out, err := exec.Command("go", "build", "-o", filepath.Join(bin, "harness"), "../cmd/harness").CombinedOutput(); err != nil {
		t.Fatalf("building the harness: %v\n%s", err, out)
	}
	shim, err := clockshim.Build(bin)
	if err != nil {
		t.Fatal(err)
	}
	buildDir := filepath.Join(work, "image")
	dockerfile, err := os.ReadFile("../docker/harness/Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(buildDir, 0o755)
	os.WriteFile(filepath.Join(buildDir, "Dockerfile"), dockerfile, 0o644)
	if out, err := exec.Command("../docker/harness/rootfs.sh", filepath.Join(buildDir, "rootfs"), filepath.Join(bin, "harness"), shim).CombinedOutput(); err != nil {
		t.Fatalf("rootfs.sh: %v\n%s", err, out)
	}
	// A tag of this test's own: another test process may build beside it.
	tag := fmt.Sprintf("lockharness/harness:test-%d-%d", os.Getpid(), time.Now().UnixNano())
	if out, err := exec.Command("docker", "build", "-q", "-t", tag, buildDir).CombinedOutput(); err != nil {
		t.Fatalf("docker build: %v\n%s", err, out)
	}
	t.Cleanup(func() { exec.Command("docker", "rmi", "-f", tag).Run() })

	store := t.TempDir()
	workers, err := filepath.Abs("../examples/workers")
	if err != nil {
		t.Fatal(err)
	}
	docker := func(args ...string) (string, int) {
		t.Helper()
		cmd := exec.Command("docker", append([]string{"run", "--rm", "-v", store + ":/data", "-v", workers + ":/workers:ro", "-w", "/data", tag}, args...)...)
		out, _ := cmd.CombinedOutput()
		return string(out), cmd.ProcessState.ExitCode()
	}
	out, code := docker("repro", "gc-pause-postgres", "--store", "/data/store")
	if code != 0 || !strings.Contains(out, `1 of 1 seeds met "unsafe: stale-write"`) {
		t.Errorf("repro gc-pause-postgres in the image: exit %d\n%s", code, out)
	}
	out, code = docker("run", "--lock", "exec", "--worker-cmd", "python3 /workers/redis_py_lock.py", "--time-limit", "2s", "--store", "/data/store", "--name", "mounted-worker")
	if code != 0 || !strings.Contains(out, "redis-py-lock 4.3.4") {
		t.Errorf("a run of the mounted redis-py worker in the image: exit %d\n%s", code, out)
	}
	for _, name := range []string{"gc-pause-postgres", "mounted-worker"} {
		dirs, _ := filepath.Glob(filepath.Join(store, "store", name, "2*"))
		if len(dirs) != 1 {
			t.Errorf("%s: %d run directories in the mounted store", name, len(dirs))
			continue
		}
		if _, err := reports.ReadResults(dirs[0]); err != nil {
			t.Errorf("%s: the host reads its results: %v", name, err)
		}
	}
	if ps, _ := exec.Command("docker", "ps", "-aq", "--filter", "ancestor="+tag).Output(); len(strings.TrimSpace(string(ps))) > 0 {
		t.Errorf("containers of the image left: %s", ps)
	}
}
