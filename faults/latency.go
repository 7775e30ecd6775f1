package faults

import (
	"context"
	"image/color"
	"math/rand"
	"time"

	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/internal/options"
)

// latency slows some clients' links in both directions.
var latency = Fault{
	Name:            "latency",
	CutsClientLinks: true,
	Drawing:         history.Drawing{Colour: color.NRGBA{R: 125, G: 205, B: 185, A: 80}, Legend: "clients' links slowed"},
	Summary:         "add TTL/20-TTL/8 of latency each way on some clients' links for 1-2 TTLs",
	Options: []options.Spec{
		{Name: optDelay, Kind: options.Duration, Summary: "the delay each way (default TTL/20-TTL/8)"},
		forOpt("1-2 TTLs"),
		clientsOpt,
	},
	Run: func(ctx context.Context, env *Env, rng *rand.Rand, opts options.Values) error {
		slots := pickClients(opts, rng, env.NumClients)
		delay := pinnedDuration(opts, optDelay, func() time.Duration { return between(rng, env.TTL/20, env.TTL/8) })
		hold := hold(opts, rng, env.TTL, 2*env.TTL)
		slow := func(l *Link) error { return l.Delay(delay) }
		return linksFor(ctx, env, history.Facts{Clients: slots}, delay.String()+" each way", linksOf(env, slots), hold, slow)
	},
}
