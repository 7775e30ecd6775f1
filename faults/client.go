package faults

import (
	"context"
	"fmt"
	"image/color"
	"math/rand"

	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/internal/options"
)

// pauseClient freezes a lock holder after its acquire and before its
// protected write for longer than the TTL: the GC pause of Kleppmann's
// example. The whole worker stops, lock watchdog included.
var pauseClient = Fault{
	Name:         "pause-client",
	StopsClients: true,
	Drawing:      history.Drawing{Colour: color.NRGBA{R: 148, G: 103, B: 189, A: 70}, Legend: "holder frozen"},
	Scored:       []Scorecard{ScoreLibraries, ScoreCluster, ScoreLongHold},
	Waits:        true,
	Summary:      "SIGSTOP a lock holder before its write for 1.5-3 TTLs",
	Options:      []options.Spec{forOpt("1.5-3 TTLs")},
	Run: func(ctx context.Context, env *Env, rng *rand.Rand, opts options.Values) error {
		return freeze(ctx, env, rng, opts, "before-write", false)
	},
}

// pausePastRelease is pause-client that thaws the holder just after some
// other client released the lock, so that what it does first on waking
// (write, extend) meets a free lock: the shape of redsync's
// extend-after-expiry.
var pausePastRelease = Fault{
	Name:         "pause-past-release",
	StopsClients: true,
	Drawing:      history.Drawing{Colour: color.NRGBA{R: 180, G: 155, B: 225, A: 80}, Legend: "holder frozen past a release"},
	Waits:        true,
	Summary:      "SIGSTOP a lock holder before its write for 1.5-3 TTLs, thawing it just after another client's release",
	Options:      []options.Spec{forOpt("1.5-3 TTLs, then until another client's release")},
	Run: func(ctx context.Context, env *Env, rng *rand.Rand, opts options.Values) error {
		return freeze(ctx, env, rng, opts, "before-write", true)
	},
}

// pauseAcquire freezes a client at its recipe's own pause point (Redlock:
// after the nodes answered an acquire, before the validity is computed) for
// 1.5-3 TTLs: the delayed reply of Kleppmann's example.
var pauseAcquire = Fault{
	Name:         "pause-acquire",
	StopsClients: true,
	Drawing:      history.Drawing{Colour: color.NRGBA{R: 115, G: 55, B: 195, A: 70}, Legend: "frozen in its recipe"},
	Waits:        true,
	Summary:      "SIGSTOP a client inside its recipe (redlock: with acquire replies in flight) for 1.5-3 TTLs",
	Options:      []options.Spec{forOpt("1.5-3 TTLs")},
	Run: func(ctx context.Context, env *Env, rng *rand.Rand, opts options.Values) error {
		return freeze(ctx, env, rng, opts, env.Clients.RecipePoint(), false)
	},
}

// freeze freezes the first client to reach point for 1.5-3 TTLs (or the
// for option) and records the window; with afterRelease it also waits (at
// most 3 TTLs more) for another client's release before thawing. A run
// that ends first resumes it at once.
func freeze(ctx context.Context, env *Env, rng *rand.Rand, opts options.Values, point string, afterRelease bool) error {
	hold := hold(opts, rng, scale(env.TTL, 1.5), 3*env.TTL)
	slot, resume, _, err := env.Freeze(ctx, point)
	if err != nil {
		return nil // the run ended before any client got there
	}
	end := env.Begin(history.Facts{Clients: []int{slot}, PausedAt: point, Frozen: true, HoldNs: int64(hold)}, "frozen at "+point+" for "+hold.String())
	sleep(ctx, hold)
	detail := "resumed"
	if afterRelease && ctx.Err() == nil {
		wctx, cancel := context.WithTimeout(ctx, 3*env.TTL)
		if other, err := env.Clients.AwaitRelease(wctx); err == nil {
			detail = fmt.Sprintf("resumed as client %d released the lock", other)
		}
		cancel()
	}
	err = resume()
	end(detail)
	return err
}

// killClient crashes a client at its recipe's most fragile step; the
// workload replaces it with a fresh worker.
var killClient = Fault{
	Name:         "kill-client",
	StopsClients: true,
	Drawing:      history.Drawing{Colour: color.NRGBA{R: 115, G: 40, B: 135, A: 70}, Legend: "client killed"},
	Waits:        true,
	Summary:      "SIGKILL a client at its recipe's pause point (naive: between SETNX and EXPIRE)",
	Run: func(ctx context.Context, env *Env, rng *rand.Rand, _ options.Values) error {
		point := env.Clients.RecipePoint()
		slot, _, kill, err := env.Freeze(ctx, point)
		if err != nil {
			return nil
		}
		end := env.Begin(history.Facts{Clients: []int{slot}, PausedAt: point}, "killed at "+point)
		err = kill()
		end("replaced")
		return err
	},
}
