package runner

import (
	"context"
	"io"
	"math/rand"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/cluster"
	"github.com/lockharness/lockharness/faults"
	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/internal/proc"
	"github.com/lockharness/lockharness/locks"
	"github.com/lockharness/lockharness/resource"
	"github.com/lockharness/lockharness/scenario"
)

// The registries' contract, over every entry with no skips by name: every
// fault, on every topology it is available on, applies, records its window
// and heals; every recipe runs clean on every topology it supports. A new
// fault or recipe is covered by adding it to its registry.

// contractFor is how long a fault holds in the contract tests, where it
// takes the for option: long enough to be a fault, short enough to test
// every fault on every topology in about a minute.
const contractFor = "600ms"

func TestEveryFaultAppliesRecordsAndHeals(t *testing.T) {
	for _, topology := range cluster.Topologies {
		t.Run(topology, func(t *testing.T) {
			needRedis(t)
			if topology == cluster.Sentinel || topology == cluster.TargetSentinel {
				needSentinel(t)
			}
			planned, err := cluster.Describe(topology)
			if err != nil {
				t.Fatal(err)
			}
			// With PostgreSQL installed the clients sell inventory, so
			// that the faults on the database's links run too.
			_, noDatabase := resource.PostgresBin()
			var list []string
			for _, f := range faults.Registry {
				if f.Available(planned) != nil || f.NeedsDatabase && noDatabase != nil {
					continue
				}
				in := f.Name
				for _, o := range f.Options {
					if o.Name == "for" {
						in += ":for=" + contractFor
					}
				}
				list = append(list, in)
			}
			if len(list) == 0 {
				t.Skipf("no fault is available on %s", topology)
			}
			s := scenario.Defaults()
			s.Topology, s.Nemesis, s.TTL, s.Clients, s.Seed = topology, strings.Join(list, ","), scenario.Duration(time.Second), 3, 1
			s.Lock = recipeFor(t, planned.Shape())
			if noDatabase == nil {
				s.Workload = "inventory"
			}
			switch topology {
			case cluster.Target:
				s.Target = "redis://" + startTargetServer(t)
			case cluster.TargetSentinel:
				s.Target = startTargetSentinel(t)
			}
			plan, err := s.Resolve()
			if err != nil {
				t.Fatal(err)
			}
			r, rec := startTestRig(t, plan)
			for i, g := range plan.Nemesis {
				in := g[0]
				t.Run(in.Name, func(t *testing.T) {
					before := len(rec.Events())
					ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
					defer cancel()
					if err := g.Run(ctx, r.env, rand.New(rand.NewSource(int64(i)))); err != nil {
						t.Fatalf("%s: %v", in, err)
					}
					if ctx.Err() != nil {
						t.Fatalf("%s did not end within 40s", in)
					}
					events := rec.Events()
					windows := 0
					for _, w := range history.FaultWindows(events) {
						if w.Start < before || events[w.Start].F != in.Name {
							continue
						}
						windows++
						if w.End < 0 {
							t.Errorf("%s: its window opened at %s never closed", in, checker.Secs(events[w.Start].Time))
						}
						// What it ran with, drawn options included, is
						// what a replay pins: it must read back as this
						// fault's options, those it was given kept.
						opts := events[w.Start].Options
						back, err := faults.ParseOne(in.Name + ":" + opts)
						if opts == "" {
							back, err = faults.ParseOne(in.Name)
						}
						if err != nil {
							t.Errorf("%s recorded options %q that do not read back: %v", in, opts, err)
						}
						for k, v := range in.Options {
							if back.Options[k] != v {
								t.Errorf("%s recorded options %q, without its %s=%s", in, opts, k, v)
							}
						}
					}
					if windows == 0 {
						t.Errorf("%s recorded no window", in)
					}
					if err := r.env.Healed(); err != nil {
						t.Errorf("after %s: %v", in, err)
					}
					if err := r.cl.Settle(context.Background(), 30*time.Second); err != nil {
						t.Errorf("after %s the topology did not settle: %v", in, err)
					}
				})
			}
		})
	}
}

// The recipes share their topologies through a keep, reset between runs,
// as a search's runs do: a topology's start was a third of each run.
func TestEveryRecipeRunsCleanEverywhereItRuns(t *testing.T) {
	needRedis(t)
	store := t.TempDir()
	keep := NewTopologies()
	// Registered after the store, so it runs before the store goes.
	t.Cleanup(func() {
		keep.Close()
		if n := proc.Live(); n != 0 {
			t.Errorf("%d child processes still running after the keep closed", n)
		}
		proc.KillAll()
	})
	for _, r := range locks.Recipes {
		for _, topology := range cluster.Offering(r.Needs, r.Prefers) {
			t.Run(r.Name+"/"+topology, func(t *testing.T) {
				if topology == cluster.Sentinel {
					needSentinel(t)
				}
				s := spec(r.Name, faults.None, 2*time.Second, 1)
				s.Topology = topology
				out, err := RunSpec(context.Background(), s, Options{Store: store, WorkerBin: workerBin, Reuse: keep})
				if err != nil {
					t.Fatalf("run: %v", err)
				}
				res := out.Results
				t.Logf("%s: %v (topology: %s)", s.DefaultName(), res.Valid, res.Provenance.Topology)
				wantValid(t, res)
				if ok := res.Stats["acquire"].OK; ok < 2 {
					t.Errorf("%d acquires granted in 2s, want at least 2", ok)
				}
				if res.Checker.Liveness != "ok" {
					t.Errorf("liveness %s", res.Checker.Liveness)
				}
			})
		}
	}
}

// recipeFor is a recipe of the harness's own that runs on the topology.
func recipeFor(t *testing.T, topology string) string {
	for _, r := range locks.Recipes {
		if r.Library == "" && slices.Contains(cluster.Offering(r.Needs, r.Prefers), topology) && len(r.Points) == 0 {
			return r.Name
		}
	}
	for _, r := range locks.Recipes {
		if slices.Contains(cluster.Offering(r.Needs, r.Prefers), topology) {
			return r.Name
		}
	}
	t.Fatalf("no recipe runs on %s", topology)
	return ""
}

// startTargetServer starts a redis-server the run does not own: a
// stand-in for a deployment that --target points at.
func startTargetServer(t *testing.T) string {
	t.Helper()
	n, err := cluster.StartLocal(context.Background(), "staging", t.TempDir(), cluster.PersistNone)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Stop() })
	return n.Addr()
}

// startTargetSentinel starts a Sentinel deployment as a team's would be,
// not through the harness's proxies, and gives its --target URL.
func startTargetSentinel(t *testing.T) string {
	t.Helper()
	direct := func(_, upstream string) (string, error) { return upstream, nil }
	team, err := cluster.Start(context.Background(), cluster.Spec{Topology: cluster.Sentinel, Backend: cluster.BackendLocal, Dir: t.TempDir(), Link: direct})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { team.Close() })
	var sentinels []string
	for _, s := range team.Sentinels {
		sentinels = append(sentinels, s.Addr())
	}
	return "redis-sentinel://" + strings.Join(sentinels, ",") + "/lockharness"
}

// startTestRig starts a run's topology and clients for a test, and stops
// them when the test ends.
func startTestRig(t *testing.T, plan scenario.Plan) (*rig, *history.Recorder) {
	t.Helper()
	t.Cleanup(proc.KillAll)
	// What the test started itself (a stand-in target) is not the rig's.
	before := proc.Live()
	dir := t.TempDir()
	rec := history.NewRecorder(nil)
	logf := func(format string, args ...any) { t.Logf(format, args...) }
	r, err := startRig(context.Background(), plan, Options{WorkerBin: workerBin}, dir, rec, io.Discard, logf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		r.close()
		if n := proc.Live() - before; n != 0 {
			t.Errorf("%d child processes of the rig left", n)
		}
	})
	return r, rec
}
