package harness

import (
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/internal/proc"
	"github.com/lockharness/lockharness/internal/shell"
	"github.com/lockharness/lockharness/internal/suggest"
	"github.com/lockharness/lockharness/scenario"
	"github.com/lockharness/lockharness/search"
)

// cmdExplore searches for a schedule that breaks a lock.
func cmdExplore(args []string, stdout, stderr io.Writer) int {
	spec := scenario.Defaults()
	c := newCommand("explore", "--lock L [--topology T] [flags]", "Searches for a fault schedule that breaks the lock, given only the lock and its\n"+
		"topology (and workload): each run follows a schedule of one to four faults\n"+
		"drawn from every fault the topology takes (--nemesis narrows them), each with\n"+
		"options, anchored to a moment (a fixed time, a grant, the middle of a hold,\n"+
		"just before a release, a promotion), with a number of clients and a hold.\n"+
		"--strategy guided keeps the schedules that reached new states (fault x the\n"+
		"lock's phase x what it hit x the lease's age) or came closer to breaking a\n"+
		"property (margins), mutates them, and learns which faults, moments, clients\n"+
		"and holds pay; random draws every schedule fresh, the baseline. Every anomaly\n"+
		"kind found is shrunk to a minimal.toml. Writes STORE/explore/L-T-STRATEGY-TIME/\n"+
		"{explore.json,explore.html}; each run is a run directory of its own. Exits 1\n"+
		"when an anomaly (of --want, if given) was found, 0 when none was, 64 for a bad\n"+
		"command line, 255 for a harness error or an interruption.\n"+
		"`harness explore merge DIR...` joins the shards of a campaign (--shard i/n).")
	spec.RegisterFlagsNamed(c.FlagSet, "lock", "topology", "workload", "worker-cmd", "resource", "fencing", "persistence",
		"ttl", "hold", "clients", "time-limit", "nodes", "replicas", "shards", "backend", "write-sql", "keys", "writes")
	nemesis := c.String("nemesis", "", "the faults to search over, comma-separated (default: every fault the topology takes)")
	budget := c.Duration("budget", 10*time.Minute, "bound on the search, shrinking included; no run starts that would end past it")
	strategy := c.String("strategy", search.Guided, "how the next schedule is chosen: "+strings.Join(search.Strategies, " or "))
	seed := c.Int64("seed", 0, "seed of the search's draws (default: from the clock); each run's seed follows from it")
	until := c.String("until", "budget", "first: stop at the first anomaly (of --want); budget: search the whole budget")
	want := c.String("want", "", "the anomaly kinds sought, comma-separated ("+strings.Join(checker.AnomalyNames, ", ")+"); others found are recorded but neither stop the search nor steer it (default: any)")
	parallel := c.Int("parallel", 1, "how many runs go at once, each on a topology of its own")
	tries := c.Int("tries", 3, "k: how many runs of a shrink's candidate must all find the anomaly")
	shrinkShare := c.Float64("shrink-share", 0.25, "share of --budget the shrinks of what was found get at least (0: no shrink)")
	store := c.storeFlag("explore/ for the searches")
	checkTimeout := c.checkTimeoutFlag()
	verbose := c.Bool("v", false, "print each run's progress lines")
	shard := c.String("shard", "", "run shard `i/n` of a campaign: a search of its own draws (seed·n+i−1) under the whole budget; `harness explore merge` joins the shards")
	planOnly := c.planFlag()
	asJSON := c.Bool("json", false, "with --plan, print the plan as JSON")
	if len(args) > 0 && args[0] == "merge" {
		return cmdExploreMerge(args[1:], stdout, stderr)
	}
	pos, code, ok := c.parse(args, stdout, stderr)
	if !ok {
		return code
	}
	var wants []string
	if *want != "" {
		for _, w := range strings.Split(*want, ",") {
			w = strings.TrimSpace(w)
			if !slices.Contains(checker.AnomalyNames, w) {
				return c.fail(stderr, "%v", suggest.Unknown("--want anomaly", w, checker.AnomalyNames, ""))
			}
			wants = append(wants, w)
		}
	}
	switch {
	case len(pos) > 0:
		return c.fail(stderr, "unexpected argument %q", pos[0])
	case !slices.Contains(search.Strategies, *strategy):
		return c.fail(stderr, "%v", suggest.Unknown("--strategy", *strategy, search.Strategies, ""))
	case *until != "first" && *until != "budget":
		return c.fail(stderr, "--until must be first or budget, got %q", *until)
	case *budget <= 0:
		return c.fail(stderr, "--budget must be positive, got %v", *budget)
	case *parallel < 1:
		return c.fail(stderr, "--parallel must be at least 1, got %d", *parallel)
	case *tries < 1:
		return c.fail(stderr, "--tries must be at least 1, got %d", *tries)
	case *shrinkShare < 0 || *shrinkShare >= 1:
		return c.fail(stderr, "--shrink-share must be at least 0 and below 1, got %v", *shrinkShare)
	}
	if !c.set("seed") {
		*seed = time.Now().UnixNano() % 1_000_000
	}
	// A shard searches with draws of its own from the campaign's seed.
	campaign := *seed
	if *shard != "" {
		i, n, err := search.ParseShard(*shard)
		if err != nil {
			return c.fail(stderr, "%v", err)
		}
		if !c.set("seed") {
			return c.fail(stderr, "--shard %s needs --seed: the shards of a campaign share one, each searching with its own draws from it", *shard)
		}
		*seed = search.ShardSeed(*seed, i, n)
	}
	space, err := search.NewSpace(spec, *nemesis)
	if err != nil {
		return c.fail(stderr, "%v", err)
	}
	if *planOnly {
		// A run of the search draws its faults from the space's.
		base := space.Base
		base.Nemesis = strings.Join(space.FaultNames(), ",")
		plan, err := base.Resolve()
		if err != nil {
			return c.fail(stderr, "%v", err)
		}
		d := plan.Describe()
		d.Name = fmt.Sprintf("explore %s on %s, %s search, budget %v", spec.Lock, spec.Topology, *strategy, *budget)
		d.Seed, d.Command, d.Drawn = *seed, exploreCommand(c, campaign), space.Draws()
		if !c.set("seed") {
			d.Notes = append(d.Notes, fmt.Sprintf("no --seed: the search draws its own when it starts; --seed %d runs this plan's", campaign))
		}
		return printPlan(stdout, "explore", []scenario.Described{d}, *asJSON)
	}
	if *asJSON {
		return c.fail(stderr, "--json goes with --plan: a search writes explore.json")
	}
	ctx, stop := interruptible(stderr)
	defer stop()
	defer proc.KillAll()
	sought := "any anomaly"
	if len(wants) > 0 {
		sought = strings.Join(wants, ", ")
	}
	part := ""
	if *shard != "" {
		part = ", shard " + *shard
	}
	fmt.Fprintf(stdout, "explore %s on %s (%s search%s, seed %d, budget %v): seeking %s over %d faults: %s\n",
		spec.Lock, spec.Topology, *strategy, part, *seed, *budget, sought, len(space.Faults), strings.Join(space.FaultNames(), ", "))
	opt := search.ExploreRunOptions{
		ExploreOptions: search.ExploreOptions{Space: space, Strategy: *strategy, Budget: *budget, Seed: *seed, UntilFirst: *until == "first",
			Want: wants, Parallel: *parallel, Log: func(format string, args ...any) { fmt.Fprintf(stdout, "  "+format+"\n", args...) }},
		Store: *store, CheckTimeout: *checkTimeout, ShrinkShare: *shrinkShare, Tries: *tries, Shard: *shard,
	}
	if *verbose {
		opt.Progress = stderr
	}
	ex, err := search.ExploreInStore(ctx, opt)
	if err != nil {
		fmt.Fprintf(stderr, "harness explore: %v\n", err)
		return exitHarness
	}
	return printExplored(stdout, ex, *tries)
}

// printExplored prints what a search found, its closest calls and its
// page, and says the exit code its verdict gives: 255 when it (or a
// search merged) was interrupted, else 1 when a sought anomaly was found,
// else 0.
func printExplored(stdout io.Writer, ex search.ExploredRun, tries int) int {
	fmt.Fprintf(stdout, "%d runs in %.0fs: %d features, %d schedules kept\n", len(ex.Runs), ex.Seconds, ex.Features, ex.Corpus)
	for _, f := range ex.Findings {
		mark := ""
		if !f.Wanted {
			mark = " (not sought)"
		}
		fmt.Fprintf(stdout, "  found %s%s in run #%d after %.0fs: %s\n    run       %s\n", f.Anomaly, mark, f.Run, f.Seconds, f.Genome, f.Dir)
		if f.Minimal != "" {
			fmt.Fprintf(stdout, "    minimal   %s (%s)\n    repro     harness repro %s --seeds %d\n", f.Minimal, f.Shrink, f.Minimal, tries)
		} else if f.Shrink != "" {
			fmt.Fprintf(stdout, "    shrink    %s\n", f.Shrink)
		}
	}
	for _, cl := range ex.Closest {
		fmt.Fprintf(stdout, "  closest %s %.1f ms in run #%d: %s\n", cl.Property, cl.Ms, cl.Run, cl.Says)
	}
	fmt.Fprintf(stdout, "  page      %s\n", filepath.Join(ex.Dir, "explore.html"))
	if ex.Interrupted {
		if ex.FirstWanted() != nil {
			fmt.Fprintln(stdout, "verdict: the lock broke, before the search was interrupted")
		} else {
			fmt.Fprintln(stdout, "verdict: none: the search was interrupted before its budget")
		}
		return exitHarness
	}
	if ex.FirstWanted() != nil {
		fmt.Fprintln(stdout, "verdict: the lock broke")
		return 1
	}
	fmt.Fprintln(stdout, "verdict: no anomaly found within the budget")
	return 0
}

// cmdExploreMerge joins the searches of a campaign's shards.
func cmdExploreMerge(args []string, stdout, stderr io.Writer) int {
	c := newCommand("explore merge", "DIR... [flags]", "Joins searches of one lock on one topology and workload (the shards of a campaign,\n"+
		"`harness explore --shard i/n`, or any searches of it) into STORE/explore/L-T-merged-TIME/:\n"+
		"every run, numbered anew in the order they ended (each counted from its own search's\n"+
		"start), the first finding of each kind (a shrunk one first), each property's closest\n"+
		"call, the features reached and the corpora kept. Exits 1 when a search found an anomaly\n"+
		"it sought, 0 when none did, 64 for a bad command line or a directory that holds no\n"+
		"search (or searches that cannot be joined), 255 when one was interrupted.")
	store := c.storeFlag("the merge goes to STORE/explore/")
	pos, code, ok := c.parse(args, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) == 0 {
		return c.fail(stderr, "which searches? give each shard's STORE/explore/L-T-STRATEGY-shard-I-of-N-TIME directory")
	}
	merged, err := search.MergeDirs(pos)
	if err != nil {
		return c.fail(stderr, "%v", err)
	}
	ex, err := search.WriteMerged(*store, merged)
	if err != nil {
		fmt.Fprintf(stderr, "harness explore merge: %v\n", err)
		return exitHarness
	}
	fmt.Fprintf(stdout, "explore %s on %s: %d searches merged (%s)\n", ex.Lock, ex.Topology, len(ex.Sources), ex.Strategy)
	return printExplored(stdout, ex, 3)
}

// exploreCommand is the search's command line as given, the campaign's
// seed fixed and --plan and --json left out: what carries it out.
func exploreCommand(c *command, seed int64) string {
	parts := []string{"harness explore"}
	c.Visit(func(f *flag.Flag) {
		switch {
		case f.Name == "plan" || f.Name == "json" || f.Name == "seed":
		case isBool(f):
			parts = append(parts, "--"+f.Name+"="+f.Value.String())
		default:
			parts = append(parts, "--"+f.Name+" "+shell.Quote(f.Value.String()))
		}
	})
	return strings.Join(append(parts, fmt.Sprintf("--seed %d", seed)), " ")
}

// isBool reports whether a flag is a switch, which takes no separate value.
func isBool(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}
