package faults

import (
	"context"
	"errors"
	"fmt"
	"image/color"
	"math/rand"
	"strings"
	"time"

	"github.com/lockharness/lockharness/cluster"
	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/internal/options"
)

// Clock faults move a node's wall clock through the clock shim
// (internal/clockshim), which the nodes must have been started with
// (cluster.Spec.Clock). Redis stores a key's expiry as an absolute wall-clock
// time, so a clock moved forward expires leases early, and a clock moved back
// keeps alive the leases written while it was ahead.

// shiftClock moves n's clock by d from wherever it is, explaining a node
// started without the shim. Every clock fault moves by shifts and takes
// its own shifts back, so that two faults overlapping on one node (a
// group, a schedule) never undo each other's move.
func shiftClock(fault string, n cluster.Node, d time.Duration) error {
	if err := n.ShiftClock(d); err != nil {
		return fmt.Errorf("%s: %w (clock faults need the nodes started under the clock shim: cluster.Spec.Clock)", fault, err)
	}
	return nil
}

// clockJump moves a node's clock forward by two TTLs right after a grant, so
// that the lease just taken expires on that node at once and another client
// can take it there while the holder still believes it holds it. Moving the
// clock back afterwards is a fault in its own right: leases written while
// the clock was ahead expire two TTLs late.
var clockJump = Fault{
	Name:       "clock-jump",
	Drawing:    history.Drawing{Colour: color.NRGBA{R: 188, G: 189, B: 34, A: 80}, Legend: "clock jumped"},
	Scored:     []Scorecard{ScoreLibraries},
	Waits:      true,
	Needs:      nodeControl,
	Summary:    "just after a grant, move a node's clock 2 TTLs forward; move it back 1-2 TTLs later",
	NeedsClock: true,
	Options: []options.Spec{
		{Name: optBy, Kind: options.SignedDuration, Summary: "how far the clock jumps (default 2 TTLs; negative jumps back)"},
		nodeOpt(nodeHolder+": the holder's node", true),
		forOpt("1-2 TTLs"),
	},
	Run: func(ctx context.Context, env *Env, rng *rand.Rand, opts options.Values) error {
		hold := hold(opts, rng, env.TTL, 2*env.TTL)
		jump := opts.Duration(optBy, func() time.Duration { return 2 * env.TTL })
		holder, err := awaitHolder(ctx, env)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			holder = -1
		}
		after := afterGrant(holder, 0)
		n := chooseNode(env, opts, nodeHolder, someNode(env, rng), holder)
		prev := n.ClockOffset()
		if err := shiftClock("clock-jump", n, jump); err != nil {
			return err
		}
		end := env.Begin(history.Facts{Nodes: []string{n.Name()}, After: after, HoldNs: int64(hold), Clock: &history.ClockMove{ByNs: int64(jump), FromNs: int64(prev)}},
			history.Signed(jump)+"; "+afterWords(after, "no grant seen"))
		sleep(ctx, hold)
		// Move back even when the run is ending: the final checks need true time.
		err = shiftClock("clock-jump", n, -jump)
		end(fmt.Sprintf("back to %s after %s: a %s jump, leases written meanwhile expire %s late", history.Signed(prev), hold, history.Signed(-jump), jump))
		return err
	},
}

// clockStrobe flips a node's clock between one TTL ahead and true time every
// quarter TTL, so that its leases expire early and late in turn.
var clockStrobe = Fault{
	Name:       "clock-strobe",
	Drawing:    history.Drawing{Colour: color.NRGBA{R: 145, G: 160, B: 85, A: 70}, Legend: "clock flipping"},
	Needs:      nodeControl,
	Summary:    "flip a node's clock between +1 TTL and +0 every TTL/4 for 1-2 TTLs",
	NeedsClock: true,
	Options: []options.Spec{
		{Name: optBy, Kind: options.SignedDuration, Summary: "how far ahead the clock flips (default 1 TTL)"},
		{Name: "every", Kind: options.Duration, Summary: "how often it flips (default TTL/4)"},
		nodeOpt(nodeRandom, false),
		forOpt("1-2 TTLs"),
	},
	Run: func(ctx context.Context, env *Env, rng *rand.Rand, opts options.Values) error {
		n := chooseNode(env, opts, nodeRandom, someNode(env, rng), -1)
		dur := hold(opts, rng, env.TTL, 2*env.TTL)
		by := opts.Duration(optBy, func() time.Duration { return env.TTL })
		period := max(opts.Duration("every", func() time.Duration { return env.TTL / 4 }), time.Millisecond)
		prev := n.ClockOffset()
		if err := shiftClock("clock-strobe", n, by); err != nil {
			return err
		}
		end := env.Begin(history.Facts{Nodes: []string{n.Name()}, HoldNs: int64(dur), Clock: &history.ClockMove{ByNs: int64(by), FromNs: int64(prev), EveryNs: int64(period)}},
			fmt.Sprintf("between %s and %s every %s for %s", history.Signed(prev+by), history.Signed(prev), period, dur))
		deadline := time.Now().Add(dur)
		ahead, jumps := true, 1
		var err error
		for err == nil {
			left := time.Until(deadline)
			if left <= 0 || !sleep(ctx, min(period, left)) || time.Until(deadline) <= 0 {
				break
			}
			ahead = !ahead
			step := -by
			if ahead {
				step = by
			}
			err = shiftClock("clock-strobe", n, step)
			jumps++
		}
		var herr error
		if ahead {
			jumps++ // the way back
			herr = shiftClock("clock-strobe", n, -by)
		}
		end(fmt.Sprintf("%d jumps; back to %s", jumps, history.Signed(prev)))
		return errors.Join(err, herr)
	},
}

// roleNodes are the nodes a fault with a roleNodeOpt hits: the key's
// primary, one of its replicas (drawn, then pinned by name), all of them,
// the holder's node (holder ≥ 0), one drawn, or one named. A role is
// looked up when the fault strikes, so a replay after a failover hits the
// node in that role then.
func roleNodes(ctx context.Context, env *Env, rng *rand.Rand, opts options.Values, def string, holder int) ([]cluster.Node, error) {
	drawn := someNode(env, rng)
	switch choice := opts.Get(optNode, def); choice {
	case nodePrimary:
		p, err := primary(ctx, env)
		if err != nil {
			return nil, err
		}
		return []cluster.Node{p}, nil
	case nodeReplica, nodeReplicas:
		rs, err := env.Cluster.Replicas(ctx, env.Key)
		if err != nil {
			return nil, fmt.Errorf("finding the replicas: %w", err)
		}
		if len(rs) == 0 {
			return nil, fmt.Errorf("no replica follows the primary of %s now", env.Key)
		}
		if choice == nodeReplica {
			r := rs[rng.Intn(len(rs))]
			pin(opts, optNode, r.Name())
			return []cluster.Node{r}, nil
		}
		return rs, nil
	default:
		return []cluster.Node{chooseNode(env, opts, def, drawn, holder)}, nil
	}
}

// moveClocks moves each node's clock with move, which returns how to take
// that move back, and returns the offsets they had before and a function
// that takes every move back; when one fails, those already moved are
// taken back at once.
func moveClocks(fault string, nodes []cluster.Node, move func(n cluster.Node) (undo func() error, err error)) (prevs []time.Duration, restore func() error, err error) {
	prevs = make([]time.Duration, len(nodes))
	var undos []func() error
	restore = func() error {
		var errs []error
		for _, undo := range undos {
			errs = append(errs, undo())
		}
		return errors.Join(errs...)
	}
	for i, n := range nodes {
		prevs[i] = n.ClockOffset()
		undo, err := move(n)
		if err != nil {
			restore()
			return nil, nil, fmt.Errorf("%s: %w", fault, err)
		}
		undos = append(undos, undo)
	}
	return prevs, restore, nil
}

// nodeNames are the nodes' names.
func nodeNames(nodes []cluster.Node) []string {
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = n.Name()
	}
	return out
}

// clockSpan is a clock fault's for option: a duration (drawn in [lo, hi]
// when not given, and pinned) or the whole run.
func clockSpan(opts options.Values, rng *rand.Rand, lo, hi time.Duration) (time.Duration, bool) {
	d, whole := opts.Span(optFor, func() time.Duration { return between(rng, lo, hi).Round(time.Millisecond) })
	if !whole {
		pin(opts, optFor, d.String())
	}
	return d, whole
}

// spanOpt is the for option of a clock fault that can last the whole run.
func spanOpt(def string) options.Spec {
	return options.Spec{Name: optFor, Kind: options.Span, Summary: "how long the fault holds, or run: until the run ends (default " + def + ")"}
}

// holdSpan waits out a clock fault's span: d, or the whole run.
func holdSpan(ctx context.Context, d time.Duration, whole bool) {
	if whole {
		<-ctx.Done()
		return
	}
	sleep(ctx, d)
}

// awaitRoleHolder waits for a grant when the node option asks for the
// holder's node, and returns the holder's slot (-1 otherwise) and the
// grant as facts.
func awaitRoleHolder(ctx context.Context, env *Env, opts options.Values, def string) (int, *history.AfterGrant) {
	if opts.Get(optNode, def) != nodeHolder {
		return -1, nil
	}
	holder, err := awaitHolder(ctx, env)
	if err != nil || ctx.Err() != nil {
		return -1, nil
	}
	return holder, afterGrant(holder, 0)
}

// clockWindow is what a skew and a drift share: the nodes the node option
// names have their clocks moved for a span (or the rest of the run), the
// window recorded, and the clocks put back where they stood.
type clockWindow struct {
	fault string
	// lo and hi bound a span drawn when the for option is not given.
	lo, hi time.Duration
	// set moves one node's clock and says how to take the move back; move
	// is the window's facts.
	set  func(n cluster.Node) (undo func() error, err error)
	move history.ClockMove
	// started says what the window does, given its nodes and how long;
	// ended what it did, given the first node's offset before and when
	// the window opened.
	started func(nodes, how string) string
	ended   func(first cluster.Node, prev time.Duration, opened time.Time) string
}

func (w clockWindow) run(ctx context.Context, env *Env, rng *rand.Rand, opts options.Values) error {
	span, whole := clockSpan(opts, rng, w.lo, w.hi)
	holder, after := awaitRoleHolder(ctx, env, opts, nodeRandom)
	if ctx.Err() != nil {
		return nil
	}
	nodes, err := roleNodes(ctx, env, rng, opts, nodeRandom, holder)
	if err != nil {
		return err
	}
	prevs, restore, err := moveClocks(w.fault, nodes, w.set)
	if err != nil {
		return err
	}
	move := w.move
	move.FromNs = int64(prevs[0])
	facts := history.Facts{Nodes: nodeNames(nodes), After: after, Clock: &move}
	how := "for " + span.String()
	if whole {
		how = "for the rest of the run"
	} else {
		facts.HoldNs = int64(span)
	}
	opened := time.Now()
	end := env.Begin(facts, w.started(strings.Join(facts.Nodes, ", "), how))
	holdSpan(ctx, span, whole)
	ended := w.ended(nodes[0], prevs[0], opened)
	// Put back even when the run is ending: the final checks need true time.
	err = restore()
	end(ended)
	return err
}
