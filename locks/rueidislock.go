package locks

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"

	"github.com/lockharness/lockharness/internal/options"
)

// rueidislockRecipe is github.com/redis/rueidis/rueidislock: a lock of
// 2·KeyMajority−1 keys "rueidislock:<i>:<name>" (all on the one server),
// taken with SET NX PXAT, extended by the library itself every
// KeyValidity/2, and watched through client-side caching: the context it
// returns is cancelled the moment the library no longer holds a majority of
// its keys. KeyValidity is the TTL (one rueidis client per TTL, made on
// first use). The rest is its README's example: KeyMajority 1 ("if you have
// only one Redis instance") and NoLoopTracking (Redis >= 7.0.5; the harness
// runs 7.0.15). Without NOLOOP, the holder's own extend script (PEXPIREAT,
// then GET) invalidates its own tracking, and the invalidation triggers the
// next extend: measured here, ~15,000 EVALSHA a second per held lock; the
// option loop-tracking restores that library default. The harness's token
// is not on the servers: the keys hold the library's own random value,
// which its API does not expose.
var rueidislockRecipe = Recipe{
	Name:       "rueidislock",
	Library:    "github.com/redis/rueidis",
	Summary:    "rueidis rueidislock as in its README (KeyMajority 1, NOLOOP): self-extending, lock-lost context via client-side caching",
	Topologies: []string{"single", "sentinel"},
	Options: []options.Spec{
		{Name: "majority", Kind: options.Int, Summary: "KeyMajority N: hold N of 2N-1 keys (library default 2; README: 1 for one instance)"},
		{Name: "loop-tracking", Summary: "NoLoopTracking false (the library's default): each extend re-triggers the next, a busy loop"},
		{Name: "setpx", Summary: "FallbackSETPX: SET NX PX (server-relative) instead of SET NX PXAT (client wall clock)"},
	},
	New: func(c Config) Locker {
		return newRueidislock(c, rueidislockSettings{majority: c.Options.Int("majority", 1),
			noloop: !c.Options.Flag("loop-tracking"), setpx: c.Options.Flag("setpx")})
	},
}

type rueidislockSettings struct {
	majority      int
	noloop, setpx bool
}

type rueidislockLock struct {
	Config
	s rueidislockSettings

	mu      sync.Mutex
	lockers map[time.Duration]rueidislock.Locker
	held    map[leaseID]*rueidisHeld
	closed  bool
}

// rueidisHeld is one lock the library granted: its lock-lost context and
// the cancel that releases it.
type rueidisHeld struct {
	ctx    context.Context
	cancel context.CancelFunc

	mu        sync.Mutex
	releasing bool // the harness released it (or the worker is closing)
	lost      bool // the library said it was lost, and that was reported
}

func newRueidislock(c Config, s rueidislockSettings) *rueidislockLock {
	return &rueidislockLock{Config: c, s: s, lockers: map[time.Duration]rueidislock.Locker{}, held: map[leaseID]*rueidisHeld{}}
}

// locker is the library's locker for the TTL: KeyValidity is fixed when a
// locker is made.
func (l *rueidislockLock) locker(ttl time.Duration) (rueidislock.Locker, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, rueidislock.ErrLockerClosed
	}
	if lk := l.lockers[ttl]; lk != nil {
		return lk, nil
	}
	opts := l.Client.Options()
	dial := opts.Dialer
	lk, err := rueidislock.NewLocker(rueidislock.LockerOption{
		ClientOption: rueidis.ClientOption{
			InitAddress: []string{opts.Addr},
			// Through the worker's own proxies, like its go-redis client.
			DialCtxFn: func(ctx context.Context, dst string, d *net.Dialer, _ *tls.Config) (net.Conn, error) {
				if dial != nil {
					return dial(ctx, "tcp", dst)
				}
				return d.DialContext(ctx, "tcp", dst)
			},
			Dialer:           net.Dialer{Timeout: l.OpTimeout},
			ConnWriteTimeout: l.OpTimeout,
			// The harness's rule for every client under test: no retries
			// (the library's scripts are marked retryable) and one plain
			// connection to the node.
			DisableRetry:      true,
			ForceSingleClient: true,

			// The go-redis client's login; with TLS its dialer (above)
			// makes the handshake (NewClient).
			Username:  opts.Username,
			Password:  opts.Password,
			TLSConfig: opts.TLSConfig,
		},
		KeyValidity:    ttl,
		KeyMajority:    int32(l.s.majority),
		NoLoopTracking: l.s.noloop,
		FallbackSETPX:  l.s.setpx,
	})
	if err != nil {
		return nil, err
	}
	l.lockers[ttl] = lk
	return lk, nil
}

// Acquire is TryWithContext. Lease.Valid is the TTL: the keys' deadline,
// set at the start of the try. From then on the library extends the keys
// itself (not visible as operations) and believes it holds the lock until
// it cancels the returned context, which is reported as an F "lost" op.
func (l *rueidislockLock) Acquire(ctx context.Context, key, token string, ttl time.Duration) (Lease, error) {
	lk, err := l.locker(ttl)
	if err != nil {
		return Lease{}, fmt.Errorf("rueidislock: %w", err)
	}
	lctx, cancel, err := lk.TryWithContext(ctx, key)
	if err != nil {
		if errors.Is(err, rueidislock.ErrNotLocked) {
			if l.s.majority == 1 && strings.Contains(err.Error(), "held by others") {
				// One key, one SET NX (no retries), refused: the key
				// was there.
				return Lease{}, fmt.Errorf("%w (rueidislock: %v)", ErrBusy, err)
			}
			// Several keys: the ones refused may be leftovers of failed
			// attempts, not a live lease.
			return Lease{}, fmt.Errorf("%w (rueidislock: %v)", ErrNoQuorum, err)
		}
		// A timeout (TryNextAfter, 20 ms per key) or a broken connection:
		// the SET may have landed. Opaque, so that it reads as info.
		return Lease{}, fmt.Errorf("rueidislock: outcome unknown: %v", err)
	}
	lease := Lease{Key: key, Token: token, Valid: ttl}
	h := &rueidisHeld{ctx: lctx, cancel: cancel}
	l.mu.Lock()
	l.held[leaseID{key, token}] = h
	l.mu.Unlock()
	go func() {
		<-lctx.Done()
		l.noteLost(h, lease)
	}()
	return lease, nil
}

// errLost is the reason reported with a lost op: the library cancelled the
// lock's context without being asked to.
var errLost = errors.New("rueidislock cancelled the lock context: it no longer holds a majority of its keys")

// noteLost reports the library's cancellation of the lock context once,
// unless the harness released the lock first.
func (l *rueidislockLock) noteLost(h *rueidisHeld, lease Lease) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.releasing || h.lost {
		return
	}
	h.lost = true
	l.observeLost(lease, errLost)
}

// Release is the cancel the library returned; it says nothing. When the
// library had already cancelled the lock context (reported as lost), the
// outcome is unknown: the library may have lost only its connection and
// the keys may still be there, so the error is not definite.
func (l *rueidislockLock) Release(ctx context.Context, lease Lease) error {
	l.mu.Lock()
	id := leaseID{lease.Key, lease.Token}
	h := l.held[id]
	delete(l.held, id)
	l.mu.Unlock()
	if h == nil {
		return fmt.Errorf("%w: no rueidislock lock %s on %s in this client", ErrNotHeld, lease.Token, lease.Key)
	}
	if h.ctx.Err() != nil {
		l.noteLost(h, lease)
	}
	h.mu.Lock()
	h.releasing = true
	lost := h.lost
	h.mu.Unlock()
	h.cancel() // waits until the library has deleted (or given up on) its keys
	if lost {
		return fmt.Errorf("rueidislock: released after the library reported the lock lost: outcome unknown")
	}
	return nil
}

func (l *rueidislockLock) Close() {
	l.mu.Lock()
	held, lockers := l.held, l.lockers
	l.held, l.lockers, l.closed = map[leaseID]*rueidisHeld{}, nil, true
	l.mu.Unlock()
	for _, h := range held {
		h.mu.Lock()
		h.releasing = true
		h.mu.Unlock()
	}
	for _, lk := range lockers {
		lk.Close()
	}
}
