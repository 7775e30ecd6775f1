// Command explorebench measures `harness explore`'s guided search against
// random search over the same space (make bench-explore): for each target,
// a lock and topology with a known unsafe catalog row but no fault named,
// it runs K seeds of each strategy with the same budget, each until the
// first anomaly of the target's kind, and prints a table of the time to
// it (a miss counts as the budget) ending with one line: the median of
// each strategy over targets and seeds, and their ratio.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/harness"
	"github.com/lockharness/lockharness/internal/proc"
	"github.com/lockharness/lockharness/scenario"
	"github.com/lockharness/lockharness/search"
)

// target is a lock on a topology and the anomaly kind to find there.
type target struct {
	name        string
	lock        string
	topology    string
	persistence string
	anomaly     string
}

// targets each have an unsafe catalog row of their kind; the search is
// given none of its faults.
var targets = []target{
	{"cad-cluster", "cad", "cluster", "", checker.DoubleGrant},
	{"wait-sentinel", "wait", "sentinel", "", checker.DoubleGrant},
	{"redsync-redlock", "redsync:setnx-on-extend:tries=1", "redlock", "", checker.ForeignRelease},
	{"fenced-single", "fenced", "single", "none", checker.DoubleGrant},
	{"del-single", "del", "single", "", checker.ForeignRelease},
}

func main() {
	// The runs' built-in workers are this binary in the harness's worker
	// role.
	if len(os.Args) > 1 && os.Args[1] == "worker" {
		os.Exit(harness.Main(os.Args[1:]))
	}
	// A node a fault killed makes the client library log its dials; the
	// runs' histories say what happened.
	redis.SetLogger(silent{})
	seeds := flag.Int("seeds", 3, "K: seeds of each strategy per target")
	budget := flag.Duration("budget", 5*time.Minute, "each search's budget; a miss counts as this")
	store := flag.String("store", filepath.Join("store", "bench-explore"), "where the runs and searches go")
	only := flag.String("targets", "", "comma-separated target names (default all): "+names())
	flag.Parse()
	chosen := targets
	if *only != "" {
		chosen = nil
		for _, n := range strings.Split(*only, ",") {
			i := slices.IndexFunc(targets, func(t target) bool { return t.name == n })
			if i < 0 {
				fmt.Fprintf(os.Stderr, "explorebench: no target %q (valid: %s)\n", n, names())
				os.Exit(64)
			}
			chosen = append(chosen, targets[i])
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	defer proc.KillAll()
	times := map[string][]float64{}
	// Rows are printed as each search ends, so the widths are fixed.
	row := "%-16s %-16s %-8s %4s %8s %5s  %s\n"
	fmt.Printf(row, "target", "anomaly", "strategy", "seed", "seconds", "runs", "found in run")
	for _, t := range chosen {
		for _, strategy := range search.Strategies {
			for seed := 1; seed <= *seeds; seed++ {
				secs, runs, run, err := one(ctx, t, strategy, int64(seed), *budget, *store)
				if ctx.Err() != nil {
					os.Exit(255)
				}
				if err != nil {
					fmt.Fprintf(os.Stderr, "explorebench: %s %s seed %d: %v\n", t.name, strategy, seed, err)
					os.Exit(255)
				}
				times[strategy] = append(times[strategy], secs)
				found := "missed"
				if run > 0 {
					found = fmt.Sprintf("#%d", run)
				}
				fmt.Printf(row, t.name, t.anomaly, strategy, fmt.Sprint(seed), fmt.Sprintf("%.0f", secs), fmt.Sprint(runs), found)
			}
		}
	}
	g, r := median(times[search.Guided]), median(times[search.Random])
	fmt.Printf("explore guided median %.0f s · random median %.0f s · ratio %.2f\n", g, r, g/r)
}

// one runs a search until the target's first anomaly and says how long
// it took (the budget when it missed), how many runs it made and which
// found it (0: none).
func one(ctx context.Context, t target, strategy string, seed int64, budget time.Duration, store string) (float64, int, int, error) {
	base := scenario.Defaults()
	base.Lock, base.Topology = t.lock, t.topology
	if t.persistence != "" {
		base.Persistence = t.persistence
	}
	space, err := search.NewSpace(base, "")
	if err != nil {
		return 0, 0, 0, err
	}
	ex, err := search.ExploreInStore(ctx, search.ExploreRunOptions{
		ExploreOptions: search.ExploreOptions{Space: space, Strategy: strategy, Budget: budget, Seed: seed, UntilFirst: true, Want: []string{t.anomaly}, Parallel: 1},
		Store:          store,
	})
	if err != nil {
		return 0, 0, 0, err
	}
	if f := ex.FirstWanted(); f != nil {
		return f.Seconds, len(ex.Runs), f.Run, nil
	}
	return budget.Seconds(), len(ex.Runs), 0, nil
}

type silent struct{}

func (silent) Printf(context.Context, string, ...any) {}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func names() string {
	var n []string
	for _, t := range targets {
		n = append(n, t.name)
	}
	return strings.Join(n, ", ")
}
