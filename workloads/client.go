package workloads

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/lockharness/lockharness/access"
	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/internal/proc"
)

// Spawn builds the command of a worker process for a client slot; the
// command carries the slot's own links to the lock service.
type Spawn func(slot int) *exec.Cmd

// DefaultReplyWithin is how long the harness waits for a reply before it
// declares a worker hung, records the operation as info and replaces the
// worker. Frozen workers are excluded: a pause is released by its fault.
const DefaultReplyWithin = 30 * time.Second

// readyWithin bounds the handshake: from the start of a worker to its
// ready line. It is a bound on a worker that will never speak, not on a
// slow one: redis-py's worker, starting in the harness's image while a CI
// machine's two cores also ran three test shards, took more than 10 s to
// import what it needs.
const readyWithin = 30 * time.Second

// Client is one client slot: a lane in the timeline, served by a sequence
// of worker processes. After an info the worker is replaced by a fresh one
// with a new process number, as in Jepsen, because the old one never
// finished its operation.
type Client struct {
	Slot  int
	final bool
	env   *clientEnv

	w     *workerProc
	reqID int64
}

// clientEnv is what every client of a workload shares.
type clientEnv struct {
	rec   *history.Recorder
	spawn Spawn
	// hello is the hello line for a slot's worker.
	hello       func(slot int) Hello
	replyWithin time.Duration
	stderr      io.Writer
	nextProc    atomic.Int64
	onPaused    func(c *Client, w *workerProc, point string)
	// probe: the worker is started only for its ready line; there is no
	// workload to pause or history to record into.
	probe bool
	// inside, when set, runs each worker inside the harness (LoopConfig.Inside).
	inside *WorkerConfig
}

type workerProc struct {
	// cmd is the worker's process; nil for a worker inside the harness,
	// which endInside ends instead.
	cmd       *exec.Cmd
	endInside func()
	stdin     io.WriteCloser
	process   history.Process
	ready     Ready
	replies   chan Message
	exited    chan struct{} // stdout closed
	reaped    chan struct{} // process waited for
	frozen    atomic.Bool
	// fatal is the worker's fatal message, once it sent one.
	fatal atomic.Pointer[string]

	// Background operations in flight, each under a process number of its
	// own, so that overlapping renewals pair up; idle numbers are reused.
	bgMu   sync.Mutex
	bgOpen map[bgOp]history.Process
	bgIdle []history.Process
}

// bgOp names a background operation in flight.
type bgOp struct{ f, key, token string }

func (e *clientEnv) newProcess() history.Process {
	return history.Process(e.nextProc.Add(1) - 1)
}

// start launches a fresh worker under the next process number, says hello
// and waits for its ready line.
func (c *Client) start() error { return c.startAs(c.env.newProcess()) }

// startAs is start under a process number already taken, so that workers
// started at once still number as their slots go.
func (c *Client) startAs(process history.Process) error {
	w := &workerProc{process: process, bgOpen: map[bgOp]history.Process{},
		replies: make(chan Message, 1), exited: make(chan struct{}), reaped: make(chan struct{})}
	ready := make(chan readyLine, 1)
	name := "inside the harness"
	if c.env.inside != nil && !c.env.probe {
		c.startInside(w, ready)
	} else {
		cmd := c.env.spawn(c.Slot)
		cmd.Stderr = c.env.stderr
		stdin, err := cmd.StdinPipe()
		if err != nil {
			return err
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return err
		}
		if err := proc.Start(cmd); err != nil {
			return fmt.Errorf("client %d: start worker: %w", c.Slot, err)
		}
		w.cmd, w.stdin, name = cmd, stdin, commandLine(cmd)
		go c.read(w, stdout, ready)
		go func() {
			<-w.exited
			cmd.Wait()
			proc.Forget(cmd)
			close(w.reaped)
		}()
	}
	fail := func(format string, args ...any) error {
		w.kill()
		<-w.reaped
		return fmt.Errorf("client %d: worker %s: %s", c.Slot, name, fmt.Sprintf(format, args...))
	}
	line, _ := json.Marshal(c.env.hello(c.Slot))
	if _, err := w.stdin.Write(append(line, '\n')); err != nil {
		// A program that exits at once (not found, a crash) closes its
		// stdin before the hello gets there: say that, not the pipe.
		select {
		case <-w.exited:
			return fail("it exited before its ready line (its stderr says why)")
		case <-time.After(time.Second):
			return fail("it took no hello: %v", err)
		}
	}
	select {
	case r := <-ready:
		if r.err != nil {
			return fail("%v", r.err)
		}
		w.ready = r.Ready
		c.w = w
		return nil
	case <-w.exited:
		select {
		case r := <-ready:
			if r.err != nil {
				return fail("%v", r.err)
			}
		default:
		}
		return fail("it exited before its ready line (its stderr says why)")
	case <-time.After(readyWithin):
		return fail("no ready line within %v", readyWithin)
	}
}

// startInside runs the built-in worker in a goroutine of the harness,
// speaking the protocol over in-memory pipes: what a process would do,
// without a process's start or the system calls and switches between
// processes of every operation. Ending it closes its pipes; a worker
// inside an operation returns when the operation does (its op timeout).
func (c *Client) startInside(w *workerProc, ready chan readyLine) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	w.stdin = inW
	w.endInside = func() {
		inR.CloseWithError(errEnded)
		outW.CloseWithError(errEnded)
	}
	go c.read(w, outR, ready)
	go func() {
		if err := RunWorker(inR, outW, *c.env.inside); err != nil && !errors.Is(err, errEnded) {
			fmt.Fprintf(c.env.stderr, "client %d: worker: %v\n", c.Slot, err)
		}
		w.endInside()
		<-w.exited
		close(w.reaped)
	}()
}

// errEnded is how a worker inside the harness finds its pipes closed.
var errEnded = errors.New("the worker was ended")

// kill ends the worker at once: SIGKILL to its process group, or its
// pipes closed.
func (w *workerProc) kill() error {
	if w.cmd == nil {
		w.endInside()
		return nil
	}
	return proc.Kill(w.cmd)
}

// readyLine is a worker's first line, or why it is not a ready line.
type readyLine struct {
	Ready
	err error
}

// commandLine is cmd as a shell would show it, for messages.
func commandLine(cmd *exec.Cmd) string {
	args := cmd.Args
	if len(args) == 3 && args[1] == "-c" {
		return strconv.Quote(args[2])
	}
	return strconv.Quote(strings.Join(args, " "))
}

// ParseReady reads a worker's first line and checks it is a ready line
// this harness can work with.
func ParseReady(line []byte) (Ready, error) {
	var r Ready
	if err := strictUnmarshal(line, &r); err != nil {
		return r, fmt.Errorf("its first line %q is not a ready line: %v", line, err)
	}
	switch {
	case r.Kind == KindFatal:
		var m Message
		json.Unmarshal(line, &m)
		return r, fmt.Errorf("it cannot go on: %s", m.Error)
	case r.Kind != KindReady:
		return r, fmt.Errorf("its first line has kind %q; it must be {\"kind\":\"ready\",...}: %q", r.Kind, line)
	case r.Protocol != Protocol:
		return r, fmt.Errorf("it speaks worker protocol %d; this harness speaks protocol %d (docs/worker-protocol.md)", r.Protocol, Protocol)
	case r.Name == "":
		return r, errors.New(`its ready line has no "name"`)
	case strings.ContainsAny(r.Name, " \t/:,"):
		return r, fmt.Errorf("its ready line names it %q; a name is one word without '/', ':' or ','", r.Name)
	}
	switch r.Renewals {
	case "":
		r.Renewals = RenewNone
	case RenewNone, RenewReported, RenewUnreported:
	default:
		return r, fmt.Errorf("its ready line says renewals %q; valid: %s, %s, %s", r.Renewals, RenewNone, RenewReported, RenewUnreported)
	}
	for _, p := range r.Points {
		if p == PointBeforeWrite {
			return r, fmt.Errorf("its ready line offers pause point %q, which is the harness's own", p)
		}
	}
	for _, f := range []struct {
		name string
		caps []access.Capability
	}{{"needs", r.Needs}, {"prefers", r.Prefers}} {
		for _, c := range f.caps {
			if !slices.Contains(access.Capabilities, c) {
				return r, fmt.Errorf("its ready line %s %q, which is nothing a topology offers a lock client; it can need %s", f.name, c, access.Join(access.Capabilities, ", "))
			}
		}
	}
	switch {
	case len(r.Needs) > 0:
		// Needs say more than names: a topology added later that offers
		// them runs the worker, where a list of names would refuse it.
		r.Topologies = nil
	case len(r.Prefers) > 0:
		return r, errors.New(`its ready line has "prefers" without "needs": prefers order the topologies that offer what it needs`)
	case len(r.Topologies) == 0:
		r.Topologies = []string{"single"}
	}
	return r, nil
}

// strictUnmarshal decodes one JSON object, refusing fields of the wrong
// type and trailing data, and says what is wrong in a worker author's words.
func strictUnmarshal(line []byte, v any) error {
	if !json.Valid(line) {
		return errors.New("not JSON (one JSON object per line)")
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return fmt.Errorf("field %q is a JSON %s; it must be a %s", te.Field, te.Value, jsonKind(te.Type.Kind().String()))
		}
		return err
	}
	if dec.More() {
		return errors.New("more than one JSON value on the line")
	}
	return nil
}

// read dispatches the worker's lines until its stdout closes.
func (c *Client) read(w *workerProc, stdout io.Reader, ready chan readyLine) {
	defer close(w.exited)
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	first := true
	for sc.Scan() {
		if first {
			first = false
			r, err := ParseReady(sc.Bytes())
			ready <- readyLine{r, err}
			if err != nil {
				return
			}
			continue
		}
		var m Message
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			fmt.Fprintf(c.env.stderr, "client %d: unreadable worker line %q: %v\n", c.Slot, sc.Text(), err)
			continue
		}
		switch m.Kind {
		case KindReply:
			select {
			case w.replies <- m:
			default:
				// Nobody asked: the reader must not block on it, or the
				// worker could never be stopped.
				fmt.Fprintf(c.env.stderr, "client %d: a reply nobody waits for ignored: %q\n", c.Slot, sc.Text())
			}
		case KindPaused, KindEvent:
			if c.env.probe {
				fmt.Fprintf(c.env.stderr, "worker line ignored while probing: %q\n", sc.Text())
				continue
			}
			if m.Kind == KindEvent {
				c.recordEvent(w, m)
				continue
			}
			w.frozen.Store(true)
			c.env.onPaused(c, w, m.Point)
		case KindFatal:
			msg := m.Error
			w.fatal.Store(&msg)
			fmt.Fprintf(c.env.stderr, "client %d: the worker cannot go on: %s\n", c.Slot, msg)
			w.kill()
		default:
			fmt.Fprintf(c.env.stderr, "client %d: worker line of unknown kind %q ignored: %q\n", c.Slot, m.Kind, sc.Text())
		}
	}
}

// recordEvent records a background operation, each in flight under a
// process number of its own; an unknown outcome retires that number like
// any other. A lost notice may come as one line: it is recorded as an
// invoke and its ok.
func (c *Client) recordEvent(w *workerProc, m Message) {
	e := history.Event{Type: m.Type, Client: c.Slot, F: m.F, Key: m.Key, Token: m.Token,
		TTLMs: m.TTLMs, ValidMs: m.ValidMs, Error: m.Error, Reason: m.Reason, Final: c.final, Background: true}
	if m.F != history.Extend && m.F != history.Release && m.F != history.Lost {
		fmt.Fprintf(c.env.stderr, "client %d: background event of kind %q ignored (extend, release or lost only)\n", c.Slot, m.F)
		return
	}
	id := bgOp{m.F, m.Key, m.Token}
	w.bgMu.Lock()
	defer w.bgMu.Unlock()
	if m.F == history.Lost && m.Type == "" {
		e.Process = c.bgProcess(w)
		e.Type, e.Error = history.Invoke, ""
		c.env.rec.Record(e)
		e.Type, e.Error = history.OK, m.Error
		c.env.rec.Record(e)
		w.bgIdle = append(w.bgIdle, e.Process)
		return
	}
	switch m.Type {
	case history.Invoke:
		if _, open := w.bgOpen[id]; open {
			fmt.Fprintf(c.env.stderr, "client %d: a second %s of %s %s began before the first ended; ignored\n", c.Slot, m.F, m.Key, m.Token)
			return
		}
		e.Process = c.bgProcess(w)
		e.ValidMs, e.Error, e.Reason = 0, "", ""
		w.bgOpen[id] = e.Process
	case history.OK, history.Fail, history.Info:
		p, open := w.bgOpen[id]
		if !open {
			fmt.Fprintf(c.env.stderr, "client %d: a %s completion of %s %s that never began; ignored\n", c.Slot, m.F, m.Key, m.Token)
			return
		}
		delete(w.bgOpen, id)
		e.Process = p
		if m.Type != history.Fail {
			e.Reason = ""
		}
		if m.Type != history.Info {
			w.bgIdle = append(w.bgIdle, p)
		}
	default:
		fmt.Fprintf(c.env.stderr, "client %d: background event of type %q ignored\n", c.Slot, m.Type)
		return
	}
	c.env.rec.Record(e)
}

// bgProcess is an idle background process number of the worker, or a new
// one. The caller holds bgMu.
func (c *Client) bgProcess(w *workerProc) history.Process {
	if n := len(w.bgIdle); n > 0 {
		p := w.bgIdle[n-1]
		w.bgIdle = w.bgIdle[:n-1]
		return p
	}
	return c.env.newProcess()
}

// Process is the current worker's process number.
func (c *Client) Process() history.Process { return c.w.process }

// call sends one request and waits for its reply. A worker that dies or
// hangs yields an info reply: the operation's outcome is unknown.
func (c *Client) call(req Request) Message {
	c.reqID++
	req.ID = c.reqID
	w := c.w
	line, _ := json.Marshal(req)
	if _, err := w.stdin.Write(append(line, '\n')); err != nil {
		return Message{Kind: KindReply, Type: history.Info, Error: "worker gone: " + err.Error()}
	}
	for {
		select {
		case m := <-w.replies:
			if m.ID != req.ID {
				continue
			}
			switch m.Type {
			case history.OK, history.Fail, history.Info:
			default:
				// Not an answer the history can hold: nothing is known.
				fmt.Fprintf(c.env.stderr, "client %d: reply of type %q to %s taken as info (valid: ok, fail, info)\n", c.Slot, m.Type, req.Op)
				m.Error = strings.TrimSpace(m.Error + " (reply type " + strconv.Quote(m.Type) + ")")
				m.Type, m.Reason = history.Info, ""
			}
			return m
		case <-w.exited:
			return Message{Kind: KindReply, Type: history.Info, Error: "worker died during the operation"}
		case <-time.After(c.env.replyWithin):
			if w.frozen.Load() {
				continue
			}
			w.kill()
			return Message{Kind: KindReply, Type: history.Info, Error: fmt.Sprintf("worker silent for %v", c.env.replyWithin)}
		}
	}
}

// Do records the invoke of ev, performs req and records its completion.
func (c *Client) Do(req Request, ev history.Event) Message {
	ev.Type, ev.Process, ev.Client, ev.Final = history.Invoke, c.w.process, c.Slot, c.final
	ev.UnseenRenewals = ev.F == history.Acquire && c.w.ready.Renewals == RenewUnreported
	c.env.rec.Record(ev)
	m := c.call(req)
	ev.Type, ev.Error, ev.Reason = m.Type, m.Error, m.Reason
	if m.Type == history.OK {
		ev.Fence, ev.ValidMs = m.Fence, m.ValidMs
		if ev.F == history.Read {
			ev.Value = history.Int64(m.Value)
		}
	}
	c.env.rec.Record(ev)
	return m
}

// replace kills the current worker and starts a fresh one, unless the
// worker said it cannot go on: that ends the run.
func (c *Client) replace() error {
	w := c.w
	c.stop()
	if w != nil {
		if msg := w.fatal.Load(); msg != nil {
			return fmt.Errorf("client %d: the worker cannot go on: %s", c.Slot, *msg)
		}
	}
	return c.start()
}

// stop ends the current worker: stdin closed, then SIGKILL for one that is
// frozen or slow to leave.
func (c *Client) stop() {
	w := c.w
	if w == nil {
		return
	}
	c.w = nil
	w.stdin.Close()
	select {
	case <-w.exited:
	case <-time.After(time.Second):
	}
	w.kill()
	if w.cmd == nil {
		// A worker inside the harness stuck in a library call cannot be
		// killed; it is left to return, and the run goes on without it.
		select {
		case <-w.reaped:
		case <-time.After(time.Second):
		}
		return
	}
	syscall.Kill(w.cmd.Process.Pid, syscall.SIGCONT)
	<-w.reaped
}

// frozenWorker is a worker stopped at a pause point: its own (it stopped
// itself) or the harness's (the harness stopped its process group).
type frozenWorker struct {
	c *Client
	w *workerProc
	// thawed, for a stop at the harness's own point, tells the client's
	// loop whether the worker goes on (true) or was killed (false).
	thawed chan bool
	// err says the stop failed: there is nothing to resume or kill.
	err error
}

// resume sends SIGCONT to the worker's process group once the kernel
// reports it stopped (a SIGCONT before a self-stop would be lost). A
// worker that announced a pause and never stopped is sent SIGCONT all the
// same, and its replies are waited for again as usual.
func (f frozenWorker) resume() error {
	pid := f.w.cmd.Process.Pid
	waitErr := proc.WaitGroupStopped(pid, false, 2*time.Second)
	f.w.frozen.Store(false)
	err := syscall.Kill(-pid, syscall.SIGCONT)
	f.thaw(err == nil)
	if waitErr != nil {
		return fmt.Errorf("the worker announced a pause but did not stop: %w", waitErr)
	}
	return err
}

// kill crashes the frozen worker; its client records an info and replaces it.
func (f frozenWorker) kill() error {
	f.w.frozen.Store(false)
	err := f.w.kill()
	f.thaw(false)
	return err
}

func (f frozenWorker) thaw(alive bool) {
	if f.thawed != nil {
		f.thawed <- alive
	}
}

// stopGroup freezes the worker's whole process group (every thread and
// child: its renewals stop too) and waits until the kernel reports the
// worker stopped.
func (w *workerProc) stopGroup() error {
	pid := w.cmd.Process.Pid
	w.frozen.Store(true)
	if err := syscall.Kill(-pid, syscall.SIGSTOP); err != nil {
		return err
	}
	return proc.WaitGroupStopped(pid, true, 2*time.Second)
}

// Probe starts cmd once for its ready line alone: a probe hello, the ready
// line, then its stdin closes and it must exit. It tells the harness what
// an outside worker is before a run is planned around it.
func Probe(cmd *exec.Cmd, stderr io.Writer) (Ready, error) {
	env := &clientEnv{spawn: func(int) *exec.Cmd { return cmd }, stderr: stderr, probe: true,
		hello: func(slot int) Hello {
			h := NewHello(slot)
			h.Probe = true
			return h
		}}
	c := &Client{env: env}
	if err := c.start(); err != nil {
		return Ready{}, err
	}
	r := c.w.ready
	c.stop()
	return r, nil
}

// ShellCommand is how the harness runs an outside worker for a client
// slot: the command line by /bin/sh, as a terminal would, with the
// protocol's environment.
func ShellCommand(commandLine string, slot int) *exec.Cmd {
	return Launcher{Shell: commandLine}.Command(slot)
}

// Launcher is how every client's worker process starts: the harness's own
// worker verb for a built-in recipe (Bin with Args), or an outside program
// (Shell), run by /bin/sh so that its command line reads as it would in a
// terminal. Either way the worker gets its own process group (proc.Start),
// which pauses and kills act on as a whole.
type Launcher struct {
	Shell string
	Bin   string
	Args  []string
}

// Command is the command of a slot's worker.
func (l Launcher) Command(slot int) *exec.Cmd {
	if l.Shell == "" {
		cmd := exec.Command(l.Bin, l.Args...)
		cmd.Env = WorkerEnv(slot)
		return cmd
	}
	cmd := exec.Command("/bin/sh", "-c", l.Shell)
	cmd.Env = WorkerEnv(slot)
	return cmd
}

// WorkerEnv is a worker's environment: the harness's, plus the protocol
// version and the client slot.
func WorkerEnv(slot int) []string {
	return append(os.Environ(), "LOCKHARNESS_PROTOCOL="+strconv.Itoa(Protocol), "LOCKHARNESS_CLIENT="+strconv.Itoa(slot))
}
