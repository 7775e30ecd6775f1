package runner

import (
	"context"
	"runtime"
	"sync"
)

// DefaultParallel is how many runs go at once unless asked otherwise: one
// per core and one more. A run mostly waits (on TTLs, holds, failovers):
// the quick suite's runs took a quarter of two cores two at a time.
func DefaultParallel() int { return max(1, runtime.NumCPU()+1) }

// Lanes calls do(order[k]) for k in [0, n) (order nil: do(k)) on up to
// parallel goroutines as lanes free up, and returns when every call has
// returned. A cancelled ctx starts no further call.
func Lanes(ctx context.Context, n, parallel int, order []int, do func(i int)) {
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
	for k := 0; k < n && ctx.Err() == nil; k++ {
		i := k
		if order != nil {
			i = order[k]
		}
		select {
		case next <- i:
		case <-ctx.Done():
		}
	}
	close(next)
	wg.Wait()
}
