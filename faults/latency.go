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
		links := linksOf(env, slots)
		defer func() {
			for _, l := range links {
				l.Heal()
			}
		}()
		for _, l := range links {
			if err := l.Delay(delay); err != nil {
				return err
			}
		}
		end := env.Begin("latency", clientTarget(slots), delay.String()+" each way for "+hold.String())
		sleep(ctx, hold)
		for _, l := range links {
			l.Heal()
		}
		end("healed")
		return nil
	},
}
