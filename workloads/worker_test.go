package workloads

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/lockharness/lockharness/cluster"
	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/internal/proc"
	"github.com/lockharness/lockharness/locks"
)

// The test binary doubles as a worker process when this variable is set,
// so the protocol and the pause points run in a real separate process.
const workerEnv = "LOCKHARNESS_TEST_WORKER_ADDR"

func TestMain(m *testing.M) {
	if os.Getenv(workerEnv) != "" {
		if err := RunWorker(os.Stdin, os.Stdout, WorkerConfig{Lock: os.Getenv("LOCKHARNESS_TEST_LOCK")}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func testClient(t *testing.T, lock string, onPaused func(*Client, *workerProc, string)) (*Client, *history.Recorder) {
	return testClientVia(t, lock, false, onPaused)
}

// testClientVia starts the test binary as a worker, under /bin/sh (as an
// exec worker runs) when viaShell: the worker is then a child of the
// process group's leader.
func testClientVia(t *testing.T, lock string, viaShell bool, onPaused func(*Client, *workerProc, string)) (*Client, *history.Recorder) {
	t.Helper()
	n := testNode(t)
	rec := history.NewRecorder(nil)
	env := &clientEnv{rec: rec, stderr: os.Stderr, onPaused: onPaused, replyWithin: DefaultReplyWithin,
		spawn: func(int) *exec.Cmd {
			cmd := exec.Command(os.Args[0])
			if viaShell {
				cmd = exec.Command("/bin/sh", "-c", os.Args[0]+"; true")
			}
			cmd.Env = append(os.Environ(), workerEnv+"=1", "LOCKHARNESS_TEST_LOCK="+lock)
			return cmd
		},
		hello: func(slot int) Hello {
			return Hello{Op: "hello", Protocol: Protocol, Client: slot, OpTimeoutMs: 1000, Nodes: []string{n.Addr()}}
		}}
	c := &Client{Slot: 0, env: env}
	if err := c.start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.stop)
	return c, rec
}

// testNode starts a redis-server for the test, which stops it and wants no
// child process of the test left running.
func testNode(t *testing.T) *cluster.LocalNode {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server not installed; run `make setup`")
	}
	t.Cleanup(func() {
		if n := proc.Live(); n != 0 {
			t.Errorf("%d child processes left running", n)
		}
	})
	n, err := cluster.StartLocal(context.Background(), "n1", t.TempDir(), cluster.PersistNone)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Stop() })
	return n
}

func TestWorkerProtocol(t *testing.T) {
	c, rec := testClient(t, "fenced", nil)
	acq := c.Do(Request{Op: history.Acquire, Key: "k", Token: "A", TTLMs: 1000}, history.Event{F: history.Acquire, Key: "k", Token: "A", TTLMs: 1000})
	if acq.Type != history.OK || acq.Fence != 1 || acq.ValidMs != 1000 {
		t.Fatalf("acquire reply %+v", acq)
	}
	w := c.call(Request{Op: history.Write, Key: "k", Token: "A", Value: 41})
	if w.Type != history.OK || w.Value != 42 || w.Fence != 1 || w.Token != "A" {
		t.Fatalf("write reply %+v, want value 42 under fence 1", w)
	}
	if r := c.Do(Request{Op: history.Release, Key: "k", Token: "B"}, history.Event{F: history.Release, Key: "k", Token: "B"}); r.Type != history.Fail {
		t.Fatalf("release of a lease this worker does not hold: %+v", r)
	}
	if r := c.Do(Request{Op: history.Release, Key: "k", Token: "A"}, history.Event{F: history.Release, Key: "k", Token: "A"}); r.Type != history.OK {
		t.Fatalf("release: %+v", r)
	}
	events := rec.Events()
	if len(events) != 6 || events[0].Type != history.Invoke || events[1].Type != history.OK || events[1].Fence != 1 {
		t.Fatalf("history %+v", events)
	}
}

// A worker's own pause point freezes it before it answers: the reply must
// not arrive until the harness resumes it.
func TestPausePointFreezesBeforeTheReply(t *testing.T) {
	paused := make(chan frozenWorker, 1)
	c, _ := testClient(t, "naive", func(c *Client, w *workerProc, point string) {
		if point == locks.PointAfterSetNX {
			paused <- frozenWorker{c: c, w: w}
		}
	})
	if got := c.w.ready; got.Name != "naive" || len(got.Points) != 1 || got.Points[0] != locks.PointAfterSetNX {
		t.Fatalf("ready line %+v, want naive offering %s", got, locks.PointAfterSetNX)
	}
	replies := make(chan Message, 1)
	go func() {
		replies <- c.call(Request{Op: history.Acquire, Key: "k", Token: "A", TTLMs: 1000, Pause: []string{locks.PointAfterSetNX}})
	}()
	var f frozenWorker
	select {
	case f = <-paused:
	case <-time.After(5 * time.Second):
		t.Fatal("the worker never reached its pause point")
	}
	assertFrozenUntilResumed(t, f, replies)
}

// The harness's own pause point stops the worker's whole process group:
// a worker under a shell, a child of the group's leader, stops too.
func TestHarnessStopsTheWholeProcessGroup(t *testing.T) {
	c, _ := testClientVia(t, "cad", true, nil)
	if err := c.w.stopGroup(); err != nil {
		t.Fatal(err)
	}
	replies := make(chan Message, 1)
	go func() { replies <- c.call(Request{Op: history.Write, Key: "k", Token: "A", Value: 1}) }()
	assertFrozenUntilResumed(t, frozenWorker{c: c, w: c.w}, replies)
}

func assertFrozenUntilResumed(t *testing.T, f frozenWorker, replies chan Message) {
	t.Helper()
	if err := proc.WaitGroupStopped(f.w.cmd.Process.Pid, false, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-replies:
		t.Fatalf("a frozen worker replied: %+v", m)
	case <-time.After(300 * time.Millisecond):
	}
	if err := f.resume(); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-replies:
		if m.Type != history.OK {
			t.Fatalf("reply after resume: %+v", m)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no reply after resume")
	}
}

func TestKilledWorkerGivesInfo(t *testing.T) {
	paused := make(chan frozenWorker, 1)
	c, _ := testClient(t, "naive", func(c *Client, w *workerProc, point string) { paused <- frozenWorker{c: c, w: w} })
	replies := make(chan Message, 1)
	go func() {
		replies <- c.call(Request{Op: history.Acquire, Key: "k", Token: "A", TTLMs: 1000, Pause: []string{"after-setnx"}})
	}()
	f := <-paused
	f.kill()
	if m := <-replies; m.Type != history.Info {
		t.Fatalf("reply from a killed worker: %+v, want info", m)
	}
	if err := c.replace(); err != nil {
		t.Fatal(err)
	}
	// The killed client set the key without an expiry: the lock is stuck.
	r := c.call(Request{Op: history.Acquire, Key: "k", Token: "B", TTLMs: 1000})
	if r.Type != history.Fail {
		t.Fatalf("acquire after a crash between SETNX and EXPIRE: %+v, want busy", r)
	}
}
