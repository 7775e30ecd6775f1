package faults

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"sync"
	"time"
)

// Schedule runs faults one after another until ctx ends: a seeded gap, then
// a fault chosen by the seeded generator, held for a seeded duration. The
// same seed gives the same sequence of choices; the history records when
// each fault actually started and ended. After each fault it checks that
// everything healed (Env.Healed).
type Schedule struct {
	Groups Nemesis
	Seed   int64
	// Gap bounds the quiet time before each fault.
	MinGap, MaxGap time.Duration
}

// Run injects faults until ctx ends and returns the first error a fault
// reported. Every fault heals before Run returns.
func (s Schedule) Run(ctx context.Context, env *Env) error {
	if len(s.Groups) == 0 {
		<-ctx.Done()
		return nil
	}
	rng := rand.New(rand.NewSource(s.Seed))
	for {
		if !sleep(ctx, between(rng, s.MinGap, s.MaxGap)) {
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
