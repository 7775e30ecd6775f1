package faults

import (
	"context"
	"fmt"
	"image/color"
	"math/rand"
	"strings"
	"time"

	"github.com/lockharness/lockharness/cluster"
	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/internal/options"
)

// clockSkew sets nodes' clocks a fixed offset from true time, as a bad NTP
// sync leaves a machine: nothing happens at once on a replica, which
// expires no key on its own, but Redis 7 replicates a lease's expiry as an
// absolute time (SET ... PX goes to replicas as PXAT), so a replica whose
// clock is ahead expires the lease early from the moment it is promoted.
var clockSkew = Fault{
	Name:       "clock-skew",
	Drawing:    history.Drawing{Colour: color.NRGBA{R: 235, G: 215, B: 40, A: 70}, Legend: "clock skewed"},
	Needs:      nodeControl,
	NeedsClock: true,
	Summary:    "set a node's clock a fixed offset from true time (default 2 TTLs ahead) for 2-4 TTLs, or the whole run",
	Options: []options.Spec{
		{Name: optBy, Kind: options.SignedDuration, Summary: "the offset (default 2 TTLs; negative: behind)"},
		roleNodeOpt(nodeRandom),
		spanOpt("2-4 TTLs"),
	},
	Run: func(ctx context.Context, env *Env, rng *rand.Rand, opts options.Values) error {
		by := opts.Duration(optBy, func() time.Duration { return 2 * env.TTL })
		span, whole := clockSpan(opts, rng, 2*env.TTL, 4*env.TTL)
		holder, after := awaitRoleHolder(ctx, env, opts, nodeRandom)
		if ctx.Err() != nil {
			return nil
		}
		nodes, err := roleNodes(ctx, env, rng, opts, nodeRandom, holder)
		if err != nil {
			return err
		}
		prevs, restore, err := moveClocks("clock-skew", nodes, func(n cluster.Node, prev time.Duration) error {
			return setClock("clock-skew", n, prev+by)
		})
		if err != nil {
			return err
		}
		facts := history.Facts{Nodes: nodeNames(nodes), After: after, Clock: &history.ClockMove{ByNs: int64(by), FromNs: int64(prevs[0])}}
		how := "for " + span.String()
		if whole {
			how = "for the rest of the run"
		} else {
			facts.HoldNs = int64(span)
		}
		end := env.Begin(facts, fmt.Sprintf("%s's clock %s %s", strings.Join(facts.Nodes, ", "), history.Signed(by), how))
		holdSpan(ctx, span, whole)
		// Put back even when the run is ending: the final checks need true time.
		err = restore()
		end(fmt.Sprintf("back to %s", history.Signed(prevs[0])))
		return err
	},
}
