package faults

import (
	"context"
	"math/rand"
	"time"
)

// Schedule runs faults one after another until ctx ends: a seeded gap, then
// a fault chosen by the seeded generator, held for a seeded duration. The
// same seed gives the same sequence of choices; the history records when
// each fault actually started and ended.
type Schedule struct {
	Faults []Fault
	Seed   int64
	// Gap bounds the quiet time before each fault.
	MinGap, MaxGap time.Duration
}

// Run injects faults until ctx ends and returns the first error a fault
// reported. Every fault heals before Run returns.
func (s Schedule) Run(ctx context.Context, env *Env) error {
	if len(s.Faults) == 0 {
		<-ctx.Done()
		return nil
	}
	rng := rand.New(rand.NewSource(s.Seed))
	for {
		if !sleep(ctx, between(rng, s.MinGap, s.MaxGap)) {
			return nil
		}
		f := s.Faults[rng.Intn(len(s.Faults))]
		// Each fault gets its own generator so that what it draws does not
		// shift the schedule's later choices.
		if err := f.Run(ctx, env, rand.New(rand.NewSource(rng.Int63()))); err != nil && ctx.Err() == nil {
			return err
		}
		if ctx.Err() != nil {
			return nil
		}
	}
}
