package harness

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/lockharness/lockharness/workloads"
)

// cmdWorker is the built-in worker: one lock client running a recipe,
// speaking the worker protocol on stdin and stdout.
func cmdWorker(args []string, stdout, stderr io.Writer) int {
	fs := newCommand("worker", "[flags]", "The built-in worker: one lock client running a recipe, speaking the worker protocol (docs/worker-protocol.md) on stdin and stdout. The harness starts it; where the lock service is comes in the hello line.")
	var cfg workloads.WorkerConfig
	fs.StringVar(&cfg.Lock, "lock", "cad", "lock recipe and its options")
	pos, code, ok := fs.parse(args, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return fs.fail(stderr, "unexpected argument %q", pos[0])
	}
	// A worker is a child of the harness; Ctrl-C is the harness's to handle.
	signal.Ignore(syscall.SIGINT)
	if err := workloads.RunWorker(os.Stdin, os.Stdout, cfg); err != nil {
		fmt.Fprintf(stderr, "worker: %v\n", err)
		return exitHarness
	}
	return 0
}
