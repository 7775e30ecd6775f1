package faults

import (
	"context"
	"fmt"
	"math/rand"
	"time"

	"github.com/lockharness/lockharness/cluster"
)

func someNode(env *Env, rng *rand.Rand) cluster.Node {
	return env.Cluster.Nodes[rng.Intn(len(env.Cluster.Nodes))]
}

// pauseNode freezes a server with SIGSTOP, as a long GC or VM stall would.
var pauseNode = Fault{
	Name:    "pause-node",
	Summary: "SIGSTOP a node for 0.5-1.5 TTLs, then SIGCONT",
	Run: func(ctx context.Context, env *Env, rng *rand.Rand) error {
		n := someNode(env, rng)
		hold := between(rng, env.TTL/2, scale(env.TTL, 1.5))
		if err := n.Pause(); err != nil {
			return err
		}
		end := env.Begin("pause-node", n.Name(), "for "+hold.String())
		sleep(ctx, hold)
		err := n.Resume()
		end("resumed")
		return err
	},
}

// killNode crashes a node right after a client was granted the lock, and
// restarts it on the same port after a short delay. What survives depends on
// the node's persistence: without it the lock is forgotten.
var killNode = Fault{
	Name:    "kill-node",
	Summary: "SIGKILL a node just after a grant; restart it 0-100ms (or --restart-delay) later",
	Run: func(ctx context.Context, env *Env, rng *rand.Rand) error {
		n := someNode(env, rng)
		delay := env.RestartDelay
		if delay == 0 {
			delay = between(rng, 0, 100*time.Millisecond)
		}
		holder, err := awaitHolder(ctx, env)
		if ctx.Err() != nil {
			return nil
		}
		if err == nil {
			n = holdersNode(env, holder, n)
		}
		detail := "no grant seen"
		if err == nil {
			detail = fmt.Sprintf("client %d just acquired", holder)
		}
		// The window opens before the kill: the server dies at once, while
		// a container engine may take tens of milliseconds to confirm it.
		end := env.Begin("kill-node", n.Name(), detail+"; restart in "+delay.String())
		if err := n.Kill(); err != nil {
			end("kill failed")
			return err
		}
		time.Sleep(delay)
		// Restart even when the run is ending: the final heal needs the node.
		err = n.Restart(context.Background())
		end("restarted")
		return err
	},
}

// awaitHolder waits (at most 3 TTLs) for the next grant and returns its
// client. In a redlock topology it first lets one TTL pass, so that keys
// granted before a concurrent partition have expired on the nodes the
// holder can no longer reach, and the grant it waits for is the first one
// the partition shapes.
func awaitHolder(ctx context.Context, env *Env) (int, error) {
	if env.Cluster.Topology == "redlock" && !sleep(ctx, env.TTL) {
		return 0, ctx.Err()
	}
	wctx, cancel := context.WithTimeout(ctx, 3*env.TTL)
	defer cancel()
	return env.Clients.AwaitGrant(wctx)
}
