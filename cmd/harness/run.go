package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/lockharness/lockharness/cluster"
	"github.com/lockharness/lockharness/faults"
	"github.com/lockharness/lockharness/internal/proc"
	"github.com/lockharness/lockharness/locks"
	"github.com/lockharness/lockharness/reports"
	"github.com/lockharness/lockharness/scenario"
)

func cmdRun(args []string, stdout, stderr io.Writer) int {
	spec := scenario.Defaults()
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&spec.Topology, "topology", spec.Topology, "topology: "+strings.Join(cluster.Topologies, ", "))
	fs.StringVar(&spec.Backend, "backend", spec.Backend, "where nodes run: "+strings.Join(cluster.Backends, ", "))
	fs.StringVar(&spec.Image, "image", "", "the docker backend's node `image`, which must have redis-server on its PATH (default "+cluster.DefaultImage+", built by make docker-image)")
	fs.StringVar(&spec.Lock, "lock", spec.Lock, "lock recipe: "+strings.Join(locks.Names(), ", "))
	fs.StringVar(&spec.Nemesis, "nemesis", spec.Nemesis, "faults, comma-separated (the schedule picks one at a time) or joined by + (injected together): "+strings.Join(faults.Names(), ", "))
	durationVar(fs, &spec.Interval, "nemesis-interval", "mean quiet time between faults, drawn from [D/2, 3D/2] (default: from the TTL)")
	fs.StringVar(&spec.Workload, "workload", spec.Workload, "what clients do: "+strings.Join(scenario.Workloads, ", "))
	fs.IntVar(&spec.Clients, "clients", spec.Clients, "number of concurrent lock clients")
	fs.IntVar(&spec.Nodes, "nodes", 0, "independent nodes of a redlock topology (default 5)")
	durationVar(fs, &spec.RestartDelay, "restart-delay", "how long kill-node keeps a node down (default 0-100ms, drawn from the seed)")
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
	checkTimeout := fs.Duration("check-timeout", 30*time.Second, "bound on the linearizability check; past it the verdict is unknown")
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
	opt := scenario.Options{Store: *store, CheckTimeout: *checkTimeout}
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
	if *d != 0 {
		help = fmt.Sprintf("%s (default %v)", help, *d)
	}
	fs.Func(name, help, func(s string) error {
		v, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("%q is not a duration like 500ms or 10s", s)
		}
		*d = scenario.Duration(v)
		return nil
	})
}
