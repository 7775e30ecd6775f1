package faults

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"sync"
	"time"

	"github.com/lockharness/lockharness/history"
)

// Schedule runs faults one after another until ctx ends: a seeded gap, then
// a fault chosen by the seeded generator, held for a seeded duration. The
// same seed gives the same sequence of choices; the history records when
// each fault actually started and ended. After each fault it checks that
// everything healed (Env.Healed). Given Steps, it follows them instead.
type Schedule struct {
	Groups Nemesis
	Seed   int64
	// Gap bounds the quiet time before each fault.
	MinGap, MaxGap time.Duration
	// Steps, when there are any, are the schedule to follow: each fault
	// at its own time from Start, overlapping where their times overlap.
	Steps []Step
	// Start is when the schedule's times count from: when the clients
	// started, so that their first grants come after it (zero: when Run
	// is called).
	Start time.Time
}

// Step is one fault of a schedule that is followed rather than drawn (a
// replay's, a shrunk scenario's): the fault with its options, those it
// drew before pinned, and when it starts.
type Step struct {
	Injection Injection
	// At is when the fault starts, from the start of the schedule; with
	// AfterGrant, when the grant it waited for came.
	At time.Duration
	// AfterGrant: the fault began Delay after a grant. The step waits for
	// the first grant from a little before At, then Delay, and the fault
	// takes that grant for the one it waits for.
	AfterGrant bool
	// AfterPromotion: the fault began Delay after a promotion (one
	// another fault of the schedule caused, or the topology's own). The
	// step waits for the first promotion from At, then Delay.
	AfterPromotion bool
	Delay          time.Duration
}

// String is the step as `harness replay` prints it.
func (st Step) String() string {
	if st.AfterGrant {
		return fmt.Sprintf("%s %v after a grant at %.3fs", st.Injection, st.Delay, st.At.Seconds())
	}
	if st.AfterPromotion {
		return fmt.Sprintf("%s %v after a promotion at %.3fs", st.Injection, st.Delay, st.At.Seconds())
	}
	return fmt.Sprintf("%s at %.3fs", st.Injection, st.At.Seconds())
}

// lead is how long before its time a step that waits for a moment of the
// workload starts waiting: the same moment comes a little earlier or later
// in another run.
func lead(ttl time.Duration) time.Duration { return min(ttl/4, 250*time.Millisecond) }

// Run injects faults until ctx ends and returns the first error a fault
// reported. Every fault heals before Run returns.
func (s Schedule) Run(ctx context.Context, env *Env) error {
	if len(s.Steps) > 0 {
		return s.follow(ctx, env)
	}
	if len(s.Groups) == 0 {
		<-ctx.Done()
		return nil
	}
	rng := rand.New(rand.NewSource(s.Seed))
	for {
		if !sleep(ctx, between(rng, s.MinGap, s.MaxGap)) {
			return nil
		}
		if end, ok := ctx.Deadline(); ok && time.Until(end) < s.MinGap {
			// A fault started now would be healed by the time limit
			// before its window could show anything: start none.
			<-ctx.Done()
			return nil
		}
		g := s.Groups[rng.Intn(len(s.Groups))]
		err := g.Run(ctx, env, rng)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
		if err := env.Healed(); err != nil {
			return fmt.Errorf("after %s: %w", g, err)
		}
	}
}

// Run injects the group's faults at once and waits for all of them; each
// gets its own generator, drawn from rng, so that what one draws does not
// shift the others' or the schedule's later choices.
func (g Group) Run(ctx context.Context, env *Env, rng *rand.Rand) error {
	errs := make([]error, len(g))
	var wg sync.WaitGroup
	for i, in := range g {
		frng := rand.New(rand.NewSource(rng.Int63()))
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = in.run(ctx, env, frng)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// follow runs every step at its time, each with a generator of its own
// for what is left to draw, and checks that everything healed once all
// are done.
func (s Schedule) follow(ctx context.Context, env *Env) error {
	start := s.Start
	if start.IsZero() {
		start = time.Now()
	}
	errs := make([]error, len(s.Steps))
	var wg sync.WaitGroup
	for i, st := range s.Steps {
		rng := rand.New(rand.NewSource(s.Seed + int64(i)))
		wg.Go(func() { errs[i] = st.run(ctx, env, start, rng) })
	}
	wg.Wait()
	if ctx.Err() != nil {
		return nil
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return env.Healed()
}

func (st Step) run(ctx context.Context, env *Env, start time.Time, rng *rand.Rand) error {
	wake := st.At
	if st.AfterGrant || st.Injection.Waits {
		wake -= lead(env.TTL)
	}
	opens := start.Add(wake)
	if !sleep(ctx, time.Until(opens)) {
		return nil
	}
	if st.AfterGrant {
		// The grant of the holder of now will do if it came after the
		// window opened (the step may start late); otherwise the next.
		wctx, cancel := context.WithTimeout(ctx, 3*env.TTL)
		slot, held, err := env.Clients.AwaitHolder(wctx)
		if err == nil && time.Now().Add(-held).Before(opens) {
			slot, err = env.Clients.AwaitGrant(wctx)
			held = 0
		}
		cancel()
		if ctx.Err() != nil {
			return nil
		}
		if err == nil {
			granted := time.Now().Add(-held)
			if !sleep(ctx, time.Until(granted.Add(st.Delay))) {
				return nil
			}
			ctx = withGrant(ctx, slot, granted)
		}
	}
	if st.AfterPromotion {
		node, promoted, ok := awaitPromotion(ctx, env.Rec, opens)
		if !ok {
			return nil // none came before the time limit: the fault never struck
		}
		if !sleep(ctx, time.Until(promoted.Add(st.Delay))) {
			return nil
		}
		// Its time is the step's own (a replay takes it for At), not
		// when it woke, which is earlier for a fault that waits.
		ctx = withPromotion(ctx, &history.AfterPromotion{Node: node, DelayNs: int64(st.Delay), WaitedNs: int64(env.Rec.Now() - time.Since(start.Add(st.At)))})
	}
	return Group{st.Injection}.Run(ctx, env, rng)
}

// awaitPromotion waits for the first promotion recorded from from on: the
// node promoted and when, false if ctx ended first.
func awaitPromotion(ctx context.Context, rec *history.Recorder, from time.Time) (string, time.Time, bool) {
	type promotion struct {
		node string
		at   time.Time
	}
	came := make(chan promotion, 1)
	stop := rec.Watch(func(e history.Event) {
		if node, ok := e.Facts.Promoted(); ok {
			select {
			case came <- promotion{node, time.Now()}:
			default:
			}
		}
	})
	defer stop()
	// One recorded between the step's waking and the watch counts too.
	events := rec.Events()
	wall := func(t int64) time.Time { return time.Now().Add(time.Duration(t) - rec.Now()) }
	for i := len(events) - 1; i >= 0 && !wall(events[i].Time).Before(from); i-- {
		if node, ok := events[i].Facts.Promoted(); ok {
			return node, wall(events[i].Time), true
		}
	}
	select {
	case p := <-came:
		return p.node, p.at, true
	case <-ctx.Done():
		return "", time.Time{}, false
	}
}

// promotionKey carries the promotion a step waited for to the fault's
// window.
type promotionKey struct{}

func withPromotion(ctx context.Context, p *history.AfterPromotion) context.Context {
	return context.WithValue(ctx, promotionKey{}, p)
}

// promotionWaited is the promotion a followed step waited for, nil if
// none.
func promotionWaited(ctx context.Context) *history.AfterPromotion {
	p, _ := ctx.Value(promotionKey{}).(*history.AfterPromotion)
	return p
}

// grantKey carries a grant a step already waited for to the fault.
type grantKey struct{}

type waitedGrant struct {
	slot int
	at   time.Time
}

func withGrant(ctx context.Context, slot int, at time.Time) context.Context {
	return context.WithValue(ctx, grantKey{}, waitedGrant{slot, at})
}

// grantWaited is the grant a followed step waited for before the fault
// began (the client, and how long ago it was granted): a fault that waits
// for a grant takes it instead of waiting for another.
func grantWaited(ctx context.Context) (slot int, held time.Duration, ok bool) {
	g, ok := ctx.Value(grantKey{}).(waitedGrant)
	return g.slot, time.Since(g.at), ok
}
