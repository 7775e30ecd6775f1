package workloads

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"sort"
	"sync"
	"time"

	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/resource"
)

// DefaultBackoff is the mean pause between a client's cycles that runs
// start from: 10-50 ms.
const DefaultBackoff = 30 * time.Millisecond

// LoopConfig describes the mutex workload.
type LoopConfig struct {
	Clients int
	Key     string
	TTL     time.Duration
	Hold    time.Duration
	Seed    int64
	// Fenced makes the in-memory counter reject writes with an older fence.
	Fenced bool
	// Database: the workers write to a real database themselves (the
	// hello says where); the harness records what they answer.
	Database bool
	// Reads: every holder first reads what to write (the workload's
	// Tables.Read: the job behind its key) and writes only when the read
	// names something; Keys are the lock keys it draws from (empty: Key
	// alone).
	Reads bool
	Keys  []string
	// Extend makes every holder extend its lease after its first write,
	// and again every TTL/2 while its hold goes on.
	Extend bool
	// Writes is how many protected writes a holder makes per grant,
	// spread evenly over its hold: the first right after the grant, the
	// k-th Hold·k/Writes later, the release at Hold (0: one).
	Writes int
	// FenceChecked: the database compares each write's fence with those
	// it accepted before (history.Event.FenceChecked); the in-memory
	// counter says so itself when it is fenced.
	FenceChecked bool
	// Backoff is the mean pause between a client's cycles, drawn from
	// [D/3, 5D/3); 0: none.
	Backoff time.Duration
	// RecipePoints are the lock recipe's own pause points.
	RecipePoints []string
	Spawn        Spawn
	// Inside, when set, runs each client's worker inside the harness
	// instead of Spawn's process: the built-in worker with this config,
	// speaking the protocol over in-memory pipes. Nothing can freeze such
	// a worker (Freeze refuses), so only a run none of whose faults
	// stops a client may set it.
	Inside *WorkerConfig
	// Hello is the hello line for a slot's worker.
	Hello func(slot int) Hello
	// ReplyWithin is how long a reply may take (0: DefaultReplyWithin).
	ReplyWithin time.Duration
	Rec         *history.Recorder
	Stderr      io.Writer
}

// Loop is what every client of a run does, whatever the workload: it
// loops acquire → protected writes through the hold → release, backing off
// at random while the lock is busy. The mutex workload writes the
// harness's counter; a database workload's workers write themselves, and
// one that reads (jobs) reads before each write what to write.
type Loop struct {
	cfg LoopConfig
	env *clientEnv
	res *resource.Counter

	stopping chan struct{}
	wg       sync.WaitGroup
	failed   chan struct{}
	failOnce sync.Once

	mu       sync.Mutex
	arms     []*freezeArm
	frozen   map[int]bool // slots a fault froze and has not thawed
	granted  []chan int
	released []chan int
	// holding is when each slot that holds the lock now was granted it.
	holding map[int]time.Time
	errs    []error
}

type freezeArm struct {
	point string
	got   chan frozenWorker
}

// StartLoop starts one worker per client and their loops.
func StartLoop(cfg LoopConfig) (*Loop, error) {
	m := &Loop{cfg: cfg, res: resource.NewCounter(cfg.Rec, cfg.Fenced), stopping: make(chan struct{}), failed: make(chan struct{}), frozen: map[int]bool{}, holding: map[int]time.Time{}}
	m.env = &clientEnv{rec: cfg.Rec, spawn: cfg.Spawn, hello: cfg.Hello, replyWithin: cmp.Or(cfg.ReplyWithin, DefaultReplyWithin), inside: cfg.Inside,
		stderr: cfg.Stderr, onPaused: m.onPaused}
	// The workers start at once: a worker is a process that takes tens of
	// milliseconds to say it is ready, and a run waits for every one
	// before its first operation.
	clients := make([]*Client, cfg.Clients)
	errs := make([]error, cfg.Clients)
	var started sync.WaitGroup
	for i := range clients {
		c, process := &Client{Slot: i, env: m.env}, m.env.newProcess()
		clients[i] = c
		started.Add(1)
		go func() {
			defer started.Done()
			errs[i] = c.startAs(process)
		}()
	}
	started.Wait()
	if err := cmp.Or(errs...); err != nil {
		for _, c := range clients {
			c.stop()
		}
		return nil, err
	}
	for _, c := range clients {
		m.wg.Add(1)
		rng := rand.New(rand.NewSource(cfg.Seed*1000 + int64(c.Slot)))
		go m.loop(c, rng)
	}
	return m, nil
}

// Failed is closed when a client cannot go on; Stop returns why.
func (m *Loop) Failed() <-chan struct{} { return m.failed }

// Stop lets every client finish its cycle (a holder still writes and
// releases), then ends the workers.
func (m *Loop) Stop() error {
	select {
	case <-m.stopping:
	default:
		close(m.stopping)
	}
	m.wg.Wait()
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.errs) > 0 {
		return m.errs[0]
	}
	return nil
}

// sleep waits d, or less when the workload is stopped meanwhile: a holder
// then releases at once, so that a run that ends early (an anomaly already
// certain) need not wait out every hold. It reports whether it slept d.
func (m *Loop) sleep(d time.Duration) bool {
	if d <= 0 {
		return !m.stopped()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-m.stopping:
		return false
	}
}

func (m *Loop) stopped() bool {
	select {
	case <-m.stopping:
		return true
	default:
		return false
	}
}

func (m *Loop) loop(c *Client, rng *rand.Rand) {
	defer m.wg.Done()
	defer c.stop()
	for attempt := 0; !m.stopped(); attempt++ {
		token := fmt.Sprintf("c%d-%d-%08x", c.Slot, attempt, rng.Uint32())
		key := m.cfg.Key
		if len(m.cfg.Keys) > 0 {
			key = m.cfg.Keys[rng.Intn(len(m.cfg.Keys))]
		}
		if err := m.cycle(c, key, token); err != nil {
			m.mu.Lock()
			m.errs = append(m.errs, err)
			m.mu.Unlock()
			m.failOnce.Do(func() { close(m.failed) })
			return
		}
		if c.w == nil {
			return
		}
		// Randomised backoff, also after a grant, so that holders rotate.
		if d := m.cfg.Backoff; d > 0 {
			time.Sleep(d/3 + time.Duration(rng.Int63n(int64(4*d/3))))
		}
	}
}

// cycle is one acquire → writes through the hold → release. It returns an
// error only when the client cannot go on (no worker could be started).
func (m *Loop) cycle(c *Client, key, token string) error {
	ttl := m.cfg.TTL
	r := c.Do(Request{Op: history.Acquire, Key: key, Token: token, TTLMs: ttl.Milliseconds(), Pause: m.armed()},
		history.Event{F: history.Acquire, Key: key, Token: token, TTLMs: ttl.Milliseconds()})
	switch r.Type {
	case history.Info:
		return c.replace()
	case history.Fail:
		return nil
	}
	if r.Refused {
		return m.release(c, key, token)
	}
	m.mu.Lock()
	m.holding[c.Slot] = time.Now()
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		delete(m.holding, c.Slot)
		m.mu.Unlock()
	}()
	m.notify(&m.granted, c.Slot)
	if alive, err := m.firstWrite(c, key, token, r.Fence); !alive {
		return err
	}
	// The hold is timed from the first write, as a caller's work is: a
	// pause before it stretches the cycle, not the work.
	start := time.Now()
	end, writes := start.Add(m.cfg.Hold), max(m.cfg.Writes, 1)
	// A caller of a lock that extends on request extends after its first
	// write, and again every TTL/2 while its work goes on; when an extend
	// fails it stops and gives the lock up.
	extending, nextExtend := m.cfg.Extend, start
	for k := 1; ; {
		nextWrite := start.Add(m.cfg.Hold * time.Duration(k) / time.Duration(writes))
		switch {
		case extending && !nextExtend.After(nextWrite):
			if !m.sleep(time.Until(nextExtend)) {
				return m.release(c, key, token)
			}
			ext := c.Do(Request{Op: history.Extend, Key: key, Token: token, TTLMs: ttl.Milliseconds()},
				history.Event{F: history.Extend, Key: key, Token: token, TTLMs: ttl.Milliseconds()})
			switch ext.Type {
			case history.Info:
				return c.replace()
			case history.Fail:
				return m.release(c, key, token)
			}
			nextExtend = time.Now().Add(ttl / 2)
			extending = time.Until(end) > ttl/2
		case k < writes:
			if !m.sleep(time.Until(nextWrite)) {
				return m.release(c, key, token)
			}
			if written, err := m.writeStep(c, key, token, r.Fence); !written {
				return err
			}
			k++
		default:
			m.sleep(time.Until(end))
			return m.release(c, key, token)
		}
	}
}

// firstWrite is the write right after the grant, at the harness's
// before-write pause point. alive is false when the cycle ends here (err
// says whether the client can go on).
func (m *Loop) firstWrite(c *Client, key, token string, fence int64) (alive bool, err error) {
	job, more, err := m.nextJob(c, key, token)
	if !more {
		return false, err
	}
	if alive, err := m.harnessPoint(c, PointBeforeWrite); err != nil || !alive {
		return false, c.replace()
	}
	return m.write(c, key, token, fence, job)
}

// writeStep is a later write of the hold: with jobs, of the next job.
func (m *Loop) writeStep(c *Client, key, token string, fence int64) (written bool, err error) {
	job, more, err := m.nextJob(c, key, token)
	if !more {
		return false, err
	}
	return m.write(c, key, token, fence, job)
}

// nextJob reads what a client of a workload that reads writes next (the
// job behind its key; 0 for other workloads). more is false when the cycle
// ends here: nothing is left (the client releases) or the read's outcome
// is unknown (err says whether the client can go on).
func (m *Loop) nextJob(c *Client, key, token string) (job int64, more bool, err error) {
	if !m.cfg.Reads {
		return 0, true, nil
	}
	rd := c.Do(Request{Op: history.Read, Key: key, Token: token}, history.Event{F: history.Read, Key: key, Token: token})
	if rd.Type == history.Info {
		return 0, false, c.replace()
	}
	if rd.Type != history.OK || rd.Value == 0 {
		return 0, false, m.release(c, key, token)
	}
	return rd.Value, true, nil
}

// write is the protected write. Into the in-memory counter, the harness
// reads the value and stores what the worker computed from it; into a
// database, the worker writes itself (a job's done row, or a fenced
// decrement) and the harness records its answer. written is false when
// the cycle ends here (err says whether the client can go on).
func (m *Loop) write(c *Client, key, token string, fence, job int64) (written bool, err error) {
	invoke := history.Event{Type: history.Invoke, Process: c.Process(), Client: c.Slot, F: history.Write, Key: key, Token: token, Fence: fence}
	if m.cfg.Database {
		inv := m.cfg.Rec.Record(invoke)
		w := c.call(Request{Op: history.Write, Key: key, Token: token, Value: job, Pause: m.armed()})
		done := inv
		done.Type, done.Error, done.Reason, done.Value = w.Type, w.Error, w.Reason, nil
		done.FenceChecked = m.cfg.FenceChecked && w.Type != history.Info
		if w.Type == history.OK {
			done.Value = history.Int64(w.Value)
		}
		m.cfg.Rec.Record(done)
		switch w.Type {
		case history.Info:
			return false, c.replace()
		case history.Fail:
			// Fenced out: the holder's lease is over; it lets the lock go.
			return false, m.release(c, key, token)
		}
		return true, nil
	}
	inv, v := m.res.Read(invoke)
	w := c.call(Request{Op: history.Write, Key: key, Token: token, Value: v, Pause: m.armed()})
	if w.Type != history.OK {
		done := inv
		done.Type, done.Error, done.Value = history.Info, w.Error, nil
		m.cfg.Rec.Record(done)
		return false, c.replace()
	}
	done := m.res.Write(history.Event{Process: c.Process(), Client: c.Slot, F: history.Write, Key: key, Token: token}, w.Value, w.Fence)
	if done.Type == history.Fail {
		// Fenced out, as from a database: the holder lets the lock go.
		return false, m.release(c, key, token)
	}
	return true, nil
}

func (m *Loop) release(c *Client, key, token string) error {
	rel := c.Do(Request{Op: history.Release, Key: key, Token: token},
		history.Event{F: history.Release, Key: key, Token: token})
	switch rel.Type {
	case history.Info:
		return c.replace()
	case history.OK:
		m.notify(&m.released, c.Slot)
	}
	return nil
}

// armed lists the worker's own pause points a fault is waiting on.
func (m *Loop) armed() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var points []string
	for _, a := range m.arms {
		if a.point != PointBeforeWrite {
			points = append(points, a.point)
		}
	}
	return points
}

// harnessPoint is one of the harness's own pause points, between two
// requests: when a fault waits on it, the client's worker is stopped here,
// process group and all, and the client goes on only once the fault thaws
// it. It reports whether the worker is still alive.
func (m *Loop) harnessPoint(c *Client, point string) (alive bool, err error) {
	m.mu.Lock()
	var arm *freezeArm
	for i, a := range m.arms {
		if a.point == point {
			arm = a
			m.arms = append(m.arms[:i], m.arms[i+1:]...)
			break
		}
	}
	m.mu.Unlock()
	if arm == nil {
		return true, nil
	}
	f := frozenWorker{c: c, w: c.w, thawed: make(chan bool, 1)}
	if f.err = c.w.stopGroup(); f.err != nil {
		// The fault learns it could not freeze; the client starts over
		// with a fresh worker.
		fmt.Fprintf(m.cfg.Stderr, "client %d: could not stop the worker at %s: %v\n", c.Slot, point, f.err)
		arm.got <- f
		return false, f.err
	}
	arm.got <- f
	return <-f.thawed, nil
}

func (m *Loop) onPaused(c *Client, w *workerProc, point string) {
	f := frozenWorker{c: c, w: w}
	m.mu.Lock()
	for i, a := range m.arms {
		if a.point == point {
			m.arms = append(m.arms[:i], m.arms[i+1:]...)
			m.mu.Unlock()
			a.got <- f
			return
		}
	}
	m.mu.Unlock()
	// Nobody wants this pause any more (the fault gave up or another client
	// got there first): let the worker go on.
	go f.resume()
}

// Freeze waits until a client stops at the pause point and returns its slot
// and how to resume or kill it.
func (m *Loop) Freeze(ctx context.Context, point string) (client int, resume, kill func() error, err error) {
	if m.cfg.Inside != nil {
		return 0, nil, nil, errors.New("the workers run inside the harness, where nothing can freeze them")
	}
	arm := &freezeArm{point: point, got: make(chan frozenWorker, 1)}
	m.mu.Lock()
	m.arms = append(m.arms, arm)
	m.mu.Unlock()
	select {
	case f := <-arm.got:
		if f.err != nil {
			return 0, nil, nil, f.err
		}
		slot := f.c.Slot
		m.setFrozen(slot, true)
		thaw := func(do func() error) func() error {
			return func() error {
				defer m.setFrozen(slot, false)
				return do()
			}
		}
		return slot, thaw(f.resume), thaw(f.kill), nil
	case <-ctx.Done():
		m.mu.Lock()
		claimed := true
		for i, a := range m.arms {
			if a == arm {
				m.arms = append(m.arms[:i], m.arms[i+1:]...)
				claimed = false
				break
			}
		}
		m.mu.Unlock()
		// A client claimed the arm just before we gave up: it is about
		// to hand over its frozen worker, which must go on.
		if claimed {
			if f := <-arm.got; f.err == nil {
				f.resume()
			}
		}
		return 0, nil, nil, ctx.Err()
	}
}

func (m *Loop) setFrozen(slot int, frozen bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if frozen {
		m.frozen[slot] = true
	} else {
		delete(m.frozen, slot)
	}
}

// Frozen lists the slots that a fault froze (Freeze) and has not yet
// resumed or killed.
func (m *Loop) Frozen() []int {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []int
	for slot := range m.frozen {
		out = append(out, slot)
	}
	sort.Ints(out)
	return out
}

// RecipePoint is where kill-client strikes: inside the recipe if it has a
// pause point of its own (for naive, between SETNX and EXPIRE), otherwise
// between acquire and write.
func (m *Loop) RecipePoint() string {
	if len(m.cfg.RecipePoints) > 0 {
		return m.cfg.RecipePoints[0]
	}
	return PointBeforeWrite
}

// AwaitGrant returns the slot of the next client whose acquire succeeds.
func (m *Loop) AwaitGrant(ctx context.Context) (int, error) { return m.await(ctx, &m.granted) }

// AwaitHolder returns the client that holds the lock now (the one granted
// last, when several keys are held) and how long it has held it, or, when
// none does, the next client granted it, held 0.
func (m *Loop) AwaitHolder(ctx context.Context) (int, time.Duration, error) {
	m.mu.Lock()
	slot, since := -1, time.Time{}
	for s, t := range m.holding {
		if slot < 0 || t.After(since) {
			slot, since = s, t
		}
	}
	m.mu.Unlock()
	if slot >= 0 {
		return slot, time.Since(since), nil
	}
	slot, err := m.AwaitGrant(ctx)
	return slot, 0, err
}

// AwaitRelease returns the slot of the next client whose release succeeds:
// the moment the lock is free.
func (m *Loop) AwaitRelease(ctx context.Context) (int, error) { return m.await(ctx, &m.released) }

func (m *Loop) await(ctx context.Context, waiters *[]chan int) (int, error) {
	ch := make(chan int, 1)
	m.mu.Lock()
	*waiters = append(*waiters, ch)
	m.mu.Unlock()
	select {
	case slot := <-ch:
		return slot, nil
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

func (m *Loop) notify(waiters *[]chan int, slot int) {
	m.mu.Lock()
	chans := *waiters
	*waiters = nil
	m.mu.Unlock()
	for _, ch := range chans {
		ch <- slot
	}
}

// FinalAcquire is the closing liveness check: after quiet without a
// client operation, a fresh client in slot Clients (with links of its own)
// tries to take the lock, every key of it (jobs), until within for each;
// each one taken it releases. It reports whether every key was taken. The
// client's worker starts during the quiet, which its start does not break:
// it sends no lock operation until asked.
func (m *Loop) FinalAcquire(quiet, within time.Duration) (bool, error) {
	quietEnds := time.Now().Add(quiet)
	c := &Client{Slot: m.cfg.Clients, final: true, env: m.env}
	if err := c.start(); err != nil {
		return false, err
	}
	defer c.stop()
	time.Sleep(time.Until(quietEnds))
	keys := m.cfg.Keys
	if len(keys) == 0 {
		keys = []string{m.cfg.Key}
	}
	all := true
	for i, key := range keys {
		ok, err := m.finalAcquire(c, key, fmt.Sprintf("final-%d", i), within)
		if err != nil {
			return false, err
		}
		all = all && ok
	}
	return all, nil
}

func (m *Loop) finalAcquire(c *Client, key, prefix string, within time.Duration) (bool, error) {
	ttl := m.cfg.TTL
	deadline := time.Now().Add(within)
	for attempt := 0; time.Now().Before(deadline); attempt++ {
		token := fmt.Sprintf("%s-%d", prefix, attempt)
		r := c.Do(Request{Op: history.Acquire, Key: key, Token: token, TTLMs: ttl.Milliseconds()},
			history.Event{F: history.Acquire, Key: key, Token: token, TTLMs: ttl.Milliseconds()})
		switch r.Type {
		case history.OK:
			c.Do(Request{Op: history.Release, Key: key, Token: token}, history.Event{F: history.Release, Key: key, Token: token})
			return true, nil
		case history.Info:
			if err := c.replace(); err != nil {
				return false, err
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false, nil
}
