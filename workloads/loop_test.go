package workloads

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/lockharness/lockharness/history"
)

// TestLoopStartsItsWorkersAtOnce: every worker of a loop is started before
// any says it is ready (each here waits to see all the others started,
// which one started after another's ready would never see), and each
// client's process is still numbered as its slot.
func TestLoopStartsItsWorkersAtOnce(t *testing.T) {
	n := testNode(t)
	const clients = 4
	started := t.TempDir()
	// Each worker marks its start, then waits (5 s at most) for all four
	// marks before it becomes the worker.
	script := fmt.Sprintf(`touch %[1]s/$$; i=0; while [ $(ls %[1]s | wc -l) -lt %[2]d ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done; `+
		`[ $(ls %[1]s | wc -l) -ge %[2]d ] || { echo "worker $$: not every worker started" >&2; exit 1; }; exec %[3]s`,
		started, clients, os.Args[0])
	rec := history.NewRecorder(nil)
	loop, err := StartLoop(LoopConfig{
		Clients: clients, Key: "lock:orders", TTL: 2 * time.Second, Hold: 10 * time.Millisecond, Seed: 1,
		Spawn: func(int) *exec.Cmd {
			cmd := exec.Command("/bin/sh", "-c", script)
			cmd.Env = append(os.Environ(), workerEnv+"=1", "LOCKHARNESS_TEST_LOCK=cad")
			return cmd
		},
		Hello: func(slot int) Hello {
			return Hello{Op: "hello", Protocol: Protocol, Client: slot, OpTimeoutMs: 1000, Nodes: []string{n.Addr()}}
		},
		Rec: rec, Stderr: os.Stderr,
	})
	if err != nil {
		t.Fatalf("the workers did not start at once: %v", err)
	}
	if err := loop.Stop(); err != nil {
		t.Fatal(err)
	}
	rec.Close()
	marks, _ := filepath.Glob(filepath.Join(started, "*"))
	if len(marks) != clients {
		t.Errorf("%d workers started, want %d", len(marks), clients)
	}
	for _, e := range rec.Events() {
		if e.Process != history.Nemesis && int(e.Process) != e.Client {
			t.Fatalf("event %d: client %d under process %d; a client's first worker is numbered as its slot", e.Index, e.Client, e.Process)
		}
	}
}
