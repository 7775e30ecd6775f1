package locks

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockharness/lockharness/access"
)

// redlock is the algorithm of the Redis distributed-lock page: one random
// token for all N independent nodes, SET NX PX on each with a per-node
// timeout small against the TTL, success on a majority within the
// validity time, and a release on every node after a failed attempt.
var redlock = Recipe{
	Name:    "redlock",
	Summary: "Redlock over N independent nodes: quorum N/2+1, validity = ttl - elapsed - drift",
	Points:  []string{PointAcquireReplies},
	Needs:   []access.Capability{access.Independent, access.Majorities},
	New:     func(c Config) Locker { return &redlockLock{c} },
}

// PointAcquireReplies is after the nodes answered an acquire and before the
// client computes the validity: a pause here is Kleppmann's delayed reply.
const PointAcquireReplies = "acquire-replies"

// ErrNoQuorum: fewer than a majority granted the lock within its validity.
// Its text must not say "busy": the nodes that refused may hold leftovers
// of this or another failed attempt, not a live lease.
var ErrNoQuorum = errors.New("no quorum")

type redlockLock struct{ Config }

// nodeTimeout is small against the TTL, so that a dead or unreachable node
// costs little of the validity (the page suggests 5-50 ms for a 10 s TTL).
func (l *redlockLock) nodeTimeout(ttl time.Duration) time.Duration {
	return min(l.OpTimeout, max(ttl/50, 5*time.Millisecond))
}

// drift is the clock drift the page budgets: 1% of the TTL plus 2 ms.
func drift(ttl time.Duration) time.Duration { return ttl/100 + 2*time.Millisecond }

func (l *redlockLock) Acquire(ctx context.Context, key, token string, ttl time.Duration) (Lease, error) {
	start := time.Now()
	granted, errs := l.onEach(func(c *redis.Client) (bool, error) {
		return command(ctx, l.nodeTimeout(ttl), func(ctx context.Context) (bool, error) {
			return c.SetNX(ctx, key, token, ttl).Result()
		})
	})
	quorum := len(l.Nodes)/2 + 1
	if granted >= quorum {
		// Only a would-be grant is worth freezing here.
		l.Pause(PointAcquireReplies)
	}
	validity := ttl - time.Since(start) - drift(ttl)
	if granted >= quorum && validity > 0 {
		return Lease{Key: key, Token: token, Valid: validity}, nil
	}
	// Unlock everywhere, also where the SET seemed to fail: it may have
	// landed after the timeout.
	l.release(context.Background(), Lease{Key: key, Token: token}, l.nodeTimeout(ttl))
	return Lease{}, fmt.Errorf("%w: %d of %d nodes granted, validity %v (%v)", ErrNoQuorum, granted, len(l.Nodes), validity.Round(time.Millisecond), errors.Join(errs...))
}

// Release deletes the key on every node where it still carries the token.
// It succeeds when any node deleted it, and says "not held" when none did.
func (l *redlockLock) Release(ctx context.Context, lease Lease) error {
	return l.release(ctx, lease, l.OpTimeout)
}

func (l *redlockLock) release(ctx context.Context, lease Lease, timeout time.Duration) error {
	deleted, errs := l.onEach(func(c *redis.Client) (bool, error) {
		n, err := command(ctx, timeout, func(ctx context.Context) (int64, error) {
			return compareAndDelete.Run(ctx, c, []string{lease.Key}, lease.Token).Int64()
		})
		return n == 1, err
	})
	switch {
	case deleted > 0:
		return nil
	case len(errs) == len(l.Nodes):
		return errors.Join(errs...)
	}
	return ErrNotHeld
}

func (l *redlockLock) Close() {}

// onEach runs op on every node at once and counts the successes.
func (l *redlockLock) onEach(op func(*redis.Client) (bool, error)) (int, []error) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	ok := 0
	var errs []error
	for _, c := range l.Nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			yes, err := op(c)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
			} else if yes {
				ok++
			}
		}()
	}
	wg.Wait()
	return ok, errs
}
