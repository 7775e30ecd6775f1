package locks

import (
	"context"
	"time"
)

// Extender is a Locker that can extend a lease on the caller's request
// (rather than, or besides, a watchdog of its own).
type Extender interface {
	// Extend asks the lock to keep the lease for ttl from now. The returned
	// lease carries the validity the library now believes in, counted from
	// the start of the extend. It returns ErrNotHeld when the servers say
	// the lease is gone or someone else's; nil means the library told its
	// caller the lock is still (or again) held, whatever the servers did.
	Extend(ctx context.Context, l Lease, ttl time.Duration) (Lease, error)
}

// F values of the background operations library recipes report through
// Config.Observe, besides "extend".
const (
	// OpLost is the library telling its caller that the lock is gone (a
	// lock-lost context closing, a watchdog giving up). It is reported as
	// an invoke immediately followed by an ok completion; Err carries the
	// library's reason when it gives one.
	OpLost = "lost"
)

// observeLost reports the library telling its caller that the lock is gone.
func (c Config) observeLost(lease Lease, reason error) {
	op := Op{F: OpLost, Outcome: "invoke", Key: lease.Key, Token: lease.Token}
	c.report(op)
	op.Outcome, op.Err = "ok", reason
	c.report(op)
}

// report passes a background operation to Observe, if the worker set one.
func (c Config) report(op Op) {
	if c.Observe != nil {
		c.Observe(op)
	}
}
