package locks

import (
	"context"
	"time"

	"github.com/lockharness/lockharness/access"
)

// naive is the oldest recipe: SETNX, then EXPIRE in a second command, and a
// plain DEL to release. A client that dies between the two leaves a lock
// that never expires.
var naive = Recipe{
	Name:    "naive",
	Needs:   []access.Capability{access.Primary},
	Summary: "SETNX then PEXPIRE (two commands); release with DEL",
	Points:  []string{PointAfterSetNX},
	New:     func(c Config) Locker { return &naiveLock{c} },
}

type naiveLock struct{ Config }

func (l *naiveLock) Acquire(ctx context.Context, key, token string, ttl time.Duration) (Lease, error) {
	ok, err := command(ctx, l.OpTimeout, func(ctx context.Context) (bool, error) {
		return l.Client.SetNX(ctx, key, token, 0).Result()
	})
	if err != nil {
		return Lease{}, err
	}
	if !ok {
		return Lease{}, ErrBusy
	}
	l.Pause(PointAfterSetNX)
	if _, err := command(ctx, l.OpTimeout, func(ctx context.Context) (bool, error) {
		return l.Client.PExpire(ctx, key, ttl).Result()
	}); err != nil {
		return Lease{}, err
	}
	return Lease{Key: key, Token: token, Valid: ttl}, nil
}

func (l *naiveLock) Release(ctx context.Context, lease Lease) error {
	return plainDelete(ctx, l.Config, lease)
}

func (l *naiveLock) Close() {}

// plainDelete releases with DEL, whoever holds the key now.
func plainDelete(ctx context.Context, c Config, lease Lease) error {
	n, err := command(ctx, c.OpTimeout, func(ctx context.Context) (int64, error) {
		return c.Client.Del(ctx, lease.Key).Result()
	})
	if err != nil {
		return err
	}
	if n == 0 {
		return ErrNotHeld
	}
	return nil
}
