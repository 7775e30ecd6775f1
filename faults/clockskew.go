package faults

import (
	"context"
	"fmt"
	"image/color"
	"math/rand"
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
		return clockWindow{
			fault: "clock-skew", lo: 2 * env.TTL, hi: 4 * env.TTL,
			set: func(n cluster.Node) (func() error, error) {
				return func() error { return shiftClock("clock-skew", n, -by) }, shiftClock("clock-skew", n, by)
			},
			move: history.ClockMove{ByNs: int64(by)},
			started: func(nodes, how string) string {
				return fmt.Sprintf("%s's clock %s %s", nodes, history.Signed(by), how)
			},
			ended: func(_ cluster.Node, prev time.Duration, _ time.Time) string {
				return "back to " + history.Signed(prev)
			},
		}.run(ctx, env, rng, opts)
	},
}
