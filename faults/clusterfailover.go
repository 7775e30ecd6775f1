package faults

import (
	"context"
	"image/color"
	"math/rand"

	"github.com/lockharness/lockharness/cluster"
	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/internal/options"
)

const optMode = "mode"

// clusterFailover asks a replica of the lock key's shard to take over, as
// an operator does before maintenance (plain), or when the primary is gone
// (force: no handshake with it; takeover: not even an election).
var clusterFailover = Fault{
	Name:    "cluster-failover",
	Drawing: history.Drawing{Colour: color.NRGBA{R: 75, G: 225, B: 220, A: 80}, Legend: "replica took over"},
	Scored:  []Scorecard{ScoreCluster},
	Summary: "CLUSTER FAILOVER on a replica of the lock's shard (mode plain, force or takeover), then wait for it to take over",
	Needs:   []cluster.Capability{cluster.Failover, cluster.Slots},
	Options: []options.Spec{{Name: optMode, Kind: options.Choice, Choices: cluster.FailoverModes,
		Summary: "plain: the primary hands over, no write lost; force: without the primary; takeover: without an election (default plain)"}},
	Run: func(ctx context.Context, env *Env, rng *rand.Rand, opts options.Values) error {
		p, err := primary(ctx, env)
		if err != nil {
			return err
		}
		mode := opts.Get(optMode, cluster.FailoverPlain)
		return askFailover(ctx, env, p, mode, "CLUSTER FAILOVER "+mode+" on a replica")
	},
}
