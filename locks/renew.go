package locks

import (
	"context"
	"sync"
	"time"

	"github.com/lockharness/lockharness/access"
)

// renew is cad plus a watchdog that keeps renewing the lease every ttl/3
// with a Lua compare-and-PEXPIRE while the client holds it, the way
// Redisson-style locks do. A paused process pauses its watchdog too.
var renew = Recipe{
	Name:    "renew",
	Needs:   []access.Capability{access.Primary},
	Renews:  true,
	Summary: "cad plus a watchdog renewing every ttl/3 with Lua compare-and-PEXPIRE",
	New:     func(c Config) Locker { return &renewLock{Config: c} },
}

type renewLock struct {
	Config
	mu   sync.Mutex
	stop func()
}

func (l *renewLock) Acquire(ctx context.Context, key, token string, ttl time.Duration) (Lease, error) {
	lease, err := setNXPX(ctx, l.Config, key, token, ttl)
	if err != nil {
		return lease, err
	}
	l.startWatchdog(lease, ttl)
	return lease, nil
}

func (l *renewLock) Release(ctx context.Context, lease Lease) error {
	l.stopWatchdog()
	return compareDelete(ctx, l.Config, lease)
}

func (l *renewLock) Close() { l.stopWatchdog() }

func (l *renewLock) startWatchdog(lease Lease, ttl time.Duration) {
	l.stopWatchdog()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	l.mu.Lock()
	l.stop = func() { cancel(); <-done }
	l.mu.Unlock()
	go func() {
		defer close(done)
		tick := time.NewTicker(ttl / 3)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			if !l.renewOnce(lease, ttl) {
				return
			}
		}
	}()
}

// renewOnce extends the lease and reports whether the watchdog should go on.
func (l *renewLock) renewOnce(lease Lease, ttl time.Duration) bool {
	op := Op{F: "extend", Outcome: "invoke", Key: lease.Key, Token: lease.Token, TTL: ttl}
	l.Observe(op)
	n, err := command(context.Background(), l.OpTimeout, func(ctx context.Context) (int64, error) {
		return compareAndExpire.Run(ctx, l.Client, []string{lease.Key}, lease.Token, ttl.Milliseconds()).Int64()
	})
	switch {
	case err == nil && n == 1:
		op.Outcome = "ok"
	case err == nil:
		op.Outcome, op.Err = "fail", ErrNotHeld
	case Definite(err):
		op.Outcome, op.Err = "fail", err
	default:
		op.Outcome, op.Err = "info", err
	}
	l.Observe(op)
	// Like real watchdogs, keep trying after a timeout; stop once the
	// server says the lease is gone.
	return op.Outcome != "fail"
}

// stopWatchdog stops the watchdog and waits for a renewal in flight, so that
// nothing renews after the client starts releasing.
func (l *renewLock) stopWatchdog() {
	l.mu.Lock()
	stop := l.stop
	l.stop = nil
	l.mu.Unlock()
	if stop != nil {
		stop()
	}
}
