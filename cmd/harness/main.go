// Command harness is lockharness's CLI: it runs fault-injection scenarios
// against Redis locks, re-checks and reports recorded histories, and serves
// the store of past runs.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/lockharness/lockharness/internal/proc"
)

// exitHarness is the exit code for the harness's own failures; the others
// are the verdict's, as in Jepsen: 0 valid, 1 invalid, 2 unknown.
const exitHarness = 255

// verb is one subcommand.
type verb struct {
	name, args, summary string
	run                 func(args []string, stdout, stderr io.Writer) int
	hidden              bool
}

var verbs []verb

func init() {
	verbs = []verb{
		{name: "run", args: "[flags]", summary: "run one scenario under faults and check it", run: cmdRun},
		{name: "repro", args: "NAME [--seeds N]", summary: "run a catalog scenario for N seeds; exit 0 when every seed met its expectation", run: cmdRepro},
		{name: "suite", args: "quick|full [--store DIR]", summary: "run a suite of scenarios and write its matrix report", run: cmdSuite},
		{name: "list", summary: "the scenario catalog, the lock recipes and the faults", run: cmdList},
		{name: "check", args: "PATH", summary: "re-check a run directory or a history.jsonl offline; rewrites results.json", run: cmdCheck},
		{name: "report", args: "DIR", summary: "regenerate results.json, plots and pages of a run directory", run: cmdReport},
		{name: "serve", args: "[--store DIR] [--addr HOST:PORT]", summary: "browse the store of runs", run: cmdServe},
		{name: "worker", summary: "one lock client speaking JSON lines (started by the harness)", run: cmdWorker, hidden: true},
	}
}

func usage() string {
	var b strings.Builder
	b.WriteString("harness: fault-injection and correctness checks for Redis distributed locks\n\nUsage:\n")
	for _, v := range verbs {
		if !v.hidden {
			fmt.Fprintf(&b, "  harness %-6s %-34s %s\n", v.name, v.args, v.summary)
		}
	}
	b.WriteString("\n`harness VERB --help` describes a verb's flags.\nExit codes: 0 valid, 1 invalid, 2 unknown, 255 the harness failed.\n")
	return b.String()
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage())
		return exitHarness
	}
	if args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprint(stdout, usage())
		return 0
	}
	var names []string
	for _, v := range verbs {
		if v.name == args[0] {
			return v.run(args[1:], stdout, stderr)
		}
		if !v.hidden {
			names = append(names, v.name)
		}
	}
	fmt.Fprintf(stderr, "harness: unknown command %q (valid: %s, help)\n\n%s", args[0], strings.Join(names, ", "), usage())
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
