package workloads

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/internal/proc"
	"github.com/lockharness/lockharness/resource"
)

// Conformance is the report of a worker's scripted session: what it did
// right, and every mistake in plain words.
type Conformance struct {
	Ready    Ready
	Passed   []string
	Problems []string
}

// OK reports whether the worker made no mistake.
func (c *Conformance) OK() bool { return len(c.Problems) == 0 }

// ConformanceConfig is what the session runs against.
type ConformanceConfig struct {
	// Addr is a Redis the session may use freely (the check flushes it),
	// for a session on one node; or give Hello and Servers.
	Addr string
	// Hello is the session's hello with where the service is (topology,
	// nodes, sentinel, dial, credentials, a database); the session fills
	// in its timeouts and client slot.
	Hello Hello
	// Servers is what the session asks of the servers behind Hello.
	Servers Servers
	// Key is the lock key the session uses (default CheckKey).
	Key         string
	OpTimeout   time.Duration
	ReplyWithin time.Duration
	// Stderr receives the worker's stderr.
	Stderr io.Writer
}

// CheckKey is the lock key a conformance session uses.
const CheckKey = "lockharness-check"

// Servers is what a conformance session asks of the servers behind its
// hello, to see that the worker did what it answered.
type Servers interface {
	// Flush empties the lock's servers before the session.
	Flush(ctx context.Context) error
	// Keys counts the keys the lock's servers hold.
	Keys(ctx context.Context) (int64, error)
	// Rows counts the rows the database holds of writes under token: the
	// inventory's ledger, or jobs done.
	Rows(ctx context.Context, token string) (int64, error)
	// FenceAbove stores a fence higher than any the lock can hand out, so
	// that a fenced write must be refused.
	FenceAbove(ctx context.Context) error
}

// nodeServers is one Redis node, with no database.
type nodeServers struct{ rdb *redis.Client }

func (n nodeServers) Flush(ctx context.Context) error { return n.rdb.FlushAll(ctx).Err() }
func (n nodeServers) Keys(ctx context.Context) (int64, error) {
	return n.rdb.DBSize(ctx).Result()
}
func (nodeServers) Rows(context.Context, string) (int64, error) { return 0, errors.New("no database") }
func (nodeServers) FenceAbove(context.Context) error            { return errors.New("no database") }

// CheckWorker runs cmd through a scripted session against the servers of
// cfg: handshake, acquire, busy, write (to the database when the hello
// names one: a row under its token, a fenced write refused, a job read),
// extend (if offered), a release of a lease it does not hold, release, a
// renewal event (if offered), and an orderly exit when stdin closes.
func CheckWorker(ctx context.Context, cmd *exec.Cmd, cfg ConformanceConfig) (*Conformance, error) {
	if cfg.Servers == nil {
		rdb := redis.NewClient(&redis.Options{Addr: cfg.Addr})
		defer rdb.Close()
		cfg.Servers = nodeServers{rdb}
		cfg.Hello = NewHello(0)
		cfg.Hello.Topology, cfg.Hello.Nodes = "single", []string{cfg.Addr}
	}
	if cfg.Key == "" {
		cfg.Key = CheckKey
	}
	if err := cfg.Servers.Flush(ctx); err != nil {
		return nil, fmt.Errorf("the session's servers: %w", err)
	}
	s, err := startSession(cmd, cfg)
	if err != nil {
		return nil, err
	}
	defer s.kill()
	rep := &Conformance{}
	s.run(ctx, rep)
	rep.Problems = append(rep.Problems, s.lineProblems()...)
	return rep, nil
}

// session is one worker under conformance test: every line it writes is
// checked as it arrives.
type session struct {
	cfg   ConformanceConfig
	cmd   *exec.Cmd
	stdin io.WriteCloser

	lines chan []byte
	// peeked are lines read ahead and put back, oldest first.
	peeked  [][]byte
	exited  chan struct{}
	waitErr error

	mu       sync.Mutex
	problems []string
	badLines int
	events   []Message
}

func startSession(cmd *exec.Cmd, cfg ConformanceConfig) (*session, error) {
	s := &session{cfg: cfg, cmd: cmd, lines: make(chan []byte, 64), exited: make(chan struct{})}
	var err error
	if s.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = cfg.Stderr
	if err := proc.Start(cmd); err != nil {
		return nil, fmt.Errorf("start the worker: %w", err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			s.lines <- bytes.Clone(sc.Bytes())
		}
		s.waitErr = cmd.Wait()
		proc.Forget(cmd)
		close(s.exited)
	}()
	return s, nil
}

func (s *session) kill() {
	proc.Kill(s.cmd)
	syscall.Kill(-s.cmd.Process.Pid, syscall.SIGCONT)
	// Drain what it wrote, so its reader can reach the end and reap it.
	for {
		select {
		case <-s.lines:
		case <-s.exited:
			return
		}
	}
}

// Line outcomes of readLine.
const (
	gotLine = iota
	workerExited
	timedOut
)

// readLine is the worker's next line within d, a line put back first; a
// worker that exited still has its last lines read.
func (s *session) readLine(d time.Duration) ([]byte, int) {
	if len(s.peeked) > 0 {
		line := s.peeked[0]
		s.peeked = s.peeked[1:]
		return line, gotLine
	}
	select {
	case line := <-s.lines:
		return line, gotLine
	case <-s.exited:
		select {
		case line := <-s.lines:
			return line, gotLine
		default:
			return nil, workerExited
		}
	case <-time.After(d):
		return nil, timedOut
	}
}

// putBack returns a line read ahead; it comes next.
func (s *session) putBack(line []byte) { s.peeked = append([][]byte{line}, s.peeked...) }

func (s *session) problem(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.problems = append(s.problems, fmt.Sprintf(format, args...))
}

// shownBadLines is how many stdout lines that are not messages are named
// one by one; the rest are counted.
const shownBadLines = 3

// badLine notes a stdout line that is not a protocol message.
func (s *session) badLine(line []byte, err error) {
	s.mu.Lock()
	s.badLines++
	n := s.badLines
	s.mu.Unlock()
	if n <= shownBadLines {
		s.problem("stdout line %q: %v (stdout carries protocol lines only; write logs to stderr)", line, err)
	}
}

func (s *session) lineProblems() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if more := s.badLines - shownBadLines; more > 0 {
		return append(s.problems, fmt.Sprintf("%d more stdout lines that are not protocol lines", more))
	}
	return s.problems
}

// errGone ends a session whose worker can no longer answer.
var errGone = errors.New("the worker is gone")

// next is the worker's next line within d; a line that is not a message
// is a problem and skipped.
func (s *session) next(d time.Duration, waitingFor string) (Message, []byte, error) {
	deadline := time.Now().Add(d)
	for {
		line, got := s.readLine(time.Until(deadline))
		switch got {
		case workerExited:
			s.problem("it crashed while the harness waited for its %s: %s", waitingFor, exitStatus(s.waitErr))
			return Message{}, nil, errGone
		case timedOut:
			s.problem("no %s within %v", waitingFor, d)
			return Message{}, nil, errGone
		}
		m, err := decodeMessage(line)
		if err != nil {
			s.badLine(line, err)
			continue
		}
		return m, line, nil
	}
}

// decodeMessage decodes a worker line strictly: one JSON object, known
// kind, every field of its type.
func decodeMessage(line []byte) (Message, error) {
	var m Message
	if err := strictUnmarshal(line, &m); err != nil {
		return m, err
	}
	switch m.Kind {
	case KindReply, KindEvent, KindPaused, KindFatal, KindReady:
	case "":
		return m, errors.New(`it has no "kind"`)
	default:
		return m, fmt.Errorf("unknown kind %q (valid: %s, %s, %s, %s)", m.Kind, KindReply, KindEvent, KindPaused, KindFatal)
	}
	return m, nil
}

func jsonKind(goKind string) string {
	switch {
	case strings.HasPrefix(goKind, "int"):
		return "number"
	case goKind == "bool":
		return "boolean"
	case goKind == "slice":
		return "list"
	}
	return goKind
}

func exitStatus(err error) string {
	if err == nil {
		return "it exited with status 0"
	}
	return err.Error()
}

// call sends req and returns its reply. Events that arrive meanwhile are
// kept; a reply to another id, or a second reply, is a problem.
func (s *session) call(req Request) (Message, error) {
	line, _ := json.Marshal(req)
	if _, err := s.stdin.Write(append(line, '\n')); err != nil {
		s.problem("it stopped reading its stdin before %s %d: %v", req.Op, req.ID, err)
		return Message{}, errGone
	}
	what := fmt.Sprintf("reply to %s (id %d)", req.Op, req.ID)
	for {
		m, raw, err := s.next(s.cfg.ReplyWithin, what)
		if err != nil {
			return m, err
		}
		switch m.Kind {
		case KindEvent:
			s.mu.Lock()
			s.events = append(s.events, m)
			s.mu.Unlock()
			continue
		case KindReply:
		default:
			s.problem("a %q line during %s: %s", m.Kind, req.Op, raw)
			if m.Kind == KindFatal {
				return m, errGone
			}
			continue
		}
		if m.ID == 0 {
			s.problem(`a reply without "id" during %s (id %d): %s`, req.Op, req.ID, raw)
			continue
		}
		if m.ID != req.ID {
			s.problem("a reply to id %d, which is not the outstanding request (id %d, %s): %s", m.ID, req.ID, req.Op, raw)
			continue
		}
		if err := checkReply(m, raw); err != nil {
			s.problem("%s reply %s: %v", req.Op, raw, err)
		}
		s.settle(req)
		return m, nil
	}
}

// settle notices a second reply to the request just answered.
func (s *session) settle(req Request) {
	line, got := s.readLine(50 * time.Millisecond)
	if got != gotLine {
		return
	}
	if m, err := decodeMessage(line); err == nil && m.Kind == KindReply && m.ID == req.ID {
		s.problem("a second reply to %s (id %d): %s (one request, one reply)", req.Op, req.ID, line)
		return
	}
	s.putBack(line)
}

func checkReply(m Message, raw []byte) error {
	switch m.Type {
	case history.OK, history.Info:
	case history.Fail:
		switch m.Reason {
		case history.ReasonBusy, history.ReasonNotHeld, history.ReasonRejected:
		case "":
			return errors.New(`a fail without "reason" (busy, not-held or rejected)`)
		default:
			return fmt.Errorf("reason %q (valid: busy, not-held, rejected)", m.Reason)
		}
	case "":
		return errors.New(`it has no "type" (ok, fail or info)`)
	default:
		return fmt.Errorf("type %q (valid: ok, fail, info)", m.Type)
	}
	return nil
}

func (s *session) run(ctx context.Context, rep *Conformance) {
	pass := func(format string, args ...any) { rep.Passed = append(rep.Passed, fmt.Sprintf(format, args...)) }
	h := s.cfg.Hello
	h.Op, h.Protocol, h.OpTimeoutMs, h.ReplyWithinMs = OpHello, Protocol, s.cfg.OpTimeout.Milliseconds(), s.cfg.ReplyWithin.Milliseconds()
	hello, _ := json.Marshal(h)
	if _, err := s.stdin.Write(append(hello, '\n')); err != nil {
		s.problem("it took no hello: %v", err)
		return
	}
	var first []byte
	select {
	case first = <-s.lines:
	case <-s.exited:
		s.problem("it exited before its ready line: %s", exitStatus(s.waitErr))
		return
	case <-time.After(readyWithin):
		s.problem("no ready line within %v", readyWithin)
		return
	}
	r, err := ParseReady(first)
	if err != nil {
		s.problem("%v", err)
		return
	}
	rep.Ready = r
	where := fmt.Sprintf("topologies %v", r.Topologies)
	if len(r.Needs) > 0 {
		where = fmt.Sprintf("needs %v", r.Needs)
		if len(r.Prefers) > 0 {
			where += fmt.Sprintf(", prefers %v", r.Prefers)
		}
	}
	pass("handshake: %s %s, protocol %d, extend %v, fences %v, renewals %s, points %v, %s",
		r.Name, r.Version, r.Protocol, r.Extend, r.Fences, r.Renewals, r.Points, where)

	key := s.cfg.Key
	ttl := int64(2000)
	id := int64(0)
	call := func(req Request) (Message, bool) {
		id++
		req.ID, req.Key = id, key
		m, err := s.call(req)
		return m, err == nil
	}
	want := func(step string, m Message, typ, reason string) bool {
		if m.Type != typ || (reason != "" && m.Reason != reason) {
			got := outcome(m.Type, m.Reason)
			if m.Error != "" {
				got += ": " + m.Error
			}
			s.problem("%s answered %s; want %s", step, got, outcome(typ, reason))
			return false
		}
		pass("%s: %s", step, outcome(typ, reason))
		return true
	}

	m, ok := call(Request{Op: history.Acquire, Token: "A", TTLMs: ttl})
	if !ok {
		return
	}
	if want("acquire of a free lock", m, history.OK, "") {
		if m.ValidMs <= 0 || m.ValidMs > ttl {
			s.problem("acquire's valid_ms is %d; want the lease the client believes in, 1..%d ms", m.ValidMs, ttl)
		}
		if n, err := s.cfg.Servers.Keys(ctx); err == nil && n == 0 {
			s.problem("acquire answered ok, but the servers hold no key at all")
		}
	}
	if m, ok = call(Request{Op: history.Acquire, Token: "B", TTLMs: ttl}); !ok {
		return
	}
	want("acquire of a held lock (another token)", m, history.Fail, history.ReasonBusy)
	if db := h.Database; db != nil {
		if !s.databaseWrites(ctx, db, r, call, want, pass) {
			return
		}
	} else {
		if m, ok = call(Request{Op: history.Write, Token: "A", Value: 41}); !ok {
			return
		}
		if want("write under the lease", m, history.OK, "") && (m.Value != 42 || m.Token != "A") {
			s.problem("write answered value %d token %q; want value 42 (the value sent plus one) under token \"A\"", m.Value, m.Token)
		}
	}
	if r.Extend {
		if m, ok = call(Request{Op: history.Extend, Token: "A", TTLMs: 3 * ttl}); !ok {
			return
		}
		if want("extend of the lease", m, history.OK, "") && m.ValidMs <= ttl {
			s.problem("extend to %d ms answered valid_ms %d; want more than the %d ms of the grant", 3*ttl, m.ValidMs, ttl)
		}
	}
	if m, ok = call(Request{Op: history.Release, Token: "B"}); !ok {
		return
	}
	want("release of a lease it does not hold", m, history.Fail, history.ReasonNotHeld)
	if m, ok = call(Request{Op: history.Release, Token: "A"}); !ok {
		return
	}
	want("release of its lease", m, history.OK, "")
	if m, ok = call(Request{Op: history.Acquire, Token: "C", TTLMs: ttl}); !ok {
		return
	}
	if want("acquire after the release", m, history.OK, "") {
		if r.Renewals == RenewReported {
			s.checkRenewals(ctx, "C", rep)
		}
		if m, ok = call(Request{Op: history.Release, Token: "C"}); !ok {
			return
		}
		want("release", m, history.OK, "")
	}
	s.checkEvents(rep)
	s.stdin.Close()
	select {
	case <-s.exited:
		pass("exit when stdin closed")
	case <-time.After(2 * time.Second):
		s.problem("it did not exit within 2s of its stdin closing")
	}
}

// databaseWrites holds the lease "A" to what it writes to the database
// itself, as the hello's workload does: a read (jobs) names what waits
// behind the key, a write leaves one row under its token in the
// workload's table of accepted writes (the ledger, done), and, fenced, a
// write under a fence lower than the one the database holds is refused. It
// reports whether the session can go on.
func (s *session) databaseWrites(ctx context.Context, db *Database, r Ready, call func(Request) (Message, bool),
	want func(string, Message, string, string) bool, pass func(string, ...any)) bool {
	rows := func(step string, n int64) {
		got, err := s.cfg.Servers.Rows(ctx, "A")
		switch {
		case err != nil:
			s.problem("%s: the database could not be read: %v", step, err)
		case got != n:
			s.problem("%s: the database holds %s of token \"A\"; want %d", step, rowCount(got), n)
		default:
			pass("%s: %s of its token in the database", step, rowCount(n))
		}
	}
	wl, err := Lookup(db.Workload)
	if err != nil {
		s.problem("the session's database: %v", err)
		return true
	}
	var job int64
	if wl.Reads() {
		m, ok := call(Request{Op: history.Read, Token: "A"})
		if !ok {
			return false
		}
		if !want("read of what to write", m, history.OK, "") {
			return true
		}
		if m.Value <= 0 {
			s.problem("read answered %d; want what waits behind the key (the first job)", m.Value)
			return true
		}
		job = m.Value
	}
	m, ok := call(Request{Op: history.Write, Token: "A", Value: job})
	if !ok {
		return false
	}
	if want("write to the database under the lease", m, history.OK, "") {
		rows(fmt.Sprintf("the write's %s row", wl.Tables.Table), 1)
	}
	if !r.Fences || db.Fencing == resource.FenceNone {
		return true
	}
	if err := s.cfg.Servers.FenceAbove(ctx); err != nil {
		s.problem("the database's fence could not be raised: %v", err)
		return true
	}
	if m, ok = call(Request{Op: history.Write, Token: "A"}); !ok {
		return false
	}
	if want("write under a fence lower than the database holds", m, history.Fail, history.ReasonRejected) {
		rows("after the refused write", 1)
	}
	return true
}

func rowCount(n int64) string {
	if n == 1 {
		return "1 row"
	}
	return fmt.Sprintf("%d rows", n)
}

// outcome writes a reply's type and reason as the report does: fail (busy).
func outcome(typ, reason string) string {
	if reason != "" {
		return typ + " (" + reason + ")"
	}
	return typ
}

// checkRenewals waits past the grant's TTL for the renewal events a worker
// announcing reported renewals must send.
func (s *session) checkRenewals(ctx context.Context, token string, rep *Conformance) {
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		line, got := s.readLine(100 * time.Millisecond)
		if got == workerExited {
			return
		}
		if got == timedOut {
			continue
		}
		m, err := decodeMessage(line)
		if err != nil {
			s.badLine(line, err)
			continue
		}
		if m.Kind != KindEvent {
			s.problem("a %q line while it held the lock and nothing was asked: %s", m.Kind, line)
			continue
		}
		s.mu.Lock()
		s.events = append(s.events, m)
		s.mu.Unlock()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.events {
		if e.F == history.Extend && e.Type == history.OK && e.Token == token {
			rep.Passed = append(rep.Passed, "renewal events while holding past its TTL")
			return
		}
	}
	s.problems = append(s.problems, fmt.Sprintf("it announced reported renewals, but held a 2s lease for 3s without an extend event (ok) for token %q", token))
}

// checkEvents holds the background events to their pairing: each invoke
// one completion, of a known type.
func (s *session) checkEvents(rep *Conformance) {
	s.mu.Lock()
	defer s.mu.Unlock()
	open := map[string]bool{}
	for _, e := range s.events {
		id := e.F + " " + e.Token
		switch {
		case e.F != history.Extend && e.F != history.Release && e.F != history.Lost:
			s.problems = append(s.problems, fmt.Sprintf("an event with f %q; events are extend, release or lost", e.F))
		case e.F == history.Lost:
		case e.Type == history.Invoke:
			if open[id] {
				s.problems = append(s.problems, fmt.Sprintf("two outstanding %s events for token %q: the second began before the first ended", e.F, e.Token))
			}
			open[id] = true
		case e.Type == history.OK || e.Type == history.Fail || e.Type == history.Info:
			if !open[id] {
				s.problems = append(s.problems, fmt.Sprintf("an %s %s event for token %q that never began (no invoke)", e.F, e.Type, e.Token))
			}
			delete(open, id)
		default:
			s.problems = append(s.problems, fmt.Sprintf("an event of type %q (valid: invoke, ok, fail, info)", e.Type))
		}
	}
	if len(s.events) > 0 {
		rep.Passed = append(rep.Passed, fmt.Sprintf("%d background events", len(s.events)))
	}
}
