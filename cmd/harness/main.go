// Command harness is lockharness's CLI: it runs fault-injection scenarios
// against Redis locks and reports whether mutual exclusion held.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockharness/lockharness/cluster"
	"github.com/lockharness/lockharness/faults"
	"github.com/lockharness/lockharness/internal/proc"
	"github.com/lockharness/lockharness/locks"
	"github.com/lockharness/lockharness/reports"
	"github.com/lockharness/lockharness/scenario"
	"github.com/lockharness/lockharness/workloads"
)

// Exit codes, as Jepsen's: the verdict's 0, 1 or 2, or 255 when the harness
// itself failed.
const exitHarness = 255

const usage = `harness: fault-injection and correctness checks for Redis distributed locks

Usage:
  harness run [flags]     run one scenario and check it (harness run --help)
  harness help            this text

Exit codes: 0 valid, 1 invalid, 2 unknown, 255 the harness failed.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitHarness
	}
	switch args[0] {
	case "run":
		return cmdRun(args[1:], stdout, stderr)
	case "worker":
		return cmdWorker(args[1:], stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "harness: unknown command %q (valid: run, help)\n\n%s", args[0], usage)
	return exitHarness
}

// interruptible returns a context cancelled by the first SIGINT or SIGTERM,
// so the run stops everything in order; a second signal kills every child
// at once and exits.
func interruptible(stderr io.Writer) (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		sig, ok := <-sigs
		if !ok {
			return
		}
		fmt.Fprintf(stderr, "\nharness: %v: stopping everything (again to force)\n", sig)
		cancel()
		if _, ok := <-sigs; ok {
			proc.KillAll()
			os.Exit(exitHarness)
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(sigs)
		cancel()
	}
}

func cmdRun(args []string, stdout, stderr io.Writer) int {
	spec := scenario.Defaults()
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&spec.Topology, "topology", spec.Topology, "topology: "+strings.Join(cluster.Topologies, ", "))
	fs.StringVar(&spec.Backend, "backend", spec.Backend, "where nodes run: "+strings.Join(cluster.Backends, ", "))
	fs.StringVar(&spec.Lock, "lock", spec.Lock, "lock recipe: "+strings.Join(locks.Names(), ", "))
	fs.StringVar(&spec.Nemesis, "nemesis", spec.Nemesis, "comma-separated faults: "+strings.Join(faults.Names(), ", "))
	fs.StringVar(&spec.Workload, "workload", spec.Workload, "what clients do: "+strings.Join(scenario.Workloads, ", "))
	fs.IntVar(&spec.Clients, "clients", spec.Clients, "number of concurrent lock clients")
	durationVar(fs, &spec.TimeLimit, "time-limit", "how long clients run under faults")
	durationVar(fs, &spec.TTL, "ttl", "lock lease time")
	durationVar(fs, &spec.Hold, "hold", "how long a client holds the lock after its write")
	durationVar(fs, &spec.OpTimeout, "op-timeout", "timeout of each Redis command")
	fs.StringVar(&spec.Persistence, "persistence", spec.Persistence, "node persistence: "+strings.Join(cluster.Persistences, ", "))
	fs.StringVar(&spec.Key, "key", spec.Key, "the lock's key")
	seed := fs.Int64("seed", 0, "seed for every random choice (default: drawn from the clock and printed)")
	store := fs.String("store", "store", "directory that keeps run directories")
	fs.StringVar(&spec.Name, "name", "", "scenario name for the run directory (default topology-lock-nemesis)")
	quiet := fs.Bool("quiet", false, "no progress lines, only the summary")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: harness run [flags]\n\nRuns clients against a Redis topology under faults, checks the history, writes\nSTORE/NAME/TIMESTAMP/{history.jsonl,results.json,harness.log,nodes/} and exits\n0 valid, 1 invalid, 2 unknown, 255 harness error.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return exitHarness
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "harness run: unexpected argument %q\n", fs.Arg(0))
		return exitHarness
	}
	spec.Seed = *seed
	if spec.Seed == 0 {
		spec.Seed = time.Now().UnixNano() % 1_000_000
	}
	if err := spec.Validate(); err != nil {
		fmt.Fprintf(stderr, "harness run: %v\n", err)
		return exitHarness
	}

	ctx, stop := interruptible(stderr)
	defer stop()
	defer proc.KillAll()
	opt := scenario.Options{Store: *store}
	if !*quiet {
		opt.Progress = stderr
	}
	out, err := scenario.Run(ctx, spec, opt)
	if out.Dir != "" && out.Results.Spec != nil {
		name := spec.Name
		if name == "" {
			name = spec.DefaultName()
		}
		reports.Summary(stdout, "lockharness run "+name, spec.Line(), out.Results, out.Dir)
	}
	if err != nil {
		fmt.Fprintf(stderr, "harness run: %v\n", err)
		return exitHarness
	}
	return out.Results.Valid.ExitCode()
}

func durationVar(fs *flag.FlagSet, d *scenario.Duration, name, help string) {
	fs.Func(name, fmt.Sprintf("%s (default %v)", help, *d), func(s string) error {
		v, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("%q is not a duration like 500ms or 10s", s)
		}
		*d = scenario.Duration(v)
		return nil
	})
}

// cmdWorker is the hidden worker process: one lock client speaking JSON
// lines on stdin and stdout.
func cmdWorker(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg workloads.WorkerConfig
	fs.StringVar(&cfg.Addr, "addr", "", "host:port of the lock service (the client's proxy)")
	fs.StringVar(&cfg.Lock, "lock", "cad", "lock recipe")
	fs.DurationVar(&cfg.OpTimeout, "op-timeout", 500*time.Millisecond, "timeout of each Redis command")
	if err := fs.Parse(args); err != nil {
		return exitHarness
	}
	// go-redis logs reconnects to stderr; the history already says what
	// happened, so silence it.
	redis.SetLogger(silent{})
	// A worker is a child of the harness; Ctrl-C is the harness's to handle.
	signal.Ignore(syscall.SIGINT)
	if err := workloads.RunWorker(os.Stdin, os.Stdout, cfg); err != nil {
		fmt.Fprintf(stderr, "worker: %v\n", err)
		return exitHarness
	}
	return 0
}

type silent struct{}

func (silent) Printf(context.Context, string, ...any) {}
