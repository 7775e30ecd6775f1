package faults

import (
	"context"
	"image/color"
	"math/rand"

	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/internal/options"
)

// partition cuts some clients off from every node: their links drop
// everything in both directions, so requests go unanswered (info), until it
// heals.
var partition = Fault{
	Name:            "partition",
	CutsClientLinks: true,
	Drawing:         history.Drawing{Colour: color.NRGBA{R: 23, G: 190, B: 207, A: 70}, Legend: "clients cut off"},
	Scored:          []Scorecard{ScoreLibraries, ScoreCluster, ScoreLongHold},
	Summary:         "blackhole some clients' links in both directions for 1-2 TTLs",
	Options:         []options.Spec{forOpt("1-2 TTLs"), clientsOpt},
	Run: func(ctx context.Context, env *Env, rng *rand.Rand, opts options.Values) error {
		slots := pickClients(opts, rng, env.NumClients)
		hold := hold(opts, rng, env.TTL, 2*env.TTL)
		return blackholeFor(ctx, env, history.Facts{Clients: slots}, "cut from every node", linksOf(env, slots), hold)
	},
}
