package locks

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/lockharness/lockharness/access"
)

// etcdRecipe is etcd's own lock, go.etcd.io/etcd/client/v3/concurrency's
// Mutex, as its documentation uses it: a session (a lease the client keeps
// alive in the background, every TTL/3) and TryLock under the lock's
// prefix. Each acquire takes a session of its own, so that the lease a
// grant holds begins with the grant, and Release deletes the Mutex's key
// and revokes the lease. The client believes it holds the lock until the
// session ends (its keepalives unanswered for a TTL: Done), which it
// reports as lost; every keepalive is reported as an extend of the lease.
var etcdRecipe = Recipe{
	Name:     "etcd",
	Renews:   true,
	Library:  "go.etcd.io/etcd/client/v3",
	Summary:  "etcd client/v3 concurrency.Mutex (TryLock) on a session lease of --ttl (whole seconds) kept alive every TTL/3; no fence",
	Needs:    []access.Capability{access.Etcd},
	TTLUnit:  time.Second,
	Outlives: etcdOutlives,
	New:      func(c Config) Locker { return newEtcdLock(c, false) },
}

// etcdFencedRecipe is etcdRecipe with the Mutex key's create revision as
// the grant's fence, which the protected resource checks: the revision
// rises with every write to the cluster, so a later grant always has a
// higher one (Jepsen's etcd 3.4.3 analysis: the revision is what makes
// the lock safe).
var etcdFencedRecipe = func() Recipe {
	r := etcdRecipe
	r.Name, r.Fences = "etcd-fenced", true
	r.Summary = "etcd plus the lock key's create revision as the grant's fence, which the resource checks"
	r.New = func(c Config) Locker { return newEtcdLock(c, true) }
	return r
}()

// etcdOutlives is how long past its TTL an etcd lease may live on, with
// one leader change in its life on the etcd topology (election timeout
// 500 ms, pre-vote on): the old leader may fail just before the lease's
// end (a TTL), a new one is elected within two election timeouts (1 s),
// it gives every lease its whole TTL again plus an election timeout from
// its promotion (lessor.Promote: 0.5 s), and it revokes an expired lease
// in its next round, every 500 ms, through a commit (0.5 s, and a margin
// of 0.5 s for the commit).
func etcdOutlives(ttl time.Duration) time.Duration { return ttl + 2500*time.Millisecond }

// etcdPrefix is where the locks' keys live: a Mutex on key takes
// etcdPrefix+key+"/<lease>".
const etcdPrefix = "/lockharness/"

type etcdLock struct {
	Config
	fenced bool
	client *clientv3.Client
	err    error // the client could not be made; every acquire says so
	watch  *keepAlives

	mu   sync.Mutex
	held map[leaseID]*etcdHeld
}

type etcdHeld struct {
	session *concurrency.Session
	key     string
	// released: the client gave the lock up itself; its session's end is
	// no loss.
	released chan struct{}
	lost     sync.WaitGroup
}

func newEtcdLock(c Config, fenced bool) *etcdLock {
	l := &etcdLock{Config: c, fenced: fenced, held: map[leaseID]*etcdHeld{}}
	l.watch = &keepAlives{leases: map[clientv3.LeaseID]*watchedLease{}, observe: c.report}
	var endpoints []string
	for _, addr := range c.Access.Nodes {
		endpoints = append(endpoints, "http://"+addr)
	}
	if !c.Access.Etcd || len(endpoints) == 0 {
		l.err = fmt.Errorf("%w: lock etcd needs an etcd cluster's members (the hello's etcd and nodes)", ErrNotTried)
		return l
	}
	l.client, l.err = clientv3.New(clientv3.Config{
		Endpoints:   endpoints,
		DialTimeout: c.OpTimeout,
		Logger:      zap.NewNop(),
		DialOptions: []grpc.DialOption{grpc.WithStreamInterceptor(l.watch.intercept)},
	})
	if l.err != nil {
		l.err = fmt.Errorf("%w: etcd client: %w", ErrNotTried, l.err)
	}
	return l
}

// Acquire grants a lease of ttl, starts its session and tries the Mutex
// once. What fails before TryLock took no lock; a TryLock that does not
// answer may have.
func (l *etcdLock) Acquire(ctx context.Context, key, token string, ttl time.Duration) (Lease, error) {
	if l.err != nil {
		return Lease{}, l.err
	}
	secs := int64(ttl / time.Second)
	grant, err := command(ctx, l.OpTimeout, func(ctx context.Context) (*clientv3.LeaseGrantResponse, error) {
		return l.client.Grant(ctx, secs)
	})
	if err != nil {
		return Lease{}, fmt.Errorf("%w: lease grant: %w", ErrNotTried, err)
	}
	if grant.TTL != secs {
		l.revoke(grant.ID)
		return Lease{}, fmt.Errorf("%w: etcd granted a lease of %ds for the %ds asked (its shortest is 1.5 election timeouts)", ErrNotTried, grant.TTL, secs)
	}
	session, err := concurrency.NewSession(l.client, concurrency.WithLease(grant.ID))
	if err != nil {
		l.watch.remove(grant.ID)
		l.revoke(grant.ID)
		return Lease{}, fmt.Errorf("%w: session: %w", ErrNotTried, err)
	}
	m := concurrency.NewMutex(session, etcdPrefix+key)
	_, err = command(ctx, l.OpTimeout, func(ctx context.Context) (struct{}, error) { return struct{}{}, m.TryLock(ctx) })
	if err != nil {
		session.Orphan()
		l.watch.remove(grant.ID)
		l.revoke(grant.ID) // the key of a TryLock that did not answer goes with its lease
		if errors.Is(err, concurrency.ErrLocked) {
			return Lease{}, fmt.Errorf("%w: %w", ErrBusy, err)
		}
		return Lease{}, err
	}
	lease := Lease{Key: key, Token: token, Valid: ttl}
	if l.fenced {
		lease.Fence = m.Header().Revision // the new key's create revision
	}
	h := &etcdHeld{session: session, key: m.Key(), released: make(chan struct{})}
	l.mu.Lock()
	l.held[leaseID{key, token}] = h
	l.mu.Unlock()
	l.watch.add(grant.ID, lease, ttl)
	h.lost.Add(1)
	go func() {
		defer h.lost.Done()
		select {
		case <-session.Done():
			select {
			case <-h.released:
			default:
				l.watch.remove(grant.ID)
				l.observeLost(lease, errors.New("the session ended: its keepalives went unanswered for a TTL, or the lease was gone"))
			}
		case <-h.released:
		}
	}()
	return lease, nil
}

// Release deletes the Mutex's key (Unlock does just that, but does not
// say whether the key was there) and revokes the session's lease.
func (l *etcdLock) Release(ctx context.Context, lease Lease) error {
	l.mu.Lock()
	h := l.held[leaseID{lease.Key, lease.Token}]
	delete(l.held, leaseID{lease.Key, lease.Token})
	l.mu.Unlock()
	if h == nil {
		return fmt.Errorf("%w: no session holds %s", ErrNotHeld, lease.Token)
	}
	l.stop(h)
	del, err := command(ctx, l.OpTimeout, func(ctx context.Context) (*clientv3.DeleteResponse, error) {
		return l.client.Delete(ctx, h.key)
	})
	l.revoke(h.session.Lease())
	switch {
	case err != nil:
		return err
	case del.Deleted == 0:
		return fmt.Errorf("%w: the key %s was gone (its lease expired)", ErrNotHeld, h.key)
	}
	return nil
}

// stop ends a held lock's session without revoking it, and its report of
// a loss: what the session does from here is the client's own doing.
func (l *etcdLock) stop(h *etcdHeld) {
	close(h.released)
	h.lost.Wait()
	l.watch.remove(h.session.Lease())
	h.session.Orphan()
}

// revoke revokes a lease, as well as it can: a lease not revoked expires.
func (l *etcdLock) revoke(id clientv3.LeaseID) {
	command(context.Background(), l.OpTimeout, func(ctx context.Context) (*clientv3.LeaseRevokeResponse, error) {
		return l.client.Revoke(ctx, id)
	})
}

func (l *etcdLock) Close() {
	l.mu.Lock()
	held := l.held
	l.held = map[leaseID]*etcdHeld{}
	l.mu.Unlock()
	for _, h := range held {
		l.stop(h)
	}
	if l.client != nil {
		l.client.Close()
	}
}

// keepAlives reports the keepalives the etcd client sends on its own, as
// extends of the leases they renew: each request on the LeaseKeepAlive
// stream is an invoke, each answer its completion (a TTL: ok; none: the
// lease is gone, not-held), a broken stream leaves what it carried
// unknown (info). The client sends again every 500 ms while an answer is
// late; one extend stands for all of them, from the first request to the
// last answer, which bounds when the last renewal landed. A stream
// answers in order, so the answers to requests sent before a lease was
// watched (its session starts keepalives before TryLock) are told apart
// and left out: they renewed within the acquire.
type keepAlives struct {
	observe func(Op)
	mu      sync.Mutex
	leases  map[clientv3.LeaseID]*watchedLease
}

type watchedLease struct {
	// watched: the lease is held and reported (add); lease and ttl are
	// what its extends say.
	watched bool
	lease   Lease
	ttl     time.Duration
	// early counts requests sent before the lease was watched and not
	// yet answered; pending those sent since; open is the extend
	// reported for them, and outcome what their answers said so far.
	early, pending int
	open           bool
	outcome        Op
}

func (k *keepAlives) state(id clientv3.LeaseID) *watchedLease {
	w := k.leases[id]
	if w == nil {
		w = &watchedLease{}
		k.leases[id] = w
	}
	return w
}

// add starts reporting a lease's keepalives.
func (k *keepAlives) add(id clientv3.LeaseID, lease Lease, ttl time.Duration) {
	k.mu.Lock()
	defer k.mu.Unlock()
	w := k.state(id)
	w.watched, w.lease, w.ttl = true, lease, ttl
}

// remove stops reporting a lease; an extend still open is unknown.
func (k *keepAlives) remove(id clientv3.LeaseID) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if w := k.leases[id]; w != nil && w.open {
		k.complete(w, Op{Outcome: "info", Err: errors.New("no answer before the session stopped")})
	}
	delete(k.leases, id)
}

func (k *keepAlives) sent(id clientv3.LeaseID) {
	k.mu.Lock()
	defer k.mu.Unlock()
	w := k.state(id)
	if !w.watched {
		w.early++
		return
	}
	w.pending++
	if !w.open {
		w.open, w.outcome = true, Op{Outcome: "ok"}
		k.observe(Op{F: "extend", Outcome: "invoke", Key: w.lease.Key, Token: w.lease.Token, TTL: w.ttl})
	}
}

func (k *keepAlives) answered(id clientv3.LeaseID, ttl int64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	w := k.leases[id]
	switch {
	case w == nil:
		return
	case w.early > 0:
		w.early--
		return
	case !w.open:
		return
	}
	w.pending--
	if ttl <= 0 {
		w.outcome = Op{Outcome: "fail", Err: fmt.Errorf("%w: etcd has no lease %x", ErrNotHeld, int64(id))}
	}
	if w.pending <= 0 {
		k.complete(w, w.outcome)
	}
}

// broken leaves every open extend unknown: the stream that carried its
// requests is gone, and a new one starts with nothing in flight.
func (k *keepAlives) broken(err error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, w := range k.leases {
		w.early = 0
		if w.open {
			k.complete(w, Op{Outcome: "info", Err: err})
		}
	}
}

func (k *keepAlives) complete(w *watchedLease, o Op) {
	k.observe(Op{F: "extend", Outcome: o.Outcome, Key: w.lease.Key, Token: w.lease.Token, TTL: w.ttl, Err: o.Err})
	w.open, w.pending = false, 0
}

// intercept wraps the client's LeaseKeepAlive streams.
func (k *keepAlives) intercept(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	s, err := streamer(ctx, desc, cc, method, opts...)
	if err != nil || method != "/etcdserverpb.Lease/LeaseKeepAlive" {
		return s, err
	}
	return &keepAliveStream{ClientStream: s, k: k}, nil
}

type keepAliveStream struct {
	grpc.ClientStream
	k *keepAlives
}

func (s *keepAliveStream) SendMsg(m any) error {
	if r, ok := m.(*pb.LeaseKeepAliveRequest); ok {
		s.k.sent(clientv3.LeaseID(r.ID))
	}
	err := s.ClientStream.SendMsg(m)
	if err != nil {
		s.k.broken(err)
	}
	return err
}

func (s *keepAliveStream) RecvMsg(m any) error {
	err := s.ClientStream.RecvMsg(m)
	if err != nil {
		s.k.broken(err)
		return err
	}
	if r, ok := m.(*pb.LeaseKeepAliveResponse); ok {
		s.k.answered(clientv3.LeaseID(r.ID), r.TTL)
	}
	return nil
}
