package faults

import (
	"context"
	"errors"
	"fmt"
	"image/color"
	"math/rand"
	"time"

	"github.com/lockharness/lockharness/cluster"
	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/internal/options"
)

func someNode(env *Env, rng *rand.Rand) cluster.Node {
	return env.Cluster.Nodes[rng.Intn(len(env.Cluster.Nodes))]
}

// chooseNode is the node a fault hits: the one its node option names, or
// drawn (random), or, for "holder" and a grant seen (holder ≥ 0), the node
// a fault on that holder should hit (holdersNode). A node drawn is pinned;
// the holder's is found again by a replay, from its own grant.
func chooseNode(env *Env, opts options.Values, def string, drawn cluster.Node, holder int) cluster.Node {
	switch choice := opts.Get(optNode, def); choice {
	case nodeRandom:
		pin(opts, optNode, drawn.Name())
		return drawn
	case nodeHolder:
		if holder < 0 {
			pin(opts, optNode, drawn.Name())
			return drawn
		}
		return holdersNode(env, holder, drawn)
	default:
		for _, n := range env.Cluster.Nodes {
			if n.Name() == choice {
				return n
			}
		}
		return drawn // refused up front (Injection.Available)
	}
}

// nodeControl is what faults that act on a node itself need: nodes the
// harness runs.
var nodeControl = []cluster.Capability{cluster.NodeControl}

// pauseNode freezes a server with SIGSTOP, as a long GC or VM stall would.
var pauseNode = Fault{
	Name:    "pause-node",
	Drawing: history.Drawing{Colour: color.NRGBA{R: 190, G: 115, B: 105, A: 70}, Legend: "node stopped"},
	Needs:   nodeControl,
	Summary: "SIGSTOP a node for 0.5-1.5 TTLs, then SIGCONT",
	Options: []options.Spec{nodeOpt(nodeRandom, false), forOpt("0.5-1.5 TTLs")},
	Run: func(ctx context.Context, env *Env, rng *rand.Rand, opts options.Values) error {
		n := chooseNode(env, opts, nodeRandom, someNode(env, rng), -1)
		hold := hold(opts, rng, env.TTL/2, scale(env.TTL, 1.5))
		if err := n.Pause(); err != nil {
			return err
		}
		end := env.Begin(history.Facts{Nodes: []string{n.Name()}, HoldNs: int64(hold)}, "for "+hold.String())
		sleep(ctx, hold)
		err := n.Resume()
		end("resumed")
		return err
	},
}

// killNode crashes a node right after a client was granted the lock, and
// restarts it on the same port after a short delay. What survives depends on
// the node's persistence: without it the lock is forgotten. With data=lost
// the node's disk goes with it (its AOF, an etcd member's log), whatever
// its persistence.
var killNode = Fault{
	Name:    "kill-node",
	Drawing: history.Drawing{Colour: color.NRGBA{R: 140, G: 86, B: 75, A: 70}, Legend: "node killed, restarted"},
	Scored:  []Scorecard{ScoreLibraries},
	Waits:   true,
	Needs:   nodeControl,
	Summary: "SIGKILL a node just after a grant; restart it 0-100ms later",
	Options: []options.Spec{
		{Name: optDelay, Kind: options.Duration, Summary: "how long the node stays down (default 0-100ms)"},
		nodeOpt(nodeHolder+": the holder's node", true),
		{Name: optData, Kind: options.Choice, Choices: []string{dataKept, dataLost},
			Summary: "kept: the node restarts with what its persistence kept (default); lost: with its data removed, as if its disk had gone too (not on a Redis Cluster, whose nodes keep their identity with their data)"},
	},
	Run: func(ctx context.Context, env *Env, rng *rand.Rand, opts options.Values) error {
		drawn := someNode(env, rng)
		delay := pinnedDuration(opts, optDelay, func() time.Duration { return between(rng, 0, 100*time.Millisecond) })
		holder, err := awaitHolder(ctx, env)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			holder = -1
		}
		after := afterGrant(holder, 0)
		n := chooseNode(env, opts, nodeHolder, drawn, holder)
		// The window opens before the kill: the server dies at once, while
		// a container engine may take tens of milliseconds to confirm it.
		end := env.Begin(history.Facts{Nodes: []string{n.Name()}, After: after, HoldNs: int64(delay)}, afterWords(after, "no grant seen")+"; restart in "+delay.String())
		wasUp := n.Running()
		if err := n.Kill(); err != nil {
			end("kill failed", history.Facts{Failed: "kill failed"})
			return err
		}
		down := env.Rec.Now()
		lost := opts.Get(optData, dataKept) == dataLost
		if lost {
			if err := n.LoseData(); err != nil {
				// The node comes back as it was, which is not this
				// fault: the window ends failed, with whatever the
				// restart said too.
				env.DownIf(wasUp, n, down)
				err = errors.Join(fmt.Errorf("data not removed: %w", err), n.Restart(context.Background()))
				end("not done: "+err.Error(), history.Facts{Failed: err.Error()})
				return err
			}
		}
		time.Sleep(delay)
		env.DownIf(wasUp, n, down)
		// Restart even when the run is ending: the final heal needs the node.
		err = n.Restart(context.Background())
		end(restartedLosing(env, n, err, lost))
		return err
	},
}

// restarted says how a node came back, in words and as the end's facts:
// how many keys it held at once, which is what the lock's grants depend on
// (none, without persistence).
func restarted(env *Env, n cluster.Node, err error) (string, history.Facts) {
	return restartedLosing(env, n, err, false)
}

// restartedLosing is restarted for a node whose data may have been
// removed while it was down (lost).
func restartedLosing(env *Env, n cluster.Node, err error, lost bool) (string, history.Facts) {
	if err != nil {
		return "restart failed: " + err.Error(), history.Facts{Failed: "restart failed: " + err.Error()}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	keys, err := env.Cluster.KeyCount(ctx, n)
	if err != nil {
		return fmt.Sprintf("restarted (its keys not counted: %v)", err), history.Facts{}
	}
	facts := history.Facts{Keys: &keys, Persistence: env.Cluster.Persistence(), DataLost: lost}
	if keys == 0 {
		return fmt.Sprintf("restarted empty (0 keys; %s)", facts.Kept()), facts
	}
	return fmt.Sprintf("restarted with %d keys (%s)", keys, facts.Kept()), facts
}

// kill-node's data option: what a killed node restarts with.
const (
	optData  = "data"
	dataKept = "kept"
	dataLost = "lost"
)

// inFlight bounds how long an operation sent before a fault may take to
// land: a loopback round trip is well under a millisecond.
const inFlight = 50 * time.Millisecond

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// awaitHolder waits for the next grant and returns its client. Where clients need a majority of independent nodes, the grant it
// waits for must be one a concurrent partition shapes: a lease granted
// before the partition is on every node, and its release reaches only the
// releaser's side, so until it expires it blocks the other side. So it
// first lets operations in flight at the partition land, then waits until
// the lease held then, if any, has certainly expired (one TTL after its
// grant), and no longer: with the lock free at the cut, nothing is left
// to expire. It counts from the grant (Loop.AwaitHolder): the workload's
// one extend, right after the write, moves the lease's end by the write's
// few milliseconds, which the inFlight margin covers; a later renewal, and
// keys a failed acquire left where its cleanup could not reach, are not
// followed. In all it waits up to a TTL and 100 ms, then up to 3 TTLs for
// the grant.
func awaitHolder(ctx context.Context, env *Env) (int, error) {
	if slot, _, ok := grantWaited(ctx); ok {
		return slot, nil
	}
	if env.Cluster.Can(cluster.Majorities) == nil {
		start := time.Now()
		expired := start
		holder := func() {
			hctx, cancel := context.WithTimeout(ctx, 0)
			defer cancel()
			if _, held, err := env.Clients.AwaitHolder(hctx); err == nil {
				expired = maxTime(expired, time.Now().Add(env.TTL-held+inFlight))
			}
		}
		holder() // held at the cut: released, if at all, on one side only
		if !sleep(ctx, inFlight) {
			return 0, ctx.Err()
		}
		holder() // granted by an acquire in flight at the cut
		if !sleep(ctx, time.Until(expired)) {
			return 0, ctx.Err()
		}
	}
	wctx, cancel := context.WithTimeout(ctx, 3*env.TTL)
	defer cancel()
	return env.Clients.AwaitGrant(wctx)
}
