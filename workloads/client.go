package workloads

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/internal/proc"
)

// Spawn builds the command of a worker process for a client slot; the
// command carries the slot's own links to the lock service.
type Spawn func(slot int) *exec.Cmd

// stuckAfter is how long the harness waits for any reply before it declares
// a worker hung and replaces it. Frozen workers are excluded: a pause is
// released by its fault.
const stuckAfter = 30 * time.Second

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
	rec      *history.Recorder
	spawn    Spawn
	stderr   io.Writer
	nextProc atomic.Int64
	onPaused func(c *Client, w *workerProc, point string)
}

type workerProc struct {
	cmd      *exec.Cmd
	stdin    io.WriteCloser
	process  history.Process
	watchdog atomic.Int64
	replies  chan Message
	exited   chan struct{} // stdout closed
	reaped   chan struct{} // process waited for
	frozen   atomic.Bool
}

func (e *clientEnv) newProcess() history.Process {
	return history.Process(e.nextProc.Add(1) - 1)
}

// start launches a fresh worker and waits for its ready line.
func (c *Client) start() error {
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
	w := &workerProc{cmd: cmd, stdin: stdin, process: c.env.newProcess(),
		replies: make(chan Message, 1), exited: make(chan struct{}), reaped: make(chan struct{})}
	w.watchdog.Store(int64(c.env.newProcess()))
	ready := make(chan struct{})
	go c.read(w, stdout, ready)
	go func() {
		<-w.exited
		cmd.Wait()
		proc.Forget(cmd)
		close(w.reaped)
	}()
	select {
	case <-ready:
		c.w = w
		return nil
	case <-w.exited:
		return fmt.Errorf("client %d: worker exited before it was ready", c.Slot)
	case <-time.After(10 * time.Second):
		proc.Kill(cmd)
		return fmt.Errorf("client %d: worker not ready after 10s", c.Slot)
	}
}

// read dispatches the worker's lines until its stdout closes.
func (c *Client) read(w *workerProc, stdout io.Reader, ready chan struct{}) {
	defer close(w.exited)
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		var m Message
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			fmt.Fprintf(c.env.stderr, "client %d: unreadable worker line %q: %v\n", c.Slot, sc.Text(), err)
			continue
		}
		switch m.Kind {
		case KindReady:
			close(ready)
		case KindReply:
			w.replies <- m
		case KindPaused:
			w.frozen.Store(true)
			c.env.onPaused(c, w, m.Point)
		case KindAsync:
			c.recordAsync(w, m)
		}
	}
}

// recordAsync records a background operation under the worker's watchdog
// process; an unknown outcome retires that process number like any other.
func (c *Client) recordAsync(w *workerProc, m Message) {
	e := history.Event{Type: m.Type, Process: history.Process(w.watchdog.Load()), Client: c.Slot,
		F: m.F, Key: m.Key, Token: m.Token, TTLMs: m.TTLMs, Error: m.Error, Reason: m.Reason, Final: c.final}
	c.env.rec.Record(e)
	if m.Type == history.Info {
		w.watchdog.Store(int64(c.env.newProcess()))
	}
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
			if m.ID == req.ID {
				return m
			}
		case <-w.exited:
			return Message{Kind: KindReply, Type: history.Info, Error: "worker died during the operation"}
		case <-time.After(stuckAfter):
			if w.frozen.Load() {
				continue
			}
			proc.Kill(w.cmd)
			return Message{Kind: KindReply, Type: history.Info, Error: fmt.Sprintf("worker silent for %v", stuckAfter)}
		}
	}
}

// Do records the invoke of ev, performs req and records its completion.
func (c *Client) Do(req Request, ev history.Event) Message {
	ev.Type, ev.Process, ev.Client, ev.Final = history.Invoke, c.w.process, c.Slot, c.final
	c.env.rec.Record(ev)
	m := c.call(req)
	ev.Type, ev.Error, ev.Reason = m.Type, m.Error, m.Reason
	if m.Type == history.OK {
		ev.Fence, ev.ValidMs = m.Fence, m.ValidMs
	}
	c.env.rec.Record(ev)
	return m
}

// replace kills the current worker and starts a fresh one.
func (c *Client) replace() error {
	c.stop()
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
	proc.Kill(w.cmd)
	syscall.Kill(w.cmd.Process.Pid, syscall.SIGCONT)
	<-w.reaped
}

// frozenWorker is a worker stopped at a pause point.
type frozenWorker struct {
	c *Client
	w *workerProc
}

// resume sends SIGCONT once the kernel reports the worker stopped.
func (f frozenWorker) resume() error {
	pid := f.w.cmd.Process.Pid
	if err := proc.WaitStopped(pid, 2*time.Second); err != nil {
		return err
	}
	f.w.frozen.Store(false)
	return syscall.Kill(pid, syscall.SIGCONT)
}

// kill crashes the frozen worker; its client records an info and replaces it.
func (f frozenWorker) kill() error {
	f.w.frozen.Store(false)
	return proc.Kill(f.w.cmd)
}
