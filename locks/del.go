package locks

import (
	"context"
	"time"

	"github.com/lockharness/lockharness/access"
)

// del sets the lock atomically with its expiry but releases with a plain
// DEL, so a holder that overran its TTL deletes the next holder's lock.
var del = Recipe{
	Name:    "del",
	Needs:   []access.Capability{access.Primary},
	Summary: "SET NX PX; release with a plain DEL",
	New:     func(c Config) Locker { return &delLock{c} },
}

type delLock struct{ Config }

func (l *delLock) Acquire(ctx context.Context, key, token string, ttl time.Duration) (Lease, error) {
	return setNXPX(ctx, l.Config, key, token, ttl)
}

func (l *delLock) Release(ctx context.Context, lease Lease) error {
	return plainDelete(ctx, l.Config, lease)
}

func (l *delLock) Close() {}

// setNXPX takes the lock with SET key token NX PX ttl.
func setNXPX(ctx context.Context, c Config, key, token string, ttl time.Duration) (Lease, error) {
	ok, err := command(ctx, c.OpTimeout, func(ctx context.Context) (bool, error) {
		return c.Client.SetNX(ctx, key, token, ttl).Result()
	})
	if err != nil {
		return Lease{}, err
	}
	if !ok {
		return Lease{}, ErrBusy
	}
	return Lease{Key: key, Token: token, Valid: ttl}, nil
}
