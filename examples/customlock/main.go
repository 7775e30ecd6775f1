// Command customlock is a complete lockharness binary that also knows one
// lock of its own: "ourlock", the kind of small lock a service writes for
// itself (SET NX PX to take it, a compare-and-delete script to give it up).
// It shows the Go API: a Recipe, harness.Main, nothing forked.
//
//	go build -o customlock-harness . && ./customlock-harness run --lock ourlock --nemesis pause-client
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockharness/lockharness/access"
	"github.com/lockharness/lockharness/harness"
	"github.com/lockharness/lockharness/locks"
)

// ourLock says what it needs of a topology, never which topologies: one
// primary per key that every client writes to (it touches one key, so a
// cluster's key routing serves too). It runs wherever that is offered.
var ourLock = locks.Recipe{
	Name:    "ourlock",
	Summary: "our service's own lock: SET NX PX, compare-and-delete release",
	Needs:   []access.Capability{access.Primary},
	New:     func(c locks.Config) locks.Locker { return &lock{c: c} },
}

type lock struct{ c locks.Config }

// release deletes the key only while it still holds our token.
var release = redis.NewScript(`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) end return 0`)

func (l *lock) Acquire(ctx context.Context, key, token string, ttl time.Duration) (locks.Lease, error) {
	ctx, cancel := context.WithTimeout(ctx, l.c.OpTimeout)
	defer cancel()
	start := time.Now()
	ok, err := l.c.Client.SetNX(ctx, key, token, ttl).Result()
	switch {
	case err != nil:
		return locks.Lease{}, err // a timeout is an unknown outcome; a server error is definite
	case !ok:
		return locks.Lease{}, fmt.Errorf("%w: %s is taken", locks.ErrBusy, key)
	}
	return locks.Lease{Key: key, Token: token, Valid: ttl - time.Since(start)}, nil
}

func (l *lock) Release(ctx context.Context, lease locks.Lease) error {
	ctx, cancel := context.WithTimeout(ctx, l.c.OpTimeout)
	defer cancel()
	n, err := release.Run(ctx, l.c.Client, []string{lease.Key}, lease.Token).Int()
	if err != nil {
		return err
	}
	if n == 0 {
		return errors.Join(locks.ErrNotHeld, fmt.Errorf("%s no longer holds token %s", lease.Key, lease.Token))
	}
	return nil
}

func (l *lock) Close() {}

func main() {
	os.Exit(harness.Main(os.Args[1:], ourLock))
}
