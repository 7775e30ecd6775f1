package faults

import (
	"context"
	"fmt"
	"math/rand"
)

// pauseClient freezes a lock holder after its acquire and before its
// protected write for longer than the TTL: the GC pause of Kleppmann's
// example. The whole worker stops, lock watchdog included.
var pauseClient = Fault{
	Name:    "pause-client",
	Summary: "SIGSTOP a lock holder before its write for 1.5-3 TTLs",
	Run: func(ctx context.Context, env *Env, rng *rand.Rand) error {
		return freezeFor(ctx, env, rng, "pause-client", "before-write")
	},
}

// freezeFor freezes the first client to reach point for 1.5-3 TTLs and
// records the window; a run that ends first resumes it at once.
func freezeFor(ctx context.Context, env *Env, rng *rand.Rand, fault, point string) error {
	hold := between(rng, scale(env.TTL, 1.5), 3*env.TTL)
	slot, resume, _, err := env.Clients.Freeze(ctx, point)
	if err != nil {
		return nil // the run ended before any client got there
	}
	end := env.Begin(fault, fmt.Sprintf("client %d", slot), "frozen at "+point+" for "+hold.String())
	sleep(ctx, hold)
	err = resume()
	end("resumed")
	return err
}

// killClient crashes a client at its recipe's most fragile step; the
// workload replaces it with a fresh worker.
var killClient = Fault{
	Name:    "kill-client",
	Summary: "SIGKILL a client at its recipe's pause point (naive: between SETNX and EXPIRE)",
	Run: func(ctx context.Context, env *Env, rng *rand.Rand) error {
		point := env.Clients.RecipePoint()
		slot, _, kill, err := env.Clients.Freeze(ctx, point)
		if err != nil {
			return nil
		}
		end := env.Begin("kill-client", fmt.Sprintf("client %d", slot), "killed at "+point)
		err = kill()
		end("replaced")
		return err
	},
}

// pauseAcquire freezes a client at its recipe's own pause point (Redlock:
// after the nodes answered an acquire, before the validity is computed) for
// 1.5-3 TTLs: the delayed reply of Kleppmann's example.
var pauseAcquire = Fault{
	Name:    "pause-acquire",
	Summary: "SIGSTOP a client inside its recipe (redlock: with acquire replies in flight) for 1.5-3 TTLs",
	Run: func(ctx context.Context, env *Env, rng *rand.Rand) error {
		return freezeFor(ctx, env, rng, "pause-acquire", env.Clients.RecipePoint())
	},
}
