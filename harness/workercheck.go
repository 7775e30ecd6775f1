package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/lockharness/lockharness/runner"
	"github.com/lockharness/lockharness/workloads"
)

// cmdWorkerCheck runs a worker through scripted sessions against servers
// of its own, one per topology it announces (and with PostgreSQL, for a
// worker that writes to it), and names every protocol mistake it makes.
func cmdWorkerCheck(args []string, stdout, stderr io.Writer) int {
	c := newCommand("worker-check", "'CMD ARGS'", "Runs a worker (the command, by /bin/sh, as --worker-cmd would) through a scripted session on every\n"+
		"topology its ready line announces, each against servers of its own started as a run starts them, the hello\n"+
		"shaped as a run's (its own links, the dial map of a sentinel's or cluster's announced addresses): handshake,\n"+
		"acquire, busy, write, extend if offered, a release of a lease it does not hold, release, renewal events if\n"+
		"offered, exit on end of input. A worker that writes to PostgreSQL itself gets two more sessions against a\n"+
		"scratch PostgreSQL: the inventory (a ledger row under its token; fenced, a write under a lower fence\n"+
		"refused) and the jobs (a read of the next job, its done row). Prints what passed and every mistake in\n"+
		"plain words. Exit 0 when the worker conforms to docs/worker-protocol.md, 1 when it does not.")
	opTimeout := c.Duration("op-timeout", 500*time.Millisecond, "the op_timeout_ms the hello gives")
	replyWithin := c.Duration("reply-within", 5*time.Second, "how long a reply may take before it counts as missing")
	topologies := c.String("topology", "", "only these of the topologies the worker announces, comma-separated (default: every one)")
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
	opt := runner.WorkerCheckOptions{OpTimeout: *opTimeout, ReplyWithin: *replyWithin, Dir: dir, Stderr: stderr,
		Log: func(format string, args ...any) { fmt.Fprintf(stderr, "worker-check: "+format+"\n", args...) }}
	if *topologies != "" {
		opt.Topologies = strings.Split(*topologies, ",")
	}
	ready, sessions, err := runner.CheckWorker(ctx, pos[0], opt)
	if errors.Is(err, runner.ErrNotAnnounced) {
		return c.fail(stderr, "%v", err)
	}
	if err != nil {
		fmt.Fprintf(stderr, "harness: worker-check: %v\n", err)
		return exitHarness
	}
	problems, first := 0, ""
	for _, s := range sessions {
		// A session's problems come first: what passed after the first
		// mistake often passed only by luck, and the first is the cause.
		fmt.Fprintf(stdout, "%s:\n", s.Name())
		for _, p := range s.Report.Problems {
			fmt.Fprintf(stdout, "  FAIL  %s\n", p)
			if first == "" {
				first = s.Name() + ": " + p
			}
		}
		for _, p := range s.Report.Passed {
			fmt.Fprintf(stdout, "  ok    %s\n", p)
		}
		problems += len(s.Report.Problems)
	}
	if problems > 0 {
		fmt.Fprintf(stdout, "%s in %s: the worker does not conform to the worker protocol %d (docs/worker-protocol.md); the first, which the others may follow from: %s\n",
			plural(problems, "problem"), plural(len(sessions), "session"), workloads.Protocol, first)
		return 1
	}
	fmt.Fprintf(stdout, "conformant: %s %s speaks the worker protocol %d in %d sessions (%s)\n", ready.Name, ready.Version, workloads.Protocol, len(sessions), sessionNames(sessions))
	return 0
}

func sessionNames(ss []runner.WorkerSession) string {
	names := make([]string, len(ss))
	for i, s := range ss {
		names[i] = s.Name()
	}
	return strings.Join(names, "; ")
}

// plural is "1 problem", "3 problems".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
