package locks

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/bsm/redislock"

	"github.com/lockharness/lockharness/internal/options"

	"github.com/lockharness/lockharness/access"
)

// redislockRecipe is github.com/bsm/redislock v0.10 on one node, with the
// external watchdog its README recommends: a ticker next to the work that
// calls Lock.Refresh(ttl) every ttl/3 and, on any refresh error, tells the
// work the lock is lost and stops. Obtain takes the harness's token
// (Options.Token, no metadata), so the key's value is the token; retries
// are the library's default (none).
var redislockRecipe = Recipe{
	Name:    "redislock",
	Renews:  true, // the refresh watchdog, unless no-watchdog
	Extends: true,
	Library: "github.com/bsm/redislock",
	Summary: "bsm/redislock v0.10 Obtain/Release with its README's external watchdog (Refresh every ttl/3)",
	Needs:   []access.Capability{access.Primary},
	Options: []options.Spec{
		{Name: "no-watchdog", Summary: "no refresh: Obtain, then Release (the README's basic example)"},
	},
	New: func(c Config) Locker { return newRedislock(c, !c.Options.Flag("no-watchdog")) },
}

type redislockLock struct {
	Config
	client   *redislock.Client
	watchdog bool

	mu   sync.Mutex
	held map[leaseID]*redislockHeld
}

type leaseID struct{ key, token string }

type redislockHeld struct {
	lock *redislock.Lock
	mu   sync.Mutex
	stop func() // stops the watchdog and waits for it; nil without one
}

func newRedislock(c Config, watchdog bool) *redislockLock {
	return &redislockLock{Config: c, client: redislock.New(c.Client), watchdog: watchdog, held: map[leaseID]*redislockHeld{}}
}

// Acquire is Obtain with the token as the lock's token. The library
// believes the lock valid for ttl from the obtain, and from then on for
// as long as its refreshes succeed.
func (l *redislockLock) Acquire(ctx context.Context, key, token string, ttl time.Duration) (Lease, error) {
	lock, err := command(ctx, l.OpTimeout, func(ctx context.Context) (*redislock.Lock, error) {
		return l.client.Obtain(ctx, key, ttl, &redislock.Options{Token: token})
	})
	switch {
	case errors.Is(err, redislock.ErrNotObtained):
		// NoRetry: one obtain script that found the key held by another
		// token. On one node that is busy.
		return Lease{}, fmt.Errorf("%w (%v)", ErrBusy, err)
	case err != nil:
		return Lease{}, err
	}
	lease := Lease{Key: key, Token: lock.Token(), Valid: ttl}
	h := &redislockHeld{lock: lock}
	l.mu.Lock()
	l.held[leaseID{key, lease.Token}] = h
	l.mu.Unlock()
	if l.watchdog {
		l.startWatchdog(h, lease, ttl)
	}
	return lease, nil
}

// Release stops the watchdog (waiting for a refresh in flight), then
// calls Lock.Release.
func (l *redislockLock) Release(ctx context.Context, lease Lease) error {
	h := l.take(lease)
	if h == nil {
		return fmt.Errorf("%w: no redislock lock %s on %s in this client", ErrNotHeld, lease.Token, lease.Key)
	}
	h.stopWatchdog()
	_, err := command(ctx, l.OpTimeout, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, h.lock.Release(ctx)
	})
	if errors.Is(err, redislock.ErrLockNotHeld) {
		return fmt.Errorf("%w (%v)", ErrNotHeld, err)
	}
	return err
}

// Extend is Lock.Refresh(ttl) on the caller's request. The watchdog is
// stopped for it and restarted with the new TTL after a success.
func (l *redislockLock) Extend(ctx context.Context, lease Lease, ttl time.Duration) (Lease, error) {
	l.mu.Lock()
	h := l.held[leaseID{lease.Key, lease.Token}]
	l.mu.Unlock()
	if h == nil {
		return Lease{}, fmt.Errorf("%w: no redislock lock %s on %s in this client", ErrNotHeld, lease.Token, lease.Key)
	}
	h.stopWatchdog()
	_, err := command(ctx, l.OpTimeout, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, h.lock.Refresh(ctx, ttl, nil)
	})
	if err != nil {
		// Like the watchdog, give up after a failed refresh; the caller
		// has the error.
		if errors.Is(err, redislock.ErrNotObtained) {
			err = fmt.Errorf("%w (%v)", ErrNotHeld, err)
		}
		return Lease{}, err
	}
	if l.watchdog {
		l.startWatchdog(h, lease, ttl)
	}
	return Lease{Key: lease.Key, Token: lease.Token, Fence: lease.Fence, Valid: ttl}, nil
}

func (l *redislockLock) Close() {
	l.mu.Lock()
	held := l.held
	l.held = map[leaseID]*redislockHeld{}
	l.mu.Unlock()
	for _, h := range held {
		h.stopWatchdog()
	}
}

func (l *redislockLock) take(lease Lease) *redislockHeld {
	l.mu.Lock()
	defer l.mu.Unlock()
	id := leaseID{lease.Key, lease.Token}
	h := l.held[id]
	delete(l.held, id)
	return h
}

// startWatchdog is the README's watchdog: every ttl/3, Refresh(ttl); on
// an error, cancel the work and return. Each refresh is reported like the
// renew recipe's (F "extend": invoke, then ok, fail or info), and the
// watchdog giving up as F "lost" (the README cancels the work context
// there: the library's user now believes the lock is gone).
func (l *redislockLock) startWatchdog(h *redislockHeld, lease Lease, ttl time.Duration) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	h.mu.Lock()
	h.stop = func() { cancel(); <-done }
	h.mu.Unlock()
	go func() {
		defer close(done)
		t := time.NewTicker(ttl / 3)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			op := Op{F: "extend", Outcome: "invoke", Key: lease.Key, Token: lease.Token, TTL: ttl}
			l.report(op)
			// The refresh in flight completes even when the watchdog is
			// being stopped: its outcome is then known, not cut short.
			_, err := command(context.Background(), l.OpTimeout, func(ctx context.Context) (struct{}, error) {
				return struct{}{}, h.lock.Refresh(ctx, ttl, nil)
			})
			switch {
			case err == nil:
				op.Outcome = "ok"
			case errors.Is(err, redislock.ErrNotObtained):
				op.Outcome, op.Err = "fail", fmt.Errorf("%w (%v)", ErrNotHeld, err)
			case Definite(err):
				op.Outcome, op.Err = "fail", err
			default:
				op.Outcome, op.Err = "info", err
			}
			l.report(op)
			if err != nil {
				l.observeLost(lease, err)
				return
			}
		}
	}()
}

func (h *redislockHeld) stopWatchdog() {
	h.mu.Lock()
	stop := h.stop
	h.stop = nil
	h.mu.Unlock()
	if stop != nil {
		stop()
	}
}
