package locks

import (
	"context"
	"time"

	"github.com/lockharness/lockharness/access"
)

// cad is the recipe the Redis documentation recommends for one node: SET NX
// PX with a token unique to the attempt, released by a Lua
// compare-and-delete so that only the holder can delete its own lock.
var cad = Recipe{
	Name:    "cad",
	Needs:   []access.Capability{access.Primary},
	Summary: "SET NX PX with a unique token; release with Lua compare-and-delete",
	New:     func(c Config) Locker { return &cadLock{c} },
}

type cadLock struct{ Config }

func (l *cadLock) Acquire(ctx context.Context, key, token string, ttl time.Duration) (Lease, error) {
	return setNXPX(ctx, l.Config, key, token, ttl)
}

func (l *cadLock) Release(ctx context.Context, lease Lease) error {
	return compareDelete(ctx, l.Config, lease)
}

func (l *cadLock) Close() {}

func compareDelete(ctx context.Context, c Config, lease Lease) error {
	n, err := command(ctx, c.OpTimeout, func(ctx context.Context) (int64, error) {
		return compareAndDelete.Run(ctx, c.Client, []string{lease.Key}, lease.Token).Int64()
	})
	if err != nil {
		return err
	}
	if n == 0 {
		return ErrNotHeld
	}
	return nil
}
