package faults

import (
	"context"
	"math/rand"
)

// latency slows some clients' links in both directions.
var latency = Fault{
	Name:    "latency",
	Summary: "add TTL/20-TTL/8 of latency each way on some clients' links for 1-2 TTLs",
	Run: func(ctx context.Context, env *Env, rng *rand.Rand) error {
		slots := someClients(rng, env.NumClients)
		delay := between(rng, env.TTL/20, env.TTL/8)
		hold := between(rng, env.TTL, 2*env.TTL)
		slow := func(l *Link) error { return l.Delay(delay) }
		return linksFor(ctx, env, "latency", clientTarget(slots), delay.String()+" each way", linksOf(env, slots), hold, slow)
	},
}
