package faults

import (
	"context"
	"fmt"
	"image/color"
	"math/rand"
	"time"

	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/internal/options"
)

// delayWrite holds a holder's write up in the network on its way to the
// database for longer than the TTL: Kleppmann's delayed packet. The lease
// ends while the write is in flight, a newer holder acquires and writes
// first, and then the old write arrives. The holder is stopped for an
// instant at before-write so the delay is in place when its write leaves;
// the delay is lifted once it has passed, so the write arrives late, once.
var delayWrite = Fault{
	Name:          "delay-write",
	Drawing:       history.Drawing{Colour: color.NRGBA{R: 65, G: 195, B: 165, A: 70}, Legend: "database write held up"},
	Waits:         true,
	Summary:       "hold a holder's write to the database up in the network for 1.5-2 TTLs, then heal",
	NeedsDatabase: true,
	StopsClients:  true,
	Options: []options.Spec{
		{Name: optDelay, Kind: options.Duration, Summary: "how long the write is held up (default 1.5-2 TTLs)"},
	},
	Run: func(ctx context.Context, env *Env, rng *rand.Rand, opts options.Values) error {
		delay := pinnedDuration(opts, optDelay, func() time.Duration { return between(rng, scale(env.TTL, 1.5), 2*env.TTL) })
		slot, resume, _, err := env.Freeze(ctx, "before-write")
		if err != nil {
			return nil // the run ended before any client got there
		}
		link := env.DatabaseLink(slot)
		if link == nil {
			resume()
			return fmt.Errorf("delay-write: client %d has no link to the database", slot)
		}
		defer link.Heal()
		if err := link.DelayRequests(delay); err != nil {
			resume()
			return err
		}
		end := env.Begin(history.Facts{Clients: []int{slot}, HoldNs: int64(delay)}, fmt.Sprintf("its write to the database held up %v", delay))
		if err := resume(); err != nil {
			end("the client could not be resumed", history.Facts{Failed: "the client could not be resumed"})
			return err
		}
		// Whatever the client sends first waits the whole delay; the
		// toxic goes once that is through, so the rest of its
		// transaction is not held up again.
		sleep(ctx, delay+50*time.Millisecond)
		link.Heal()
		end("healed")
		return nil
	},
}
