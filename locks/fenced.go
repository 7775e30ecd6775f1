package locks

import (
	"context"
	"time"

	"github.com/lockharness/lockharness/access"
)

// fenced is cad plus a fencing token drawn with INCR in the same Lua script
// as the SET, so the protected resource can refuse writes from an older
// holder.
var fenced = Recipe{
	Name:    "fenced",
	Needs:   []access.Capability{access.Primary},
	Fences:  true,
	Summary: "cad plus a fencing token from INCR in the same Lua acquire script",
	New:     func(c Config) Locker { return &fencedLock{c} },
}

type fencedLock struct{ Config }

func (l *fencedLock) Acquire(ctx context.Context, key, token string, ttl time.Duration) (Lease, error) {
	fence, err := command(ctx, l.OpTimeout, func(ctx context.Context) (int64, error) {
		return setAndFence.Run(ctx, l.Client, []string{key, FenceKey(key)}, token, ttl.Milliseconds()).Int64()
	})
	if err != nil {
		return Lease{}, err
	}
	if fence == 0 {
		return Lease{}, ErrBusy
	}
	return Lease{Key: key, Token: token, Fence: fence, Valid: ttl}, nil
}

func (l *fencedLock) Release(ctx context.Context, lease Lease) error {
	return compareDelete(ctx, l.Config, lease)
}

func (l *fencedLock) Close() {}
