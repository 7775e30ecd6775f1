// Package harness is lockharness's command line as a library: Main is the
// whole `harness` binary, so a Go team can build one that also knows its own
// lock recipes (Main's extra recipes) without forking the harness.
package harness

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
	"text/tabwriter"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockharness/lockharness/access"
	"github.com/lockharness/lockharness/cluster"
	"github.com/lockharness/lockharness/internal/proc"
	"github.com/lockharness/lockharness/internal/suggest"
	"github.com/lockharness/lockharness/locks"
	"github.com/lockharness/lockharness/runner"
)

// Exit codes. The verdict's are Jepsen's: 0 valid, 1 invalid, 2 unknown.
const (
	// exitUsage is a command line the harness cannot take (BSD's EX_USAGE).
	exitUsage = 64
	// exitHarness is the harness's own failure, or input it cannot read.
	exitHarness = 255
)

// verb is one subcommand.
type verb struct {
	name, args, summary string
	run                 func(args []string, stdout, stderr io.Writer) int
	hidden              bool
}

var verbs []verb

func init() {
	verbs = []verb{
		{name: "run", args: "[--scenario FILE] [flags]", summary: "run one scenario under faults and check it", run: cmdRun},
		{name: "repro", args: "NAME|FILE [--seeds N]", summary: "run a catalog scenario for N seeds; exit 0 when every seed met its expectation", run: cmdRepro},
		{name: "suite", args: "quick|full|libs|--dir DIR", summary: "run a suite of scenarios and write its matrix report", run: cmdSuite},
		{name: "replay", args: "DIR [--times N]", summary: "run a run's fault schedule again, same spec and seed, and say whether its anomaly came back", run: cmdReplay},
		{name: "shrink", args: "DIR [--budget D]", summary: "search for the smallest schedule that still shows a run's anomaly, and write it as a scenario file", run: cmdShrink},
		{name: "explore", args: "--lock L [--topology T]", summary: "search for a fault schedule that breaks the lock, steered by how close each run came, and shrink what it finds", run: cmdExplore},
		{name: "compare", args: "--locks A,B --nemesis F,G", summary: "run candidate locks under the same faults and seeds and write one comparison page", run: cmdCompare},
		{name: "list", args: "[--dir DIR]", summary: "the topologies, the scenario catalog, the lock recipes and the faults", run: cmdList},
		{name: "check", args: "PATH", summary: "re-check a run directory or a history.jsonl offline; rewrites results.json", run: cmdCheck},
		{name: "report", args: "DIR", summary: "regenerate results.json, plots and pages of a run directory", run: cmdReport},
		{name: "serve", args: "[--store DIR] [--addr HOST:PORT]", summary: "browse the store of runs", run: cmdServe},
		{name: "worker-check", args: "'CMD ARGS'", summary: "run a worker through a scripted session and name every protocol mistake", run: cmdWorkerCheck},
		{name: "version", args: "", summary: "the harness's version, the Go version and the redis-server version found", run: cmdVersion},
		{name: "worker", summary: "one lock client speaking JSON lines (started by the harness)", run: cmdWorker, hidden: true},
	}
}

func usage() string {
	var b strings.Builder
	b.WriteString("harness: fault-injection and correctness checks for Redis distributed locks\n\nUsage:\n")
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	for _, v := range verbs {
		if !v.hidden {
			fmt.Fprintf(tw, "  harness %s\t%s\t%s\n", v.name, v.args, v.summary)
		}
	}
	tw.Flush()
	b.WriteString("\n`harness VERB --help` or `harness help VERB` describes a verb's flags.\n" +
		"Exit codes: 0 valid, 1 invalid, 2 unknown, 64 a command line the harness cannot take, 255 the harness failed.\n")
	return b.String()
}

// Main runs the harness with args (without the program name) and returns
// its exit code. Recipes join the registry first, so runs, suites and the
// workers this binary starts for them can all use them: a binary built
// around Main is a complete harness for them.
func Main(args []string, recipes ...locks.Recipe) int {
	for _, r := range recipes {
		err := locks.Register(r)
		if err == nil && len(cluster.Offering(r.Needs, r.Prefers)) == 0 {
			err = fmt.Errorf("register lock %s: no topology offers all it needs (%s)", r.Name, access.Join(r.Needs, ", "))
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "harness: %v\n", err)
			return exitHarness
		}
	}
	// go-redis logs failed dials and reconnects to stderr, from the
	// harness's own queries too (a node it just killed); the history and
	// the progress lines already say what happened.
	redis.SetLogger(silent{})
	return run(args, os.Stdout, os.Stderr)
}

// silent is go-redis's logger with nothing to say.
type silent struct{}

func (silent) Printf(context.Context, string, ...any) {}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage())
		return exitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help":
		fmt.Fprint(stdout, usage())
		return 0
	case "-version", "--version":
		return cmdVersion(nil, stdout, stderr)
	case "help":
		if len(args) == 1 {
			fmt.Fprint(stdout, usage())
			return 0
		}
		if v, ok := findVerb(args[1]); ok {
			return v.run([]string{"--help"}, stdout, stderr)
		}
		return unknownVerb(args[1], stderr)
	}
	if v, ok := findVerb(args[0]); ok {
		return v.run(args[1:], stdout, stderr)
	}
	return unknownVerb(args[0], stderr)
}

func findVerb(name string) (verb, bool) {
	for _, v := range verbs {
		if v.name == name {
			return v, true
		}
	}
	return verb{}, false
}

func unknownVerb(name string, stderr io.Writer) int {
	var names []string
	for _, v := range verbs {
		if !v.hidden {
			names = append(names, v.name)
		}
	}
	fmt.Fprintf(stderr, "harness: %v\n\n%s", suggest.Unknown("command", name, append(names, "help"), ""), usage())
	return exitUsage
}

// command is a verb's flags and the words of its usage.
type command struct {
	*flag.FlagSet
	name, args string
	// about is the usage's paragraph between the synopsis and the flags.
	about string
}

// newCommand makes a verb's flag set. Its usage goes to stdout for --help
// and to stderr, after the error, for a bad command line.
func newCommand(name, args, about string) *command {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return &command{FlagSet: fs, name: name, args: args, about: about}
}

// usage is the verb's usage text.
func (c *command) usage() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Usage: harness %s %s\n", c.name, c.args)
	if c.about != "" {
		fmt.Fprintf(&b, "\n%s\n", strings.TrimRight(c.about, "\n"))
	}
	has := false
	c.VisitAll(func(*flag.Flag) { has = true })
	if has {
		b.WriteString("\nFlags:\n")
		c.SetOutput(&b)
		c.PrintDefaults()
		c.SetOutput(io.Discard)
	}
	return b.String()
}

// parse reads the verb's command line: flags before, between and after its
// positional arguments (`harness check DIR --check-timeout 5s`), "--" ending
// the flags. It returns the positional arguments; when ok is false the verb
// exits with code: 0 after printing --help's usage on stdout, exitUsage
// after printing the error on stderr.
func (c *command) parse(args []string, stdout, stderr io.Writer) (positional []string, code int, ok bool) {
	for {
		if err := c.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fmt.Fprint(stdout, c.usage())
				return nil, 0, false
			}
			return nil, c.fail(stderr, "%v", c.explain(err)), false
		}
		rest := c.Args()
		if len(rest) == 0 {
			return positional, 0, true
		}
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			return append(positional, rest...), 0, true
		}
		positional, args = append(positional, rest[0]), rest[1:]
	}
}

// explain adds to the flag package's refusal of an unknown flag the flag
// that was meant ("did you mean --lock?"), and for run --seeds the verb
// that takes it.
func (c *command) explain(err error) error {
	name, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: -")
	if !ok {
		return err
	}
	if c.name == "run" && name == "seeds" {
		return fmt.Errorf("%w: a run takes one --seed; `harness repro NAME|FILE --seeds N` runs a scenario for N seeds", err)
	}
	var names []string
	c.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	if meant, ok := suggest.Closest(name, names); ok {
		return fmt.Errorf("%w: did you mean --%s?", err, meant)
	}
	return err
}

// fail prints a usage error and the way to the usage, and returns exitUsage.
func (c *command) fail(stderr io.Writer, format string, args ...any) int {
	fmt.Fprintf(stderr, "harness %s: %s\nRun `harness %s --help` for usage.\n", c.name, fmt.Sprintf(format, args...), c.name)
	return exitUsage
}

// storeFlag is --store, as every verb that keeps or reads runs declares
// it; where says what the verb puts there besides the run directories.
func (c *command) storeFlag(where string) *string {
	usage := "directory that keeps run directories"
	if where != "" {
		usage += "; " + where
	}
	return c.String("store", runner.DefaultStore, usage)
}

// checkTimeoutFlag is --check-timeout, the bound on each linearizability
// check.
func (c *command) checkTimeoutFlag() *time.Duration {
	return c.Duration("check-timeout", 30*time.Second, "bound on each run's linearizability check; past it the verdict is unknown")
}

// pool is --parallel and --reuse, as every verb that carries out several
// runs on the topology pool declares them.
type pool struct {
	parallel *int
	reuse    *bool
}

// poolFlags declares --parallel and --reuse; runs names what goes at once
// ("runs", "seeds"), order how they are taken, if it says more.
func (c *command) poolFlags(runs, order string) pool {
	usage := "how many " + runs + " go at once, each on a topology of its own"
	if order != "" {
		usage += ", " + order
	}
	return pool{
		parallel: c.Int("parallel", runner.DefaultParallel(), usage+": one per core and one more unless given"),
		reuse: c.Bool("reuse", true, "reset a finished run's topology for a later run that starts the same one instead of starting another "+
			"(a topology whose reset cannot be proven is replaced by a fresh one)"),
	}
}

// invalid says what is wrong with the flags' values, "" if nothing.
func (p pool) invalid() string {
	if *p.parallel < 1 {
		return fmt.Sprintf("--parallel must be at least 1, got %d", *p.parallel)
	}
	return ""
}

// set reports whether the flag was given on the command line.
func (c *command) set(name string) bool {
	given := false
	c.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
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
