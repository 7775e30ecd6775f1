package faults

import (
	"context"
	"image/color"
	"math/rand"
	"time"

	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/internal/options"
)

// partitionHolder cuts the lock's holder off from every node and sentinel
// a third into its hold, while its link to the protected resource stays
// up: the lock is lost while the work goes on, as when a watchdog cannot
// renew or a client keeps working after its library said the lock is gone.
// The links refuse connections rather than drop packets, so a renewal or
// release sent after the cut fails at once and certainly (it was never
// sent) and the lease's end stays known, which the checker then holds each
// later write against; one in flight at the cut stays of unknown outcome.
var partitionHolder = Fault{
	Name:            "partition-holder",
	CutsClientLinks: true,
	Drawing:         history.Drawing{Colour: color.NRGBA{R: 45, G: 145, B: 120, A: 70}, Legend: "holder cut from the lock"},
	Scored:          []Scorecard{ScoreLongHold},
	Waits:           true,
	Summary:         "a third into a hold, refuse the holder's links to the lock's nodes for 1.5-3 TTLs; its database link stays up",
	Options:         []options.Spec{forOpt("1.5-3 TTLs")},
	Run: func(ctx context.Context, env *Env, rng *rand.Rand, opts options.Values) error {
		hold := hold(opts, rng, scale(env.TTL, 1.5), 3*env.TTL)
		slot, after := awaitIntoHold(ctx, env, env.Hold/3)
		if slot < 0 || ctx.Err() != nil {
			return nil
		}
		refuse := func(l *Link) error { l.Refuse(); return nil }
		return linksFor(ctx, env, history.Facts{Clients: []int{slot}, After: after}, afterWords(after, "")+"; its links to the lock's nodes refused, its database link kept",
			env.ClientLinks(slot), hold, refuse)
	},
}

// awaitIntoHold waits (at most 3 TTLs) for a holder that has held the lock
// for into, the one of now if it has not held it longer, else the next,
// and returns its slot (-1 if none came) and its grant. A replay hands
// the grant over through ctx, already that long into its hold.
func awaitIntoHold(ctx context.Context, env *Env, into time.Duration) (int, *history.AfterGrant) {
	if slot, held, ok := grantWaited(ctx); ok {
		return slot, afterGrant(slot, held)
	}
	wctx, cancel := context.WithTimeout(ctx, 3*env.TTL)
	defer cancel()
	slot, held, err := env.Clients.AwaitHolder(wctx)
	if err == nil && held > into {
		slot, err = env.Clients.AwaitGrant(wctx)
		held = 0
	}
	if err != nil {
		return -1, nil
	}
	sleep(ctx, into-held)
	return slot, afterGrant(slot, into)
}
