package faults

import (
	"context"
	"errors"
	"math/rand"
	"sync"
	"time"
)

// Schedule runs faults one after another until ctx ends: a seeded gap, then
// a fault chosen by the seeded generator, held for a seeded duration. The
// same seed gives the same sequence of choices; the history records when
// each fault actually started and ended.
type Schedule struct {
	Groups []Group
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
		// Each fault gets its own generator so that what it draws does not
		// shift the schedule's later choices.
		errs := make([]error, len(g))
		var wg sync.WaitGroup
		for i, f := range g {
			frng := rand.New(rand.NewSource(rng.Int63()))
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = f.Run(ctx, env, frng)
			}()
		}
		wg.Wait()
		if ctx.Err() != nil {
			return nil
		}
		if err := errors.Join(errs...); err != nil {
			return err
		}
	}
}
