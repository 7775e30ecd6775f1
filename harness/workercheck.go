package harness

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	"github.com/lockharness/lockharness/cluster"
	"github.com/lockharness/lockharness/workloads"
)

// cmdWorkerCheck runs a worker through a scripted session against a real
// redis-server of its own and names every protocol mistake it makes.
func cmdWorkerCheck(args []string, stdout, stderr io.Writer) int {
	c := newCommand("worker-check", "'CMD ARGS'", "Runs a worker (the command, by /bin/sh, as --worker-cmd would) through a scripted session against a\n"+
		"redis-server of its own: handshake, acquire, busy, write, extend if offered, a release of a lease it does not\n"+
		"hold, release, renewal events if offered, exit on end of input. Prints what passed and every mistake in plain\n"+
		"words. Exit 0 when the worker conforms to docs/worker-protocol.md, 1 when it does not.")
	opTimeout := c.Duration("op-timeout", 500*time.Millisecond, "the op_timeout_ms the hello gives")
	replyWithin := c.Duration("reply-within", 5*time.Second, "how long a reply may take before it counts as missing")
	pos, code, ok := c.parse(args, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return c.fail(stderr, "takes one argument, the worker's command line in quotes, got %d", len(pos))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	dir, err := os.MkdirTemp("", "lockharness-worker-check-")
	if err != nil {
		fmt.Fprintf(stderr, "harness: %v\n", err)
		return exitHarness
	}
	defer os.RemoveAll(dir)
	node, err := cluster.StartLocal(ctx, "n1", dir, cluster.PersistNone)
	if err != nil {
		fmt.Fprintf(stderr, "harness: worker-check needs a redis-server: %v\n", err)
		return exitHarness
	}
	defer node.Stop()
	rep, err := workloads.CheckWorker(ctx, workloads.ShellCommand(pos[0], 0), workloads.ConformanceConfig{Addr: node.Addr(), OpTimeout: *opTimeout,
		ReplyWithin: *replyWithin, Stderr: stderr})
	if err != nil {
		fmt.Fprintf(stderr, "harness: %v\n", err)
		return exitHarness
	}
	for _, p := range rep.Passed {
		fmt.Fprintf(stdout, "ok    %s\n", p)
	}
	for _, p := range rep.Problems {
		fmt.Fprintf(stdout, "FAIL  %s\n", p)
	}
	if !rep.OK() {
		fmt.Fprintf(stdout, "%d problems: the worker does not conform to the worker protocol %d (docs/worker-protocol.md)\n", len(rep.Problems), workloads.Protocol)
		return 1
	}
	fmt.Fprintf(stdout, "conformant: %s %s speaks the worker protocol %d\n", rep.Ready.Name, rep.Ready.Version, workloads.Protocol)
	return 0
}
