// Package faults injects the failures a run is tested under: network faults
// through an embedded toxiproxy (one proxy per link), process faults on nodes
// and clients, and the seeded schedule (the nemesis) that decides when each
// happens and records every start and end in the history.
//
// Adding a fault is one file with a Fault value and one line in Registry.
package faults

import (
	"context"
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"time"

	"github.com/lockharness/lockharness/cluster"
	"github.com/lockharness/lockharness/history"
)

// Registry lists every fault the nemesis can inject.
var Registry = []Fault{
	partition, latency, pauseNode, killNode, pauseClient, killClient,
	partitionPrimary, splitBrain, killPrimary, pausePrimary, replicationLag, failover,
	partitionMajorities, partitionMinority, pauseAcquire, pausePastRelease,
	clockJump, clockStrobe,
}

// None is the nemesis name for a run without faults.
const None = "none"

// Fault is one kind of failure.
type Fault struct {
	Name    string
	Summary string
	// Topologies the fault applies to; empty means all.
	Topologies []string
	// Run injects the fault once, holds it, heals it, and records its window
	// with env.Begin and the returned end. It must heal before returning,
	// also when ctx is cancelled.
	Run func(ctx context.Context, env *Env, rng *rand.Rand) error
}

// Clients is what client faults need from the workload.
type Clients interface {
	// Freeze waits for a client to stop at the named pause point.
	Freeze(ctx context.Context, point string) (client int, resume, kill func() error, err error)
	// RecipePoint is the recipe's own pause point (naive: between SETNX and
	// EXPIRE; redlock: with acquire replies in flight), or before-write.
	RecipePoint() string
	// AwaitGrant returns the slot of the next client granted the lock.
	AwaitGrant(ctx context.Context) (int, error)
	// AwaitRelease returns the slot of the next client that released it.
	AwaitRelease(ctx context.Context) (int, error)
}

// Env is what faults act on.
type Env struct {
	Cluster *cluster.Cluster
	Net     *Network
	Clients Clients
	Rec     *history.Recorder
	// NumClients is the number of client slots; ClientLinks gives a slot's
	// links to the nodes.
	NumClients  int
	ClientLinks func(slot int) []*Link
	// ClientLink is the link of a slot to one node.
	ClientLink func(slot int, node string) *Link
	TTL        time.Duration
	// Hold is how long a client keeps the lock after its write.
	Hold time.Duration
	// RestartDelay is how long kill-node keeps a node down; 0 draws
	// 0-100 ms from the seed.
	RestartDelay time.Duration
	// Log reports progress to the person running the harness.
	Log func(format string, args ...any)
}

// Begin records the start of a fault window and returns the function that
// records its end.
func (e *Env) Begin(fault, target, detail string) func(detail string) {
	start := e.Rec.Record(history.Event{Type: history.Info, Process: history.Nemesis, F: fault, Phase: history.Start, Target: target, Detail: detail})
	e.Log("%7.3fs  %-13s start  %s %s", start.At().Seconds(), fault, target, detail)
	return func(endDetail string) {
		end := e.Rec.Record(history.Event{Type: history.Info, Process: history.Nemesis, F: fault, Phase: history.End, Target: target, Detail: endDetail})
		e.Log("%7.3fs  %-13s end    %s %s", end.At().Seconds(), fault, target, endDetail)
	}
}

// Group is faults injected together: the nemesis starts them at the same
// moment and waits for all of them, so they overlap by construction.
type Group []Fault

// Name is the group as written on the command line: a+b.
func (g Group) Name() string {
	names := make([]string, len(g))
	for i, f := range g {
		names[i] = f.Name
	}
	return strings.Join(names, "+")
}

// Lookup parses a nemesis list: comma-separated groups, each one fault or
// several joined by "+" to be injected together. "none" alone means no
// faults.
func Lookup(list string) ([]Group, error) {
	if strings.TrimSpace(list) == None {
		return nil, nil
	}
	var out []Group
	for _, item := range strings.Split(list, ",") {
		var g Group
		for _, name := range strings.Split(item, "+") {
			name = strings.TrimSpace(name)
			if name == None {
				return nil, fmt.Errorf("nemesis %q: \"none\" cannot be combined with faults", list)
			}
			f, ok := find(name)
			if !ok {
				return nil, fmt.Errorf("unknown nemesis %q (valid: %s; join faults with + to inject them together)", name, strings.Join(Names(), ", "))
			}
			g = append(g, f)
		}
		out = append(out, g)
	}
	return out, nil
}

// Check reports whether every fault applies to the topology, naming the
// ones that do not and where they would.
func Check(groups []Group, topology string) error {
	var faults []Fault
	for _, g := range groups {
		faults = append(faults, g...)
	}
	for _, f := range faults {
		if len(f.Topologies) == 0 {
			continue
		}
		ok := false
		for _, t := range f.Topologies {
			ok = ok || t == topology
		}
		if !ok {
			return fmt.Errorf("nemesis %s needs topology %s, not %s", f.Name, strings.Join(f.Topologies, " or "), topology)
		}
	}
	return nil
}

func find(name string) (Fault, bool) {
	for _, f := range Registry {
		if f.Name == name {
			return f, true
		}
	}
	return Fault{}, false
}

// Names lists "none" and every fault, sorted.
func Names() []string {
	names := []string{None}
	for _, f := range Registry {
		names = append(names, f.Name)
	}
	sort.Strings(names)
	return names
}

// sleep waits for d or until ctx ends, and reports whether it waited fully.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// between draws a duration uniformly in [lo, hi].
func between(rng *rand.Rand, lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(rng.Int63n(int64(hi-lo)+1))
}

// scale multiplies d by f.
func scale(d time.Duration, f float64) time.Duration { return time.Duration(float64(d) * f) }
