package checker

import (
	"container/heap"
	"fmt"
	"math/rand"

	"github.com/lockharness/lockharness/history"
)

// The simulator: an in-memory lease server on a virtual clock, driven by
// random clients, recording the history the harness would record. The
// server is correct unless a mutation says otherwise: it grants a key only
// when it is absent or expired by the server's own clock, releases and
// extends only the holder's key (compare-and-delete, compare-and-expire),
// and draws fences with INCR. Requests and responses take random time; some
// requests are rejected outright (READONLY), and some operations lose their
// outcome: the request is lost, or the response is, or the request lands
// long after the client gave up. An operation whose outcome was lost is
// info, and the client carries on under a fresh process number, as in
// Jepsen.

// mutation breaks the server in one way.
type mutation int

const (
	correct mutation = iota
	// grantsEarly treats a key as expired after 40% of its ttl.
	grantsEarly
	// forgetsKeys restarts the server without persistence from time to
	// time: every key, fences included, is lost.
	forgetsKeys
	// ignoresToken deletes a live key on release whoever holds it (a plain
	// DEL).
	ignoresToken
	// extendsAfterExpiry re-creates an expired key on extend (redsync's
	// WithSetNXOnExtend).
	extendsAfterExpiry
)

func (m mutation) String() string {
	return [...]string{"correct", "grants-early", "forgets-keys", "ignores-token", "extends-after-expiry"}[m]
}

type simConfig struct {
	seed    int64
	keys    int
	clients int
	// ops is how many operations the clients start, roughly: once reached,
	// holders release and everyone stops.
	ops int
	// ttls are drawn from [ttlMinMs, ttlMaxMs].
	ttlMinMs, ttlMaxMs int64
	fenced             bool
	// lost is the probability that an operation's outcome is lost,
	// rejected that a request is refused with READONLY.
	lost, rejected float64
	// overrun is the probability that a holder sleeps past its lease.
	overrun float64
	// drift bounds how far the server's clock rate differs from the
	// harness's (0.001 is 0.1%).
	drift    float64
	mutation mutation
}

// randomConfig draws a small, varied correct configuration from a seed.
func randomConfig(seed int64) simConfig {
	r := rand.New(rand.NewSource(seed))
	return simConfig{
		seed:     seed,
		keys:     1 + r.Intn(2),
		clients:  2 + r.Intn(4),
		ops:      150 + r.Intn(150),
		ttlMinMs: 40,
		ttlMaxMs: 40 + int64(r.Intn(120)),
		fenced:   r.Intn(2) == 0,
		lost:     0.02 + 0.06*r.Float64(),
		rejected: 0.02 * r.Float64(),
		overrun:  0.05 + 0.2*r.Float64(),
		drift:    0.001 * r.Float64(),
	}
}

const (
	msNs         = int64(1e6)
	simSlackMs   = 2
	simTimeoutMs = 10 // a client gives up on an operation after this
)

type simKey struct {
	token   string
	expires int64 // on the server's clock
	ttl     int64
}

type sim struct {
	cfg    simConfig
	rng    *rand.Rand
	now    int64
	queue  simQueue
	seq    int
	events []history.Event

	// The server.
	rate   float64 // server clock = rate × harness clock
	store  map[string]*simKey
	fences map[string]int64

	procs   int
	started int
	active  int
	stats   simStats
}

// simStats counts what happened in a run.
type simStats struct {
	// manifest counts the times the mutation changed what the server did.
	manifest int
	// lateGrants counts acquires granted after their client gave up.
	lateGrants int
}

// simulate runs the clients to completion and returns the history.
func simulate(cfg simConfig) []history.Event {
	events, _ := simulateCounting(cfg)
	return events
}

// simulateCounting also says what happened.
func simulateCounting(cfg simConfig) ([]history.Event, simStats) {
	s := &sim{cfg: cfg, rng: rand.New(rand.NewSource(cfg.seed)),
		store: make(map[string]*simKey), fences: make(map[string]int64)}
	s.rate = 1 + cfg.drift*(2*s.rng.Float64()-1)
	for slot := 0; slot < cfg.clients; slot++ {
		c := &simClient{s: s, slot: slot, proc: s.newProc(), watchdog: s.newProc()}
		s.active++
		s.at(s.rng.Int63n(5*msNs), c.cycle)
	}
	if cfg.mutation == forgetsKeys {
		s.at(s.restartGap(), s.restart)
	}
	for s.queue.Len() > 0 {
		e := heap.Pop(&s.queue).(simEvent)
		s.now = e.at
		e.fn()
	}
	return s.events, s.stats
}

func (s *sim) newProc() history.Process {
	s.procs++
	return history.Process(s.procs - 1)
}

func (s *sim) at(t int64, fn func()) {
	s.seq++
	heap.Push(&s.queue, simEvent{at: t, seq: s.seq, fn: fn})
}

func (s *sim) record(e history.Event) {
	e.Time, e.Index = s.now, len(s.events)
	if e.IsNemesis() && e.Facts == nil {
		e.Facts = history.FactsFromWords(e)
	}
	s.events = append(s.events, e)
}

func (s *sim) between(loMs, hiMs float64) int64 {
	return int64((loMs + (hiMs-loMs)*s.rng.Float64()) * float64(msNs))
}

func (s *sim) restartGap() int64 { return s.between(50, 400) }

// restart loses every key and fence, as a node restarted without
// persistence does, and records the fault like the nemesis.
func (s *sim) restart() {
	if s.active == 0 {
		return
	}
	s.record(history.Event{Type: history.Info, Process: history.Nemesis, F: "restart", Phase: history.Start, Target: "redis-1", Detail: "no persistence"})
	for key := range s.store {
		if s.live(key) != nil {
			s.stats.manifest++
		}
	}
	s.store = make(map[string]*simKey)
	s.fences = make(map[string]int64)
	s.at(s.now+msNs, func() {
		s.record(history.Event{Type: history.Info, Process: history.Nemesis, F: "restart", Phase: history.End, Target: "redis-1"})
	})
	s.at(s.now+s.restartGap(), s.restart)
}

// serverNow is the server's clock.
func (s *sim) serverNow() int64 { return int64(float64(s.now) * s.rate) }

// live reports whether key holds an unexpired lease.
func (s *sim) live(key string) *simKey {
	k := s.store[key]
	if k == nil {
		return nil
	}
	expires := k.expires
	if s.cfg.mutation == grantsEarly {
		expires -= k.ttl * 6 / 10
	}
	if s.serverNow() >= expires {
		if s.serverNow() < k.expires {
			s.stats.manifest++
		}
		delete(s.store, key)
		return nil
	}
	return k
}

// apply runs one command on the server: the outcome and, for a grant, the
// fence.
func (s *sim) apply(e history.Event) (string, string, int64) {
	ttl := e.TTLMs * msNs
	switch e.F {
	case history.Acquire:
		if s.live(e.Key) != nil {
			return history.Fail, "lock busy", 0
		}
		s.store[e.Key] = &simKey{token: e.Token, expires: s.serverNow() + ttl, ttl: ttl}
		s.fences[e.Key]++
		return history.OK, "", s.fences[e.Key]
	case history.Extend:
		k := s.live(e.Key)
		switch {
		case k != nil && k.token == e.Token:
			k.expires, k.ttl = s.serverNow()+ttl, ttl
			return history.OK, "", 0
		case k == nil && s.cfg.mutation == extendsAfterExpiry:
			s.stats.manifest++
			s.store[e.Key] = &simKey{token: e.Token, expires: s.serverNow() + ttl, ttl: ttl}
			return history.OK, "", 0
		}
		return history.Fail, "lock not held", 0
	case history.Release:
		k := s.live(e.Key)
		if k != nil && (k.token == e.Token || s.cfg.mutation == ignoresToken) {
			if k.token != e.Token {
				s.stats.manifest++
			}
			delete(s.store, e.Key)
			return history.OK, "", 0
		}
		return history.Fail, "lock not held", 0
	}
	panic("unknown operation " + e.F)
}

// call performs one operation for a client: the invoke now, the server's
// effect after the request's delay, the completion after the response's;
// or a rejection, or a lost outcome (info after the client's timeout).
func (s *sim) call(e history.Event, done func(typ string, fence int64)) {
	s.started++
	e.Type = history.Invoke
	s.record(e)
	send, back := s.between(0.05, 2), s.between(0.05, 2)
	complete := func(typ, errText string, fence int64) {
		c := e
		c.Type, c.Error = typ, errText
		if errText == readOnly {
			c.Reason = history.ReasonRejected
		}
		if typ == history.OK && c.F == history.Acquire {
			if s.cfg.fenced {
				c.Fence = fence
			}
			c.ValidMs = c.TTLMs
		}
		s.record(c)
		done(typ, fence)
	}
	switch r := s.rng.Float64(); {
	case r < s.cfg.rejected:
		s.at(s.now+send+back, func() {
			complete(history.Fail, readOnly, 0)
		})
	case r < s.cfg.rejected+s.cfg.lost:
		switch s.rng.Intn(3) {
		case 0: // the request is lost
		case 1: // the response is lost
			s.at(s.now+send, func() { s.apply(e) })
		case 2: // the request lands after the client gave up
			s.at(s.now+simTimeoutMs*msNs+s.between(0, float64(2*s.cfg.ttlMaxMs)), func() {
				if typ, _, _ := s.apply(e); typ == history.OK && e.F == history.Acquire {
					s.stats.lateGrants++
				}
			})
		}
		s.at(s.now+simTimeoutMs*msNs, func() { complete(history.Info, "i/o timeout", 0) })
	default:
		s.at(s.now+send, func() {
			typ, errText, fence := s.apply(e)
			s.at(s.now+back, func() { complete(typ, errText, fence) })
		})
	}
}

type simClient struct {
	s              *sim
	slot           int
	proc, watchdog history.Process
	attempt        int
}

func (c *simClient) event(f, key, token string, ttlMs int64) history.Event {
	return history.Event{Process: c.proc, Client: c.slot, F: f, Key: key, Token: token, TTLMs: ttlMs}
}

func (c *simClient) later(loMs, hiMs float64, fn func()) { c.s.at(c.s.now+c.s.between(loMs, hiMs), fn) }

// cycle is acquire → hold (extending now and then) → release, then a
// random pause; busy or unknown, it tries again after a pause.
func (c *simClient) cycle() {
	s := c.s
	if s.started >= s.cfg.ops {
		s.active--
		return
	}
	key := fmt.Sprintf("lock:%c", 'a'+s.rng.Intn(s.cfg.keys))
	c.attempt++
	token := fmt.Sprintf("c%d-%d", c.slot, c.attempt)
	ttl := s.cfg.ttlMinMs + s.rng.Int63n(s.cfg.ttlMaxMs-s.cfg.ttlMinMs+1)
	s.call(c.event(history.Acquire, key, token, ttl), func(typ string, _ int64) {
		switch typ {
		case history.OK:
			c.hold(key, token, ttl, s.rng.Intn(3))
		case history.Info:
			c.proc = s.newProc()
			c.later(1, 20, c.cycle)
		default:
			c.later(1, 20, c.cycle)
		}
	})
}

// hold keeps the lease for a while, sometimes far too long, and then
// extends it (extends more times) or releases it.
func (c *simClient) hold(key, token string, ttl int64, extends int) {
	s := c.s
	lo, hi := 0.1, 0.7
	if s.rng.Float64() < s.cfg.overrun {
		lo, hi = 1.05, 2.5
	}
	c.later(lo*float64(ttl), hi*float64(ttl), func() {
		if extends == 0 || s.started >= s.cfg.ops {
			c.release(key, token)
			return
		}
		newTTL := s.cfg.ttlMinMs + s.rng.Int63n(s.cfg.ttlMaxMs-s.cfg.ttlMinMs+1)
		e := c.event(history.Extend, key, token, newTTL)
		e.Process = c.watchdog
		s.call(e, func(typ string, _ int64) {
			switch typ {
			case history.OK:
				c.hold(key, token, newTTL, extends-1)
			case history.Info:
				c.watchdog = s.newProc()
				c.hold(key, token, newTTL, extends-1)
			default:
				// The lease is gone; a client may still try to release.
				if s.rng.Intn(2) == 0 {
					c.release(key, token)
				} else {
					c.later(1, 20, c.cycle)
				}
			}
		})
	})
}

func (c *simClient) release(key, token string) {
	s := c.s
	s.call(c.event(history.Release, key, token, 0), func(typ string, _ int64) {
		if typ == history.Info {
			c.proc = s.newProc()
		}
		c.later(1, 20, c.cycle)
	})
}

type simEvent struct {
	at  int64
	seq int
	fn  func()
}

type simQueue []simEvent

func (q simQueue) Len() int { return len(q) }
func (q simQueue) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}
func (q simQueue) Swap(i, j int)       { q[i], q[j] = q[j], q[i] }
func (q *simQueue) Push(x interface{}) { *q = append(*q, x.(simEvent)) }
func (q *simQueue) Pop() interface{} {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}
