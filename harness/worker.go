package harness

import (
	"io"

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
	return workloads.ServeWorker(cfg, stderr)
}
