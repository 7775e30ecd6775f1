package scenario

import (
	"context"
	"runtime"
	"sync"
)

// DefaultParallel is how many runs go at once unless asked otherwise: one
// per core. A run mostly waits (on TTLs, holds, failovers), so a core
// carries one without slowing its timing.
func DefaultParallel() int { return max(1, runtime.NumCPU()) }

// Lanes calls do(i) for i in [0, n) on up to parallel goroutines, in
// order of i as lanes free up, and returns when every call has returned.
// A cancelled ctx starts no further call.
func Lanes(ctx context.Context, n, parallel int, do func(i int)) {
	parallel = max(1, min(parallel, n))
	next := make(chan int)
	var wg sync.WaitGroup
	for range parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				do(i)
			}
		}()
	}
	for i := 0; i < n && ctx.Err() == nil; i++ {
		select {
		case next <- i:
		case <-ctx.Done():
		}
	}
	close(next)
	wg.Wait()
}
