package locks

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// wait is cad plus WAIT 1 after a grant: the client uses the lock only once
// at least one replica acknowledged the key, so that a failover is less
// likely to promote a replica that never saw it. WAIT narrows the window;
// it does not close it (the acknowledging replica need not be the one
// promoted, and the grant happened on the primary all the same).
var wait = Recipe{
	Name:       "wait",
	Topologies: []string{"sentinel"}, // WAIT needs replicas to wait for
	Summary:    "cad plus WAIT 1 after acquiring; a grant no replica acknowledged is released unused",
	New:        func(c Config) Locker { return &waitLock{c} },
}

// ErrUnreplicated is returned with a valid lease: the grant happened, but no
// replica acknowledged it in time, so the client must not use it and should
// release it at once.
var ErrUnreplicated = errors.New("no replica acknowledged the grant")

type waitLock struct{ Config }

// replicaWait bounds WAIT; the command itself must fit in the op timeout.
func (l *waitLock) replicaWait() time.Duration {
	return min(100*time.Millisecond, l.OpTimeout/2)
}

func (l *waitLock) Acquire(ctx context.Context, key, token string, ttl time.Duration) (Lease, error) {
	lease, err := setNXPX(ctx, l.Config, key, token, ttl)
	if err != nil {
		return lease, err
	}
	acks, err := command(ctx, l.OpTimeout, func(ctx context.Context) (int64, error) {
		return l.Client.Wait(ctx, 1, l.replicaWait()).Result()
	})
	if err != nil {
		return lease, fmt.Errorf("%w: WAIT: %v", ErrUnreplicated, err)
	}
	if acks < 1 {
		return lease, fmt.Errorf("%w: WAIT 1 %d returned %d", ErrUnreplicated, l.replicaWait().Milliseconds(), acks)
	}
	return lease, nil
}

func (l *waitLock) Release(ctx context.Context, lease Lease) error {
	return compareDelete(ctx, l.Config, lease)
}

func (l *waitLock) Close() {}
