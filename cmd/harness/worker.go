package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockharness/lockharness/workloads"
)

// cmdWorker is the hidden worker process: one lock client speaking JSON
// lines on stdin and stdout.
func cmdWorker(args []string, stdout, stderr io.Writer) int {
	fs := newCommand("worker", "[flags]", "One lock client speaking JSON lines on stdin and stdout; the harness starts it.")
	var cfg workloads.WorkerConfig
	fs.StringVar(&cfg.Target.Addr, "addr", "", "host:port of the lock service (the client's proxy)")
	fs.StringVar(&cfg.Target.Master, "master", "", "sentinel master name (instead of --addr)")
	sentinels := fs.String("sentinels", "", "comma-separated sentinel addresses, with --master")
	addrs := fs.String("addrs", "", "comma-separated addresses of independent nodes (Redlock), instead of --addr")
	dial := fs.String("map", "", "comma-separated ANNOUNCED=LOCAL address pairs: dial LOCAL when a server names ANNOUNCED")
	fs.StringVar(&cfg.Lock, "lock", "cad", "lock recipe")
	fs.DurationVar(&cfg.OpTimeout, "op-timeout", 500*time.Millisecond, "timeout of each Redis command")
	pos, code, ok := fs.parse(args, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return fs.fail(stderr, "unexpected argument %q", pos[0])
	}
	if *addrs != "" {
		cfg.Target.Addrs = strings.Split(*addrs, ",")
	}
	if *sentinels != "" {
		cfg.Target.Sentinels = strings.Split(*sentinels, ",")
	}
	cfg.Target.Dial = map[string]string{}
	for _, pair := range strings.Split(*dial, ",") {
		if pair == "" {
			continue
		}
		from, to, ok := strings.Cut(pair, "=")
		if !ok {
			return fs.fail(stderr, "--map entry %q is not ANNOUNCED=LOCAL", pair)
		}
		cfg.Target.Dial[from] = to
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
