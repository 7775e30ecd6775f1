package locks

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockharness/lockharness/access"
	"github.com/lockharness/lockharness/internal/options"
)

// wait is cad plus WAIT 1 after a grant: the client uses the lock only once
// at least one replica acknowledged the key, so that a failover is less
// likely to promote a replica that never saw it. WAIT narrows the window;
// it does not close it (the acknowledging replica need not be the one
// promoted, and the grant happened on the primary all the same). With
// replicas=N the client waits for N acknowledgements: every replica, where
// there are N, so that whichever is promoted has the grant.
var wait = Recipe{
	Name:    "wait",
	Needs:   []access.Capability{access.Primary, access.Replicas}, // WAIT needs replicas to wait for
	Summary: "cad plus WAIT 1 after acquiring; a grant no replica acknowledged is released unused",
	Options: []options.Spec{{Name: "replicas", Kind: options.Int, Summary: "the acknowledgements to wait for (default 1)"}},
	New:     func(c Config) Locker { return &waitLock{c, c.Options.Int("replicas", 1)} },
}

// ErrUnreplicated is returned with a valid lease: the grant happened, but no
// replica acknowledged it in time, so the client must not use it and should
// release it at once.
var ErrUnreplicated = errors.New("no replica acknowledged the grant")

type waitLock struct {
	Config
	// acks is how many replicas must acknowledge a grant.
	acks int
}

// replicaWait bounds WAIT; the command itself must fit in the op timeout.
func (l *waitLock) replicaWait() time.Duration {
	return min(100*time.Millisecond, l.OpTimeout/2)
}

// Acquire sends SET NX PX, then WAIT. WAIT waits for the writes of its own
// connection: one client's two commands in a row reuse its idle
// connection, but a cluster client routes WAIT, which has no key, to no
// particular node, so there the two go in one pipeline on the key's
// primary.
func (l *waitLock) Acquire(ctx context.Context, key, token string, ttl time.Duration) (Lease, error) {
	if _, sharded := l.Client.(*redis.ClusterClient); !sharded {
		lease, err := setNXPX(ctx, l.Config, key, token, ttl)
		if err != nil {
			return lease, err
		}
		acks, err := command(ctx, l.OpTimeout, func(ctx context.Context) (int64, error) {
			return l.Client.Do(ctx, "WAIT", l.acks, l.replicaWait().Milliseconds()).Int64()
		})
		return l.acknowledged(lease, acks, err)
	}
	node, err := primaryFor(ctx, l.Client, key)
	if err != nil {
		// No slot map: nothing was sent.
		return Lease{}, fmt.Errorf("%w: %v", ErrNotSent, err)
	}
	var set *redis.BoolCmd
	var wait *redis.Cmd
	command(ctx, l.OpTimeout, func(ctx context.Context) ([]redis.Cmder, error) {
		return node.Pipelined(ctx, func(p redis.Pipeliner) error {
			set = p.SetNX(ctx, key, token, ttl)
			wait = p.Do(ctx, "WAIT", l.acks, l.replicaWait().Milliseconds())
			return nil
		})
	})
	if err := set.Err(); err != nil {
		reloadSlotsAfter(ctx, l.Client, err)
		return Lease{}, err
	}
	if !set.Val() {
		return Lease{}, ErrBusy
	}
	acks, err := wait.Int64()
	return l.acknowledged(Lease{Key: key, Token: token, Valid: ttl}, acks, err)
}

// acknowledged is the grant's lease, refused (ErrUnreplicated) unless a
// replica acknowledged it.
func (l *waitLock) acknowledged(lease Lease, acks int64, err error) (Lease, error) {
	if err != nil {
		return lease, fmt.Errorf("%w: WAIT: %v", ErrUnreplicated, err)
	}
	if acks < int64(l.acks) {
		return lease, fmt.Errorf("%w: WAIT %d %d returned %d", ErrUnreplicated, l.acks, l.replicaWait().Milliseconds(), acks)
	}
	return lease, nil
}

func (l *waitLock) Release(ctx context.Context, lease Lease) error {
	return compareDelete(ctx, l.Config, lease)
}

func (l *waitLock) Close() {}

// primaryFor is the client of a cluster's node that serves key, its
// shard's primary, as the cluster client's slot map has it.
func primaryFor(ctx context.Context, c redis.UniversalClient, key string) (*redis.Client, error) {
	if cc, ok := c.(*redis.ClusterClient); ok {
		return cc.MasterForKey(ctx, key)
	}
	return nil, fmt.Errorf("no node client for %T", c)
}

// reloadSlotsAfter has a cluster client read the slot map again after a
// node said the key is not its own or its shard has no primary now (a node
// client does not follow MOVED itself).
func reloadSlotsAfter(ctx context.Context, c redis.UniversalClient, err error) {
	if cc, ok := c.(*redis.ClusterClient); ok && (strings.HasPrefix(err.Error(), "MOVED") || strings.HasPrefix(err.Error(), "CLUSTERDOWN")) {
		cc.ReloadState(ctx)
	}
}
