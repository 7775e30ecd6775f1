package locks

import (
	"context"
	"crypto/sha1"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"

	"github.com/lockharness/lockharness/internal/options"

	"github.com/lockharness/lockharness/access"
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
//
// The library's background work enters the history through the rueidis
// client it is given (LockerOption.ClientBuilder), which sees every script
// it sends (see rueidisWatch): its extends are reported as extends of the
// lease, and a key it deletes on its own (after an extend without an
// answer) as a release; its lock-lost context as a lost op.
var rueidislockRecipe = Recipe{
	Name:    "rueidislock",
	Library: "github.com/redis/rueidis",
	Summary: "rueidis rueidislock as in its README (KeyMajority 1, NOLOOP): self-extending, lock-lost context via client-side caching",
	Needs:   []access.Capability{access.Primary},
	// The library's first key for a lock: with majority=N the grant is N
	// of 2N−1 keys, on shards of their own, and faults follow this one.
	Stores: func(key string) string { return "rueidislock:0:" + key },
	Renews: true,
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

	// byVal finds a lease by the library's random value for it: the
	// ARGV[1] of every script the library runs on the lease's keys.
	valMu sync.Mutex
	byVal map[string]*rueidisHeld
}

// rueidisHeld is one lock the harness asked the library for: its lock-lost
// context and the cancel that releases it, and what the recipe has seen
// the library do on its keys, from which it reports the library's
// background work as operations on the lease.
type rueidisHeld struct {
	l        *rueidislockLock
	lease    Lease // Key and Token
	majority int

	ctx    context.Context
	cancel context.CancelFunc

	mu           sync.Mutex
	acquiring    bool // TryWithContext has not returned
	releasing    bool // the harness released it (or the worker is closing)
	lost         bool // the library said it was lost, and that was reported
	autoReleased bool // the library deleted a key of it on its own, reported as a release
	stopped      bool // nothing more is reported for it
	// The answers to the deletes of the release the harness asked for:
	// keys deleted, keys found gone, and the last error.
	relDeleted, relGone int
	relErr              error
	keys                []rueidisKey
	// ext is the extend of the lease reported as invoked and not yet
	// completed; rel the release the library began on its own.
	ext *rueidisExtend
	rel *rueidisSent
}

// rueidisKey is what the recipe knows of one of a lease's keys.
type rueidisKey struct {
	alive bool // its watcher runs: acquired, not yet given up
	ours  bool // an answer said the key is ours, and none since said it is gone
	gone  bool // an answer said it is not ours (SET NX refused, extend 0, delete)
	// hi is the latest expiry any command of ours may have given it, and
	// extended the deadline of its latest extend answered 1.
	hi, extended time.Time
	// retry is a script sent as EVALSHA and answered NOSCRIPT: the
	// library sends the same script as EVAL at once, which completes it.
	retry *rueidisSent
}

// rueidisExtend is one extend of the lease as reported: the extends of
// its keys sent from its invoke on, asking for at least its deadline.
type rueidisExtend struct {
	ttl      time.Duration
	deadline time.Time
	members  []bool // the keys whose extend counts for it
	pending  int    // members sent, not yet answered
	ok       int    // members answered 1
	unknown  error  // a member's error, for the message
	rejected error  // one key: its extend was refused (READONLY, ...)
}

// rueidisSent is one of the library's scripts on a lease's key, between
// the moment it is sent and its answer.
type rueidisSent struct {
	h       *rueidisHeld
	kind    rueidisScript
	idx     int
	arg     int64     // ARGV[2]: a deadline in Unix ms, or PX ms
	prevHi  time.Time // the key's hi before this acquire
	ext     *rueidisExtend
	rel     bool // reported as the library's own release of the lease
	evalsha bool
	// returned: answered (under h.mu); decided: reported, or known never
	// to have left (under rueidisConns.mu).
	returned, decided bool
}

func newRueidislock(c Config, s rueidislockSettings) *rueidislockLock {
	return &rueidislockLock{Config: c, s: s, lockers: map[time.Duration]rueidislock.Locker{},
		held: map[leaseID]*rueidisHeld{}, byVal: map[string]*rueidisHeld{}}
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
	opts := serviceOf(l.Client)
	dial := opts.dial
	conns := &rueidisConns{}
	lk, err := rueidislock.NewLocker(rueidislock.LockerOption{
		ClientOption: rueidis.ClientOption{
			InitAddress: opts.addrs,
			// Through the worker's own proxies, like its go-redis client,
			// and watched (see rueidisConns).
			DialCtxFn: func(ctx context.Context, dst string, d *net.Dialer, _ *tls.Config) (net.Conn, error) {
				var c net.Conn
				var err error
				if dial != nil {
					c, err = dial(ctx, "tcp", dst)
				} else {
					c, err = d.DialContext(ctx, "tcp", dst)
				}
				if err != nil {
					return nil, err
				}
				return &rueidisConn{Conn: c, w: conns}, nil
			},
			Dialer:           net.Dialer{Timeout: l.OpTimeout},
			ConnWriteTimeout: l.OpTimeout,
			// The harness's rule for every client under test: no retries
			// (the library's scripts are marked retryable) and one plain
			// connection to the node; on a cluster, rueidis's cluster
			// client, which follows MOVED and ASK.
			DisableRetry:      true,
			ForceSingleClient: !opts.cluster,

			// The go-redis client's login; with TLS its dialer (above)
			// makes the handshake (NewClient).
			Username:  opts.username,
			Password:  opts.password,
			TLSConfig: opts.tls,
		},
		// The client the library would make, seen by the recipe.
		ClientBuilder: func(o rueidis.ClientOption) (rueidis.Client, error) {
			c, err := rueidis.NewClient(o)
			if err != nil {
				return nil, err
			}
			return rueidisWatch{Client: c, l: l, conns: conns}, nil
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

// rueidisHeldKey is the context key under which Acquire hands its lease to
// the scripts of the library's try.
type rueidisHeldKey struct{}

// Acquire is TryWithContext. Lease.Valid is the TTL: the keys' deadline,
// set at the start of the try. From then on the library extends the keys
// itself, every KeyValidity/2 (and again when client-side caching says a
// key changed), which the recipe reports as extends of the lease through
// Config.Observe (see rueidisWatch), and believes it holds the lock until
// it cancels the returned context, which is reported as a lost op.
func (l *rueidislockLock) Acquire(ctx context.Context, key, token string, ttl time.Duration) (Lease, error) {
	lk, err := l.locker(ttl)
	if err != nil {
		return Lease{}, fmt.Errorf("rueidislock: %w", err)
	}
	lease := Lease{Key: key, Token: token, Valid: ttl}
	h := &rueidisHeld{l: l, lease: lease, majority: l.s.majority, keys: make([]rueidisKey, 2*l.s.majority-1), acquiring: true}
	lctx, cancel, err := lk.TryWithContext(context.WithValue(ctx, rueidisHeldKey{}, h), key)
	h.mu.Lock()
	h.acquiring, h.stopped = false, err != nil
	h.mu.Unlock()
	if err != nil {
		// A failed try waits for its keys to be given up: nothing of it
		// runs any more.
		l.unbind(h)
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
	h.ctx, h.cancel = lctx, cancel
	l.mu.Lock()
	l.held[leaseID{key, token}] = h
	l.mu.Unlock()
	go func() {
		<-lctx.Done()
		l.noteLost(h)
	}()
	return lease, nil
}

// errReachesFurther is an extend of a majority of the keys while another
// key still expires later than it asks: how long the lease lasts is not
// what the extend says.
var errReachesFurther = errors.New("rueidislock extended a majority of its keys, but some reach further than this extend's ttl: reported unknown")

// errLost is the reason reported with a lost op: the library cancelled the
// lock's context without being asked to.
var errLost = errors.New("rueidislock cancelled the lock context: it no longer holds a majority of its keys")

// noteLost reports the library's cancellation of the lock context once,
// unless the harness released the lock first. Whatever the recipe had
// reported as under way is completed first, as unknown: one process
// carries the worker's background operations, one at a time.
func (l *rueidislockLock) noteLost(h *rueidisHeld) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.releasing || h.lost {
		return
	}
	h.completeAll(errors.New("rueidislock: the lock was lost before this completed: outcome unknown"))
	h.lost, h.stopped = true, true
	l.observeLost(h.lease, errLost)
}

// Release is the cancel the library returned; it says nothing. When the
// library had already cancelled the lock context (reported as lost), or
// had begun to give its keys up on its own (reported as a release), the
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
		l.noteLost(h)
	}
	h.mu.Lock()
	h.releasing = true
	h.mu.Unlock()
	// The cancel waits until the library has deleted (or given up on) its
	// keys: every script of the lease has been answered by then. An
	// extend in flight completes as whatever its answer said (unknown if
	// the cancel cut the wait short).
	h.cancel()
	h.mu.Lock()
	h.completeAll(errors.New("rueidislock: released before this completed: outcome unknown"))
	h.stopped = true
	lost, auto := h.lost, h.autoReleased
	deleted, gone, relErr := h.relDeleted, h.relGone, h.relErr
	h.mu.Unlock()
	l.unbind(h)
	switch {
	case lost:
		return fmt.Errorf("rueidislock: released after the library reported the lock lost: outcome unknown")
	case auto:
		return fmt.Errorf("rueidislock: released after the library began deleting its keys on its own: outcome unknown")
	case deleted >= h.majority:
		return nil
	case gone > 0 && relErr == nil && deleted+gone == len(h.keys):
		// Every delete was answered and the lease's keys were not there:
		// it had expired.
		return fmt.Errorf("%w: rueidislock's deletes found %d of its %d keys gone", ErrNotHeld, gone, len(h.keys))
	}
	// The library says nothing; its deletes did not all get an answer (a
	// cut link): whether the lease is gone is unknown.
	return fmt.Errorf("rueidislock: released, but %d of its %d deletes were answered (%v): outcome unknown", deleted+gone, len(h.keys), relErr)
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
		lk.Close() // waits for the scripts in flight
	}
	for _, h := range held {
		h.mu.Lock()
		h.completeAll(errors.New("rueidislock: the worker closed before this completed: outcome unknown"))
		h.stopped = true
		h.mu.Unlock()
	}
}

func (l *rueidislockLock) unbind(h *rueidisHeld) {
	l.valMu.Lock()
	defer l.valMu.Unlock()
	for val, o := range l.byVal {
		if o == h {
			delete(l.byVal, val)
		}
	}
}

// The scripts of rueidislock v1.0.79 (rueidislock/lock.go), by body and by
// SHA-1 (Lua.Exec sends EVALSHA, then EVAL after NOSCRIPT). A version that
// changes them fails TestRueidislockExtendsItself: its extends go unseen.
type rueidisScript int

const (
	rueidisAcquireAt rueidisScript = iota + 1 // SET [NX] PXAT: ARGV[2] is the deadline, Unix ms
	rueidisAcquirePX                          // SET [NX] PX: ARGV[2] is the validity, ms
	rueidisExtendAt                           // compare, PEXPIREAT ARGV[2]; 1 extended, 0 not ours
	rueidisDelete                             // compare-and-delete; 1 deleted, 0 not ours
)

var rueidisScripts = func() map[string]rueidisScript {
	bodies := map[string]rueidisScript{
		`if redis.call("GET",KEYS[1]) == ARGV[1] then return redis.call("DEL",KEYS[1]) end;return 0`:                                                     rueidisDelete,
		`if redis.call("GET",KEYS[1]) == ARGV[1] then local r = redis.call("PEXPIREAT",KEYS[1],ARGV[2]);redis.call("GET",KEYS[1]);return r end;return 0`: rueidisExtendAt,
		`local r = redis.call("SET",KEYS[1],ARGV[1],"NX","PX",ARGV[2]);redis.call("GET",KEYS[1]);return r`:                                               rueidisAcquirePX,
		`local r = redis.call("SET",KEYS[1],ARGV[1],"NX","PXAT",ARGV[2]);redis.call("GET",KEYS[1]);return r`:                                             rueidisAcquireAt,
		`local r = redis.call("SET",KEYS[1],ARGV[1],"PX",ARGV[2]);redis.call("GET",KEYS[1]);return r`:                                                    rueidisAcquirePX,
		`local r = redis.call("SET",KEYS[1],ARGV[1],"PXAT",ARGV[2]);redis.call("GET",KEYS[1]);return r`:                                                  rueidisAcquireAt,
	}
	m := map[string]rueidisScript{}
	for body, kind := range bodies {
		sum := sha1.Sum([]byte(body))
		m[body], m[hex.EncodeToString(sum[:])] = kind, kind
	}
	return m
}()

// rueidisWatch is the rueidis.Client the library is given: the real one,
// with every script the library sends on a lease's keys seen by the
// recipe on its way out and on its way back. The library sends its
// scripts through Do (Lua.Exec); DoMulti is watched too; nothing else it
// calls carries a script.
//
// What the recipe reports, for the checker's lease model (models/lease.go):
// an extend of the lease whose invoke is reported before the first of its
// keys' extends is sent, with the ttl that extend asked for: its PEXPIREAT
// deadline less the time of the invoke, in whole ms (the deadline is
// absolute, so the time the script runs does not matter). Its completion
// is ok once a majority of the keys were extended to at least that
// deadline (so the lease lasts until it) and what was sent cannot make the
// lease outlive the completion plus the ttl by more than 1 ms (the
// deadlines' resolution, within the checker's slack); if it can, unknown.
// It fails (not-held) once a majority of the keys answered that they are
// not ours; otherwise it is unknown (info), which claims nothing. With one
// key that is the key's own answer (a refusal such as READONLY: rejected).
// Each invoke gets exactly one completion: what is still under way once
// the lease is lost, released or closed completes as unknown. A key's
// extend that cannot move its expiry (the same deadline as its last extend
// answered 1: client-side caching re-sends it on every invalidation, a
// busy loop with loop-tracking) is not reported; nor one whose deadline
// has passed, nor one that never left the client (see rueidisConns).
//
// A key the library deletes on its own (it does after an extend without
// an answer) is a release of the lease the harness did not ask for: it is
// reported as one (with one key, its answer; with more, unknown), and the
// recipe reports nothing more of the lease but the lost op. Acquires, and
// the deletes of a release the harness asked for, belong to the harness's
// own operations and are not reported.
type rueidisWatch struct {
	rueidis.Client
	l     *rueidislockLock
	conns *rueidisConns
}

func (c rueidisWatch) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	s := c.l.sending(ctx, cmd.Commands())
	if s == nil {
		return c.Client.Do(ctx, cmd)
	}
	before := c.conns.admit(ctx, s)
	resp := c.Client.Do(ctx, cmd)
	s.answered(resp, c.conns.unsent(before, s))
	return resp
}

func (c rueidisWatch) DoMulti(ctx context.Context, multi ...rueidis.Completed) []rueidis.RedisResult {
	sent := make([]*rueidisSent, len(multi))
	before := make([]rueidisConnState, len(multi))
	for i := range multi {
		if sent[i] = c.l.sending(ctx, multi[i].Commands()); sent[i] != nil {
			before[i] = c.conns.admit(ctx, sent[i])
		}
	}
	resps := c.Client.DoMulti(ctx, multi...)
	for i, s := range sent {
		if s == nil {
			continue
		}
		resp := rueidis.NewErrorResult(errors.New("no answer"))
		if i < len(resps) {
			resp = resps[i]
		}
		s.answered(resp, c.conns.unsent(before[i], s))
	}
	return resps
}

// rueidisConns watches the connections of a library's client, so that
// what the recipe reports of a command begins only once the command can
// leave the client, and so that it can tell a command that never left
// from one whose outcome is unknown. rueidis writes a command only on a
// connection whose handshake was answered, and closes a connection that
// fails: while none is open and answered, a command waits for the next
// one to answer (reported then, before it is written), or returns without
// having been written. A command whose context is done is not written
// either. (This is the library's extend and delete after its connection
// broke, kill-node: both never reach a server.)
type rueidisConns struct {
	mu       sync.Mutex
	usable   int   // connections answered and not closed
	answered int64 // connections ever answered
	waiting  []*rueidisSent
}

// rueidisConnState is what admit saw.
type rueidisConnState struct {
	done     bool
	usable   int
	answered int64
}

// admit reports s now, when a connection could carry it, or at the next
// connection's first answer, or never, when its context is done.
func (w *rueidisConns) admit(ctx context.Context, s *rueidisSent) rueidisConnState {
	w.mu.Lock()
	b := rueidisConnState{done: ctx.Err() != nil, usable: w.usable, answered: w.answered}
	report := false
	switch {
	case s.decided: // the EVAL after NOSCRIPT, decided with its EVALSHA
	case b.done:
		s.decided = true
	case b.usable == 0:
		w.waiting = append(w.waiting, s)
	default:
		s.decided, report = true, true
	}
	w.mu.Unlock()
	if report {
		s.h.reportSent(s)
	}
	return b
}

// unsent says whether s, admitted as b, certainly never left the client.
func (w *rueidisConns) unsent(b rueidisConnState, s *rueidisSent) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !s.decided {
		// No connection answered while it waited: never written.
		w.waiting = slices.DeleteFunc(w.waiting, func(o *rueidisSent) bool { return o == s })
		s.decided = true
		return true
	}
	return b.done || b.usable == 0 && w.answered == b.answered
}

type rueidisConn struct {
	net.Conn
	w *rueidisConns

	once             sync.Once
	first            atomic.Bool // answered, for Read without the lock
	answered, closed bool        // under w.mu
}

// Read notes the connection's first answer, and reports the commands
// waiting for one before rueidis can go on to write them.
func (c *rueidisConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 && !c.first.Swap(true) {
		var waiting []*rueidisSent
		c.w.mu.Lock()
		if !c.answered {
			c.answered = true
			c.w.answered++
			if !c.closed {
				c.w.usable++
			}
			waiting, c.w.waiting = c.w.waiting, nil
			for _, s := range waiting {
				s.decided = true
			}
		}
		c.w.mu.Unlock()
		for _, s := range waiting {
			s.h.reportSent(s)
		}
	}
	return n, err
}

func (c *rueidisConn) Close() error {
	c.once.Do(func() {
		c.w.mu.Lock()
		c.closed = true
		if c.answered {
			c.w.usable--
		}
		c.w.mu.Unlock()
	})
	return c.Conn.Close()
}

// sending notes a command on its way out: nil unless it is one of the
// library's scripts on a key of a lease of this locker.
func (l *rueidislockLock) sending(ctx context.Context, cs []string) *rueidisSent {
	// EVALSHA sha 1 key val arg, or EVAL body 1 key val arg.
	if len(cs) != 6 || cs[0] != "EVALSHA" && cs[0] != "EVAL" || cs[2] != "1" {
		return nil
	}
	kind := rueidisScripts[cs[1]]
	idx, name, ok := rueidisKeyIndex(cs[3])
	arg, err := strconv.ParseInt(cs[5], 10, 64)
	if kind == 0 || !ok || err != nil {
		return nil
	}
	val := cs[4]
	var h *rueidisHeld
	l.valMu.Lock()
	if kind == rueidisAcquireAt || kind == rueidisAcquirePX {
		// The try's context carries the lease; the value it binds is
		// how later scripts (a delete runs without that context) find it.
		if h, _ = ctx.Value(rueidisHeldKey{}).(*rueidisHeld); h != nil {
			l.byVal[strings.Clone(val)] = h
		}
	} else {
		h = l.byVal[val]
	}
	l.valMu.Unlock()
	if h == nil || name != h.lease.Key || idx >= len(h.keys) {
		return nil
	}
	return h.sending(kind, idx, arg, cs[0] == "EVALSHA")
}

// rueidisKeyIndex splits the library's key name "rueidislock:<i>:<name>".
func rueidisKeyIndex(k string) (int, string, bool) {
	rest, ok := strings.CutPrefix(k, "rueidislock:")
	if !ok {
		return 0, "", false
	}
	i, name, ok := strings.Cut(rest, ":")
	n, err := strconv.Atoi(i)
	return n, name, ok && err == nil && n >= 0
}

// sending notes what a command sent changes in what the recipe knows of
// the key. What it reports of it is reportSent's.
func (h *rueidisHeld) sending(kind rueidisScript, idx int, arg int64, evalsha bool) *rueidisSent {
	h.mu.Lock()
	defer h.mu.Unlock()
	k := &h.keys[idx]
	if s := k.retry; s != nil {
		k.retry = nil
		if !evalsha && s.kind == kind && s.arg == arg {
			return s // the EVAL after NOSCRIPT: the same command
		}
	}
	s := &rueidisSent{h: h, kind: kind, idx: idx, arg: arg, evalsha: evalsha, prevHi: k.hi}
	switch kind {
	case rueidisAcquireAt, rueidisExtendAt:
		k.raise(time.UnixMilli(arg))
	case rueidisAcquirePX:
		k.hi = farFuture // until the answer says from when
	case rueidisDelete:
		k.alive = false // its watcher is giving the key up
		h.settle()
	}
	return s
}

// farFuture stands for an expiry not known yet.
var farFuture = time.Unix(1<<40, 0)

func (k *rueidisKey) raise(t time.Time) {
	if t.After(k.hi) {
		k.hi = t
	}
}

// reportSent reports what a command about to leave the client begins: an
// extend of the lease, or the library's own release of it. It runs before
// the command can be written (see rueidisConns); not at all for one that
// never left.
func (h *rueidisHeld) reportSent(s *rueidisSent) {
	h.mu.Lock()
	defer h.mu.Unlock()
	k := &h.keys[s.idx]
	if h.stopped || s.returned {
		return
	}
	switch s.kind {
	case rueidisExtendAt:
		deadline := time.UnixMilli(s.arg)
		if deadline.Equal(k.extended) {
			return // it cannot move the key's expiry
		}
		if e := h.ext; e != nil {
			if !e.members[s.idx] && !deadline.Before(e.deadline) {
				e.members[s.idx] = true
				e.pending++
				s.ext = e
			}
			return
		}
		ttl := time.Until(deadline).Truncate(time.Millisecond)
		if ttl < time.Millisecond {
			return // the deadline has passed: nothing to extend
		}
		e := &rueidisExtend{ttl: ttl, deadline: deadline, members: make([]bool, len(h.keys)), pending: 1}
		e.members[s.idx] = true
		h.ext, s.ext = e, e
		h.report(Op{F: "extend", Outcome: "invoke", TTL: ttl})
	case rueidisDelete:
		if h.acquiring || h.releasing || !k.ours {
			return // part of the harness's acquire or release, or not ours
		}
		// The library gives up a key of the lease on its own.
		h.completeAll(errors.New("rueidislock: began deleting its keys before this completed: outcome unknown"))
		h.autoReleased, h.stopped = true, true
		s.rel, h.rel = true, s
		h.report(Op{F: "release", Outcome: "invoke"})
	}
}

// answered notes the answer to a command sent; unsent, that it certainly
// never left the client.
func (s *rueidisSent) answered(resp rueidis.RedisResult, unsent bool) {
	if s == nil {
		return
	}
	h := s.h
	h.mu.Lock()
	defer h.mu.Unlock()
	k := &h.keys[s.idx]
	err := resp.Error()
	if re, ok := rueidis.IsRedisErr(err); ok && re.IsNoScript() && s.evalsha {
		k.retry = s
		return
	}
	s.returned = true
	switch s.kind {
	case rueidisAcquireAt, rueidisAcquirePX:
		switch {
		case err == nil:
			k.alive, k.ours = true, true
		case rueidis.IsRedisNil(err):
			k.gone, k.hi = true, s.prevHi
		}
		if s.kind == rueidisAcquirePX && !rueidis.IsRedisNil(err) {
			k.hi = s.prevHi
			k.raise(time.Now().Add(time.Duration(s.arg) * time.Millisecond))
		}
	case rueidisExtendAt:
		v, err := resp.AsInt64()
		e := s.ext
		if e != h.ext {
			e = nil // completed already
		}
		switch {
		case err == nil && v == 1:
			if d := time.UnixMilli(s.arg); d.After(k.extended) {
				k.extended = d
			}
			if e != nil {
				e.ok++
			}
		case err == nil:
			k.alive, k.ours, k.gone = false, false, true
		default:
			k.alive = false // the library gives the key up
			if e != nil {
				if refusal := rueidisRefusal(err, unsent); h.majority == 1 && Definite(refusal) {
					e.rejected = refusal
				} else {
					e.unknown = err
				}
			}
		}
		if e != nil {
			e.pending--
		}
		h.settle()
	case rueidisDelete:
		v, err := resp.AsInt64()
		if err == nil {
			k.ours, k.gone = false, true // deleted, or not ours
		}
		if h.releasing && !s.rel {
			switch {
			case err != nil:
				h.relErr = err
			case v == 1:
				h.relDeleted++
			default:
				h.relGone++
			}
		}
		if s.rel && h.rel == s {
			h.rel = nil
			op := Op{F: "release", Outcome: "info", Err: err}
			switch refusal := rueidisRefusal(err, unsent); {
			case err != nil && Definite(refusal):
				op.Outcome, op.Err = "fail", refusal
			case h.majority > 1:
				op.Err = errors.New("rueidislock deleted one of its keys on its own: whether the lease went with it is not known")
			case err == nil && v == 1:
				op.Outcome, op.Err = "ok", nil
			case err == nil:
				op.Outcome, op.Err = "fail", fmt.Errorf("%w: rueidislock's delete found its key gone", ErrNotHeld)
			}
			h.report(op)
		}
		h.settle()
	}
}

// settle completes the extend under way once its keys' answers decide it.
func (h *rueidisHeld) settle() {
	e := h.ext
	if e == nil {
		return
	}
	n := h.majority
	if e.ok >= n {
		if h.upper().After(time.Now().Add(e.ttl + time.Millisecond)) {
			h.completeExtend("info", errReachesFurther)
		} else {
			h.completeExtend("ok", nil)
		}
		return
	}
	if e.pending > 0 {
		return
	}
	gone, joiners := 0, 0
	for i, k := range h.keys {
		switch {
		case k.gone:
			gone++
		case k.alive && !e.members[i]:
			joiners++
		}
	}
	switch {
	case gone >= n:
		h.completeExtend("fail", fmt.Errorf("%w: rueidislock's extend found its keys gone", ErrNotHeld))
	case e.ok+joiners >= n:
		// The other keys' extends may still make it.
	case e.rejected != nil:
		h.completeExtend("fail", e.rejected)
	case e.unknown != nil:
		h.completeExtend("info", fmt.Errorf("rueidislock: outcome unknown: %v", e.unknown))
	default:
		h.completeExtend("info", errors.New("rueidislock: too few of its keys answered: outcome unknown"))
	}
}

// upper is a bound on the lease's end from what was sent: the majority-th
// latest expiry its keys may have, those not known gone.
func (h *rueidisHeld) upper() time.Time {
	var his []time.Time
	for _, k := range h.keys {
		if !k.gone {
			his = append(his, k.hi)
		}
	}
	if len(his) < h.majority {
		return time.Time{}
	}
	slices.SortFunc(his, func(a, b time.Time) int { return b.Compare(a) })
	return his[h.majority-1]
}

func (h *rueidisHeld) completeExtend(outcome string, err error) {
	e := h.ext
	h.ext = nil
	h.report(Op{F: "extend", Outcome: outcome, TTL: e.ttl, Err: err})
}

// completeAll completes whatever is under way as unknown.
func (h *rueidisHeld) completeAll(err error) {
	if h.ext != nil {
		h.completeExtend("info", err)
	}
	if h.rel != nil {
		h.rel = nil
		h.report(Op{F: "release", Outcome: "info", Err: err})
	}
}

// report passes an operation on the lease to Observe, under h.mu: the
// order of the reports is the order of the events.
func (h *rueidisHeld) report(op Op) {
	op.Key, op.Token = h.lease.Key, h.lease.Token
	h.l.report(op)
}

// rueidisRefusal is err as Definite should judge it: a command that never
// left the client is ErrNotSent, and a Redis error reply reads as
// go-redis's redis.Error, judged by its prefix like the other recipes'
// (READONLY and the like are refusals that say nothing of the lock).
func rueidisRefusal(err error, unsent bool) error {
	if re, ok := rueidis.IsRedisErr(err); ok {
		return rueidisRedisError{re}
	}
	if unsent {
		return fmt.Errorf("%w (rueidis: %v)", ErrNotSent, err)
	}
	return err
}

type rueidisRedisError struct{ e *rueidis.RedisError }

func (e rueidisRedisError) Error() string { return e.e.Error() }
func (e rueidisRedisError) RedisError()   {}
