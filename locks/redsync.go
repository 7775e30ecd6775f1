package locks

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"

	"github.com/lockharness/lockharness/internal/options"

	"github.com/lockharness/lockharness/access"
)

// redsyncRecipe is github.com/go-redsync/redsync/v4, the most used Go
// Redlock, through its own API and defaults: one goredis/v9 pool per node
// (one pool on a single node), quorum N/2+1, drift factor 0.01, a per-try
// timeout of 5% of the TTL, and 32 tries 50-250 ms apart. The tries stay the
// library's unless an option says otherwise: a caller of LockContext waits
// up to several seconds, possibly outlasting a holder's TTL, and that is
// what redsync's users get. The mutex's value is the harness's token
// (WithGenValueFunc), so that the keys on the servers carry it.
var redsyncRecipe = Recipe{
	Name:    "redsync",
	Extends: true,
	Library: "github.com/go-redsync/redsync/v4",
	Summary: "go-redsync/redsync v4 Redlock (library defaults: 32 tries, drift 1%); Extend via locks.Extender",
	Needs:   []access.Capability{access.Independent},
	Prefers: []access.Capability{access.Majorities},
	Options: []options.Spec{
		{Name: "setnx-on-extend", Summary: "WithSetNXOnExtend: Extend re-creates keys that have expired (SET NX) instead of failing"},
		{Name: "tries", Kind: options.Int, Summary: "WithTries(N): acquire attempts (library default 32; 1 = TryLock-like, no waiting)"},
	},
	New: func(c Config) Locker {
		return newRedsync(c, redsyncSettings{tries: c.Options.Int("tries", redsyncDefaultTries), setNXOnExtend: c.Options.Flag("setnx-on-extend")})
	},
}

// redsyncDefaultTries is the library's own default (NewMutex sets 32).
const redsyncDefaultTries = 32

type redsyncSettings struct {
	tries         int
	setNXOnExtend bool
}

type redsyncLock struct {
	Config
	s      redsyncSettings
	rs     *redsync.Redsync
	nodes  int
	quorum int
}

func newRedsync(c Config, s redsyncSettings) *redsyncLock {
	nodes := c.Nodes
	if one, ok := c.Client.(*redis.Client); ok && len(nodes) == 0 {
		nodes = append(nodes, one)
	}
	var pools []redsyncredis.Pool
	for _, n := range nodes {
		pools = append(pools, goredis.NewPool(n))
	}
	return &redsyncLock{Config: c, s: s, rs: redsync.New(pools...), nodes: len(pools), quorum: len(pools)/2 + 1}
}

// mutex is a redsync mutex for the lease: the library's value is our token.
func (l *redsyncLock) mutex(key, token string, ttl time.Duration) *redsync.Mutex {
	opts := []redsync.Option{
		redsync.WithExpiry(ttl),
		redsync.WithTries(l.s.tries),
		redsync.WithGenValueFunc(func() (string, error) { return token, nil }),
		redsync.WithValue(token),
	}
	if l.s.setNXOnExtend {
		opts = append(opts, redsync.WithSetNXOnExtend())
	}
	return l.rs.NewMutex(key, opts...)
}

// Acquire is LockContext. Lease.Valid is the library's Until(), counted
// from the start of the acquire: what redsync tells its caller.
func (l *redsyncLock) Acquire(ctx context.Context, key, token string, ttl time.Duration) (Lease, error) {
	start := time.Now()
	m := l.mutex(key, token, ttl)
	err := m.LockContext(ctx)
	if err == nil {
		return Lease{Key: key, Token: m.Value(), Valid: m.Until().Sub(start)}, nil
	}
	v := classifyRedsync(err)
	switch {
	case v.takenQuorum && l.nodes == 1 && l.s.tries == 1:
		// One node, one SET NX, refused: the key was there. With more
		// tries the key may be a leftover of this very call's earlier try
		// (a SET that landed after its timeout), with more nodes leftovers
		// of failed attempts: no live lease need exist, so no "busy".
		return Lease{}, fmt.Errorf("%w (redsync: %v)", ErrBusy, err)
	case v.unknown > 0 && !v.takenQuorum:
		// A SET NX timed out: it may have landed (and redsync's cleanup may
		// not have). Keep the error opaque, so that it reads as info.
		return Lease{}, fmt.Errorf("redsync: outcome unknown: %v", err)
	}
	return Lease{}, fmt.Errorf("%w (redsync: %v)", ErrNoQuorum, err)
}

// Release is UnlockContext. "Not held" when a quorum of nodes said the key
// was absent or someone else's.
func (l *redsyncLock) Release(ctx context.Context, lease Lease) error {
	m := l.mutex(lease.Key, lease.Token, 0)
	ok, err := command(ctx, l.OpTimeout, func(ctx context.Context) (bool, error) { return m.UnlockContext(ctx) })
	if ok {
		return nil
	}
	return l.refusal(err)
}

// Extend is ExtendContext on a mutex carrying the lease's token and the
// new TTL: the library's own touch script, or with setnx-on-extend its
// SET NX fallback. An ok extend is the library telling its caller that it
// holds the lock for the returned validity.
func (l *redsyncLock) Extend(ctx context.Context, lease Lease, ttl time.Duration) (Lease, error) {
	start := time.Now()
	m := l.mutex(lease.Key, lease.Token, ttl)
	ok, err := command(ctx, l.OpTimeout, func(ctx context.Context) (bool, error) { return m.ExtendContext(ctx) })
	if ok {
		return Lease{Key: lease.Key, Token: lease.Token, Fence: lease.Fence, Valid: m.Until().Sub(start)}, nil
	}
	if errors.Is(err, redsync.ErrExtendFailed) {
		// A quorum did extend the keys, but too late for any validity:
		// the servers changed, the library says failed. Neither "ok" nor
		// a definite failure.
		return Lease{}, fmt.Errorf("redsync: extended on a quorum but past validity: %v", err)
	}
	return Lease{}, l.refusal(err)
}

// refusal maps a failed unlock or extend.
func (l *redsyncLock) refusal(err error) error {
	v := classifyRedsync(err)
	switch {
	case v.takenQuorum || v.absent+v.foreign >= l.quorum:
		return fmt.Errorf("%w (redsync: %v)", ErrNotHeld, err)
	case v.unknown > 0:
		return fmt.Errorf("redsync: outcome unknown: %v", err)
	}
	return fmt.Errorf("%w (redsync: %v)", ErrNoQuorum, err)
}

func (l *redsyncLock) Close() {}

// redsyncVerdict counts what the nodes answered, from redsync's joined
// per-node errors.
type redsyncVerdict struct {
	takenQuorum bool // ErrTaken: a quorum of nodes answered "taken"
	foreign     int  // ErrNodeTaken: the key is someone else's (for touch: not ours)
	absent      int  // ErrLockAlreadyExpired: no key to unlock
	rejected    int  // definite errors from a node (READONLY, refused...)
	unknown     int  // timeouts, broken connections: may have run
}

func classifyRedsync(err error) redsyncVerdict {
	var v redsyncVerdict
	var walk func(error)
	walk = func(e error) {
		if e == nil {
			return
		}
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				walk(e)
			}
			return
		}
		var taken *redsync.ErrTaken
		var nodeTaken *redsync.ErrNodeTaken
		var redisErr *redsync.RedisError
		switch {
		case errors.As(e, &taken):
			v.takenQuorum = true
			v.foreign += len(taken.Nodes)
		case errors.As(e, &nodeTaken):
			v.foreign++
		case errors.Is(e, redsync.ErrLockAlreadyExpired):
			v.absent++
		case errors.As(e, &redisErr):
			if Definite(redisErr.Err) {
				v.rejected++
			} else {
				v.unknown++
			}
		case errors.Is(e, redsync.ErrFailed), errors.Is(e, redsync.ErrExtendFailed):
		default:
			v.unknown++
		}
	}
	walk(err)
	return v
}
