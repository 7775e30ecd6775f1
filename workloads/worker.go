package workloads

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/lockharness/lockharness/access"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/internal/version"
	"github.com/lockharness/lockharness/locks"
	"github.com/lockharness/lockharness/resource"
)

// WorkerConfig is how `harness worker` is told what to run; where the lock
// service is comes in the hello line.
type WorkerConfig struct {
	Lock string
	// Inside: the worker runs inside the harness (LoopConfig.Inside), whose
	// process a pause point must never stop.
	Inside bool
}

// worker executes requests one at a time, as a client process would.
type worker struct {
	out    *json.Encoder
	outMu  sync.Mutex
	locker locks.Locker
	recipe string
	leases map[string]locks.Lease
	armed  map[string]bool
	inside bool
	client int
	// db writes the protected writes when the resource is a database, as
	// the workload's tables say.
	db     *resource.Writer
	tables *Tables
}

// RunWorker speaks the worker protocol on in and out until in is closed:
// hello, ready, then one reply per request. It is the body of the hidden
// `harness worker` command, the built-in worker.
func RunWorker(in io.Reader, out io.Writer, cfg WorkerConfig) error {
	lock, err := locks.ParseLock(cfg.Lock)
	if err != nil {
		return err
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	if !sc.Scan() {
		return fmt.Errorf("worker: no hello line: %v", sc.Err())
	}
	var hello Hello
	if err := json.Unmarshal(sc.Bytes(), &hello); err != nil || hello.Op != OpHello {
		return fmt.Errorf("worker: the first line must be a hello, got %q", sc.Text())
	}
	if hello.Protocol != Protocol {
		return fmt.Errorf("worker: the harness speaks protocol %d; this worker speaks %d", hello.Protocol, Protocol)
	}
	w := &worker{out: json.NewEncoder(out), leases: map[string]locks.Lease{}, recipe: lock.Name, inside: cfg.Inside}
	renewals := RenewNone
	if lock.Renews {
		renewals = RenewReported
	}
	w.send(Ready{Kind: KindReady, Protocol: Protocol, Name: lock.Name, Version: version.Harness(),
		Extend: lock.Extends, Fences: lock.Fences, Renewals: renewals, Points: lock.Points, Needs: lock.Needs, Prefers: lock.Prefers,
		Writes: databases()})
	if hello.Probe {
		return nil
	}
	opTimeout := time.Duration(hello.OpTimeoutMs) * time.Millisecond
	w.client = hello.Client
	if d := hello.Database; d != nil {
		if w.db, w.tables, err = newDatabaseWriter(d); err != nil {
			w.send(Message{Kind: KindFatal, Error: err.Error()})
			return err
		}
		defer w.db.Close()
	}
	client, nodes := locks.NewService(hello.Access(), opTimeout)
	defer func() {
		client.Close()
		for _, c := range nodes[min(1, len(nodes)):] {
			c.Close()
		}
	}()
	w.locker = lock.NewLocker(locks.Config{
		Access:    hello.Access(),
		Client:    client,
		Nodes:     nodes,
		OpTimeout: opTimeout,
		Pause:     w.pausePoint,
		Observe:   w.observe,
	})
	defer w.locker.Close()

	for sc.Scan() {
		var req Request
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
			return fmt.Errorf("worker: bad request %q: %v", sc.Text(), err)
		}
		w.armed = map[string]bool{}
		for _, p := range req.Pause {
			w.armed[p] = true
		}
		reply := w.do(req)
		if credentialsRefused(reply.Error) {
			w.send(Message{Kind: KindFatal, Error: "the servers refuse this client's credentials: " + reply.Error})
		}
		w.send(reply)
	}
	return sc.Err()
}

// databases are the resources the built-in worker writes to itself:
// every database.
func databases() []string {
	var out []string
	for _, r := range resource.Resources {
		if r.Database {
			out = append(out, r.Name)
		}
	}
	return out
}

// ServeWorker is the built-in worker's process, as `harness worker` runs
// it: the protocol on stdin and stdout until stdin closes, why it stopped
// on stderr. It returns the process's exit code, 255 for a failure.
func ServeWorker(cfg WorkerConfig, stderr io.Writer) int {
	// A worker is a child of the harness; Ctrl-C is the harness's to handle.
	signal.Ignore(syscall.SIGINT)
	// A worker's heap is a few requests and one connection pool: collecting
	// at 9 times it instead of twice costs megabytes and spares the
	// collector's turns that every operation's garbage started (issue 34:
	// make bench-ops 16.4-17.2k ops/s against 15.5-16.1k, alternated).
	debug.SetGCPercent(800)
	if err := RunWorker(os.Stdin, os.Stdout, cfg); err != nil {
		fmt.Fprintf(stderr, "worker: %v\n", err)
		return 255
	}
	return 0
}

// newDatabaseWriter is the writer a hello's database asks for, and the
// tables of its workload.
func newDatabaseWriter(d *Database) (*resource.Writer, *Tables, error) {
	if r, ok := resource.Lookup(d.Kind); !ok || !r.Database {
		return nil, nil, fmt.Errorf("this worker writes to %s only, not %q", strings.Join(databases(), ", "), d.Kind)
	}
	wl, err := Lookup(d.Workload)
	if err != nil {
		return nil, nil, fmt.Errorf("the hello's database: %w", err)
	}
	if !wl.WritesTo(d.Kind) {
		return nil, nil, fmt.Errorf("the hello's database workload %s does not write to %s", wl.Name, d.Kind)
	}
	if d.Fencing != "" && d.Fencing != resource.FenceNone && d.Fencing != resource.FenceSQL && !slices.Contains(wl.Fencings, d.Fencing) {
		return nil, nil, fmt.Errorf("the hello's fencing %q is not one of workload %s's: %s", d.Fencing, wl.Name, strings.Join(append([]string{resource.FenceNone}, wl.Fencings...), ", "))
	}
	cfg := resource.WriterConfig{DSN: d.DSN, SKU: cmp.Or(d.SKU, wl.Tables.SKU), Fencing: d.Fencing, Idempotent: d.Idempotent,
		Timeout: time.Duration(d.TimeoutMs) * time.Millisecond}
	if d.Fencing == resource.FenceSQL {
		st, err := resource.ParseStatement(d.SQL)
		if err != nil {
			return nil, nil, fmt.Errorf("the hello's sql: %w", err)
		}
		cfg.Statement = st
	}
	return resource.NewWriter(cfg), wl.Tables, nil
}

// credentialsRefused reports whether an error says the servers will not
// serve this client at all: a wrong password, no AUTH, or an ACL that
// denies the lock's commands. Retrying cannot help; the run must end.
func credentialsRefused(msg string) bool {
	for _, code := range []string{"WRONGPASS", "NOAUTH", "NOPERM"} {
		if strings.Contains(msg, code) {
			return true
		}
	}
	return false
}

// Access is where the hello says the lock service is: the access it
// carries on the wire (SetAccess), as the built-in recipes' clients take it.
func (h Hello) Access() access.Access {
	a := access.Access{Dial: h.Dial, Nodes: h.Nodes, Cluster: h.Cluster, Etcd: h.Etcd}
	if h.Auth != nil {
		a.Username, a.Password = h.Auth.Username, h.Auth.Password
	}
	if h.TLS != nil {
		a.TLS, a.CAFile, a.ServerName = true, h.TLS.CAFile, h.TLS.ServerName
	}
	if h.Sentinel != nil {
		a.Master, a.Sentinels, a.Nodes = h.Sentinel.Master, h.Sentinel.Addrs, nil
	}
	return a
}

// HelloFor is the hello of slot's worker in a run on the topology: how that
// client reaches the lock service (every address its own link), the bound
// on each command and how long the harness waits for a reply.
func HelloFor(slot int, topology string, a access.Access, opTimeout, replyWithin time.Duration) Hello {
	h := NewHello(slot)
	h.Topology, h.OpTimeoutMs, h.ReplyWithinMs = topology, opTimeout.Milliseconds(), replyWithin.Milliseconds()
	h.SetAccess(a)
	return h
}

// SetAccess puts a client's access into the hello, in the worker
// protocol's shape (docs/worker-protocol.md).
func (h *Hello) SetAccess(a access.Access) {
	h.Dial = a.Dial
	if a.Master != "" {
		h.Sentinel = &SentinelService{Master: a.Master, Addrs: a.Sentinels}
	} else {
		h.Nodes, h.Cluster, h.Etcd = a.Nodes, a.Cluster, a.Etcd
	}
	if a.Username != "" || a.Password != "" {
		h.Auth = &Auth{Username: a.Username, Password: a.Password}
	}
	if a.TLS {
		h.TLS = &TLS{CAFile: a.CAFile, ServerName: a.ServerName}
	}
}

func (w *worker) send(m any) {
	w.outMu.Lock()
	defer w.outMu.Unlock()
	w.out.Encode(m)
}

// pausePoint stops the whole process, watchdog included, when the harness
// armed this point. The notice goes out first so the harness knows where
// the client froze; the harness waits for the kernel to report the stop
// before it sends SIGCONT.
func (w *worker) pausePoint(point string) {
	if !w.armed[point] {
		return
	}
	delete(w.armed, point)
	if w.inside {
		w.send(Message{Kind: KindFatal, Error: "pause point " + point + " armed for a worker inside the harness, which must not stop"})
		return
	}
	w.send(Message{Kind: KindPaused, Point: point})
	stopSelf()
}

// stopSelf freezes the process here and now. A process-directed SIGSTOP
// may be taken by another thread while this one runs on for a moment and,
// say, answers the request it was meant to freeze before; a signal aimed at
// this very thread stops it before the syscall returns, and the group stop
// takes every other thread with it.
func stopSelf() {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	syscall.Tgkill(os.Getpid(), syscall.Gettid(), syscall.SIGSTOP)
}

func (w *worker) observe(op locks.Op) {
	m := Message{Kind: KindEvent, Type: op.Outcome, F: op.F, Key: op.Key, Token: op.Token, TTLMs: op.TTL.Milliseconds()}
	if op.Err != nil {
		m.Error = op.Err.Error()
	}
	if m.Type == history.Fail {
		m.Reason = Reason(op.Err)
	}
	w.send(m)
}

func (w *worker) do(req Request) Message {
	m := Message{Kind: KindReply, ID: req.ID, F: req.Op, Key: req.Key, Token: req.Token}
	ctx := context.Background()
	var err error
	switch req.Op {
	case history.Acquire:
		var lease locks.Lease
		lease, err = w.locker.Acquire(ctx, req.Key, req.Token, time.Duration(req.TTLMs)*time.Millisecond)
		if errors.Is(err, locks.ErrUnreplicated) {
			// The grant happened; the client refuses to use it. The
			// history says so truthfully: ok, with the refusal as error.
			m.Refused, m.Error, err = true, err.Error(), nil
		}
		if err == nil {
			w.leases[req.Key] = lease
			m.Fence, m.ValidMs = lease.Fence, lease.Valid.Milliseconds()
		}
	case history.Release:
		lease, ok := w.leases[req.Key]
		if !ok || lease.Token != req.Token {
			err = fmt.Errorf("%w: this worker holds no lease %s on %s", locks.ErrNotHeld, req.Token, req.Key)
			break
		}
		delete(w.leases, req.Key)
		err = w.locker.Release(ctx, lease)
	case history.Extend:
		lease, ok := w.leases[req.Key]
		ext, can := w.locker.(locks.Extender)
		switch {
		case !ok || lease.Token != req.Token:
			err = fmt.Errorf("%w: this worker holds no lease %s on %s", locks.ErrNotHeld, req.Token, req.Key)
		case !can:
			err = fmt.Errorf("%w: lock %s cannot extend", locks.ErrNotHeld, w.recipe)
		default:
			if lease, err = ext.Extend(ctx, lease, time.Duration(req.TTLMs)*time.Millisecond); err == nil {
				w.leases[req.Key] = lease
				m.ValidMs = lease.Valid.Milliseconds()
			}
		}
	case history.Read:
		if w.db == nil {
			err = fmt.Errorf("%w: read needs a database (the hello named none)", errRefused)
			break
		}
		if w.tables.Read == nil {
			err = fmt.Errorf("%w: the hello's workload reads nothing before it writes", errRefused)
			break
		}
		m.Value, err = w.db.Read(req.Key, w.tables.Read)
	case history.Write:
		lease := w.leases[req.Key]
		if w.db == nil {
			// The read-modify-write: the harness read Value; this client
			// writes Value+1 under what it believes is its lease.
			m.Token, m.Fence, m.Value = lease.Token, lease.Fence, req.Value+1
			break
		}
		var o resource.Outcome
		o, err = w.db.Write(resource.Write{Client: w.client, Key: req.Key, Token: req.Token, Fence: lease.Fence, Job: req.Value}, w.tables.Write)
		m.Fence, m.Value = lease.Fence, o.Stored
		if err == nil && o.Refused {
			err = fmt.Errorf("%w: %s", errRefused, o.Why)
		}
	default:
		err = fmt.Errorf("unknown op %q", req.Op)
	}
	m.Type, m.Reason = Outcome(err), Reason(err)
	if errors.Is(err, errRefused) {
		m.Type, m.Reason = history.Fail, history.ReasonRejected
	}
	if err != nil {
		m.Error = err.Error()
	}
	return m
}

// errRefused is a write the resource refused (a fence that lost) or a
// request this worker cannot serve: definitely not done, and nothing to do
// with the lock.
var errRefused = errors.New("refused")

// Reason is what a failed operation's error says about the lock: busy,
// not-held, or rejected (nothing about the lock: READONLY, a lost quorum,
// ...); "" when err is not a definite failure.
func Reason(err error) string {
	switch {
	case err == nil || !locks.Definite(err):
		return ""
	case errors.Is(err, locks.ErrBusy):
		return history.ReasonBusy
	case errors.Is(err, locks.ErrNotHeld):
		return history.ReasonNotHeld
	}
	return history.ReasonRejected
}

// Outcome maps an operation's error to its history completion type.
func Outcome(err error) string {
	switch {
	case err == nil:
		return history.OK
	case locks.Definite(err):
		return history.Fail
	default:
		return history.Info
	}
}
