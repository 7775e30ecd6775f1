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

// clockDrift makes nodes' clocks run fast or slow, as a VM's clock does
// between syncs: a lease written on a node whose clock runs fast by r
// expires there after TTL/(1+r) of real time. Redlock allows for it with
// its drift factor (validity = TTL - elapsed - (1% of TTL + 2 ms)); a rate
// past what that covers lets a node forget a lease its holder still
// counts on. At the end the rate it replaced comes back and what it gained
// is taken off, so a shift another fault made meanwhile stays.
var clockDrift = Fault{
	Name:       "clock-drift",
	Drawing:    history.Drawing{Colour: color.NRGBA{R: 150, G: 130, B: 0, A: 70}, Legend: "clock drifting"},
	Needs:      nodeControl,
	NeedsClock: true,
	Summary:    "make a node's clock run fast (default 1-5%) for 4-8 TTLs, or the whole run; then take back what it gained",
	Options: []options.Spec{
		{Name: "rate", Kind: options.Rate, Summary: "how much faster the clock runs (negative: slower; default 1-5% fast)"},
		roleNodeOpt(nodeRandom),
		spanOpt("4-8 TTLs"),
	},
	Run: func(ctx context.Context, env *Env, rng *rand.Rand, opts options.Values) error {
		// Drawn to a tenth of a percent: 1.2%, not 1.2345678%.
		rate := opts.Rate("rate", func() int64 { return (10 + rng.Int63n(41)) * 1_000_000 })
		pin(opts, "rate", options.FormatRate(rate))
		return clockWindow{
			fault: "clock-drift", lo: 4 * env.TTL, hi: 8 * env.TTL,
			set:  func(n cluster.Node) (func() error, error) { return n.DriftClock(rate) },
			move: history.ClockMove{RatePPB: rate},
			started: func(nodes, how string) string {
				return fmt.Sprintf("%s's clock runs %s %s", nodes, history.Rate(rate), how)
			},
			ended: func(first cluster.Node, prev time.Duration, opened time.Time) string {
				gained := first.ClockOffset() - prev
				return fmt.Sprintf("gained %s in %s; taken back", history.Signed(gained.Round(time.Microsecond)), time.Since(opened).Round(time.Millisecond))
			},
		}.run(ctx, env, rng, opts)
	},
}
