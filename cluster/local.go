package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/lockharness/lockharness/internal/clockshim"
	"github.com/lockharness/lockharness/internal/proc"
)

// serverConf is what a node runs with, whichever backend runs it: its
// name, port, directory, arguments and clock offset file.
type serverConf struct {
	name        string
	dir         string
	port        int
	persistence string
	extra       []string
	sentinel    bool
	// clockLib and clockFile are the clock shim and the node's offset file;
	// empty when the node runs without the shim.
	clockLib, clockFile string
	// sec is how the run secures its servers; nil for a plain one.
	sec *security
	// etcd is set for an etcd member, which runs etcd instead.
	etcd *etcdMember
}

// LocalNode is a redis-server (or redis-sentinel) child process on 127.0.0.1.
type LocalNode struct {
	*serverConf

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	paused bool
}

// NodeConfig describes a node, for either backend.
type NodeConfig struct {
	Name, Dir   string
	Persistence string
	// Port is the node's port; 0 picks a free one.
	Port int
	// Args are extra redis-server arguments, such as --replicaof.
	Args []string
	// Sentinel runs redis-sentinel with Args as its configuration lines.
	Sentinel bool
	// Clock runs the node under the clock shim, so SetClockOffset can move
	// its wall clock. The offset file is Dir/clock.offset, set to 0 here and
	// kept across restarts: a restarted node keeps its skewed clock.
	Clock bool
	// ClockShim is the shim library for Clock; empty finds it with
	// clockshim.Find (bin/libclockshim.so, else a cached build).
	ClockShim string
	// sec is the cluster's security (Spec.Auth, Spec.TLS); nil for none.
	sec *security
	// etcd makes the node an etcd member (local backend only).
	etcd *etcdMember
}

// StartLocal starts redis-server on a free port with its data and log in dir.
func StartLocal(ctx context.Context, name, dir, persistence string) (*LocalNode, error) {
	return StartLocalConfig(ctx, NodeConfig{Name: name, Dir: dir, Persistence: persistence})
}

// StartLocalConfig starts a node as cfg describes and waits for its PONG.
func StartLocalConfig(ctx context.Context, cfg NodeConfig) (*LocalNode, error) {
	conf, err := newServerConf(cfg)
	if err != nil {
		return nil, err
	}
	n := &LocalNode{serverConf: conf}
	if err := n.start(ctx); err != nil {
		return nil, err
	}
	return n, nil
}

// newServerConf checks cfg, makes the node's directory (absolute, so a
// container can mount it at the same path), picks a port, and writes the
// clock offset file and a sentinel's configuration.
func newServerConf(cfg NodeConfig) (*serverConf, error) {
	if cfg.Persistence == "" {
		cfg.Persistence = PersistNone
	}
	if err := OneOf("persistence", cfg.Persistence, Persistences); err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	port := cfg.Port
	if port == 0 {
		if port, err = FreePort(); err != nil {
			return nil, err
		}
	}
	n := &serverConf{name: cfg.Name, dir: dir, port: port, persistence: cfg.Persistence, extra: cfg.Args, sentinel: cfg.Sentinel, sec: cfg.sec, etcd: cfg.etcd}
	if cfg.Clock || cfg.ClockShim != "" {
		if err := n.setupClock(cfg.ClockShim); err != nil {
			return nil, err
		}
	}
	if n.sentinel {
		if err := n.writeSentinelConf(); err != nil {
			return nil, err
		}
	}
	return n, nil
}

// writeSentinelConf writes the sentinel's configuration once: sentinel
// rewrites the file as it learns, and a restarted sentinel must keep that.
func (n *serverConf) writeSentinelConf() error {
	lines := []string{
		"bind 127.0.0.1",
		"dir " + n.dir,
		"logfile " + n.LogPath(),
		"daemonize no",
		"protected-mode no",
	}
	for _, kv := range n.sec.tlsArgs(n.port) {
		lines = append(lines, strings.Join(kv, " "))
	}
	lines = append(lines, n.extra...)
	// 0600: with Auth it holds passwords.
	return os.WriteFile(n.confPath(), []byte(strings.Join(lines, "\n")+"\n"), 0o600)
}

// setupClock resolves the shim and writes the offset file with 0.
func (n *serverConf) setupClock(lib string) error {
	if lib == "" {
		var err error
		if lib, err = clockshim.Find(); err != nil {
			return fmt.Errorf("node %s: %w", n.name, err)
		}
	}
	if strings.ContainsAny(lib, " :") {
		return fmt.Errorf("node %s: clock shim path %q has a space or colon, which LD_PRELOAD cannot take", n.name, lib)
	}
	file, err := filepath.Abs(filepath.Join(n.dir, "clock.offset"))
	if err != nil {
		return err
	}
	if err := clockshim.WriteOffset(file, 0); err != nil {
		return fmt.Errorf("node %s: %w", n.name, err)
	}
	n.clockLib, n.clockFile = lib, file
	return nil
}

// SetClockOffset moves the node's wall clock to d from true time, at once
// and also while the node is paused or down (a restart keeps it). Keys'
// expiry times are absolute, so moving forward expires them early and
// moving back keeps them alive longer. It fails when the node runs without
// the clock shim.
func (n *serverConf) SetClockOffset(d time.Duration) error {
	if n.clockFile == "" {
		return fmt.Errorf("node %s runs without the clock shim (start it with Clock set)", n.name)
	}
	if err := clockshim.WriteOffset(n.clockFile, d); err != nil {
		return fmt.Errorf("node %s: %w", n.name, err)
	}
	return nil
}

// ClockOffset is the node's current clock offset; 0 without the shim.
func (n *serverConf) ClockOffset() time.Duration {
	if n.clockFile == "" {
		return 0
	}
	d, _ := clockshim.ReadOffset(n.clockFile)
	return d
}

// ShiftClock moves the node's wall clock by d from where it is now,
// keeping its drift. It fails when the node runs without the shim.
func (n *serverConf) ShiftClock(d time.Duration) error {
	if n.clockFile == "" {
		return fmt.Errorf("node %s runs without the clock shim (start it with Clock set)", n.name)
	}
	if err := clockshim.Shift(n.clockFile, d); err != nil {
		return fmt.Errorf("node %s: %w", n.name, err)
	}
	return nil
}

// DriftClock makes the node's wall clock gain (or lose) rate parts per
// billion of real time from now on, from where it is now, also while the
// node is paused or down, and returns what takes the drift back. It fails
// when the node runs without the shim.
func (n *serverConf) DriftClock(rate int64) (func() error, error) {
	if n.clockFile == "" {
		return nil, fmt.Errorf("node %s runs without the clock shim (start it with Clock set)", n.name)
	}
	undo, err := clockshim.Drift(n.clockFile, rate)
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", n.name, err)
	}
	return func() error {
		if err := undo(); err != nil {
			return fmt.Errorf("node %s: %w", n.name, err)
		}
		return nil
	}, nil
}

// ClockDrift is the rate the node's clock drifts at; 0 without the shim.
func (n *serverConf) ClockDrift() int64 {
	if n.clockFile == "" {
		return 0
	}
	st, _ := clockshim.Read(n.clockFile)
	return st.Rate
}

func (n *serverConf) confPath() string { return filepath.Join(n.dir, "sentinel.conf") }

// FreePort asks the kernel for a free TCP port on 127.0.0.1.
func FreePort() (int, error) { return proc.FreePort() }

func (n *serverConf) Name() string { return n.name }
func (n *serverConf) Addr() string { return "127.0.0.1:" + strconv.Itoa(n.port) }

// LogPath is the node's log.
func (n *serverConf) LogPath() string {
	if n.etcd != nil {
		return filepath.Join(n.dir, "etcd.log")
	}
	if n.sentinel {
		return filepath.Join(n.dir, "sentinel.log")
	}
	return filepath.Join(n.dir, "redis.log")
}

// Port is the node's own port.
func (n *serverConf) Port() int { return n.port }

func (n *serverConf) args() []string {
	if n.etcd != nil {
		return n.etcd.args(n)
	}
	if n.sentinel {
		return []string{n.confPath()}
	}
	a := []string{
		"--bind", "127.0.0.1",
		"--dir", n.dir,
		"--logfile", n.LogPath(),
		"--daemonize", "no",
		"--protected-mode", "no",
		"--save", "",
	}
	if n.persistence == PersistAOFAlways {
		a = append(a, "--appendonly", "yes", "--appendfsync", "always")
	} else {
		a = append(a, "--appendonly", "no")
	}
	// The port (plain, or TLS only) and, with Auth, the passwords and ACL.
	a = append(a, n.sec.serverArgs(n.port)...)
	return append(a, n.extra...)
}

// clearData makes a restart without persistence come back empty, whatever
// an earlier configuration left behind.
func (n *serverConf) clearData() {
	if n.persistence == PersistNone && !n.sentinel && n.etcd == nil {
		n.LoseData()
	}
}

// LoseData removes what the node keeps across a restart: a Redis node's
// AOF and RDB, an etcd member's data directory (it restarts as a member
// with no log, which Raft does not allow for: what it voted for and
// acknowledged is forgotten). The logs and the clock file stay.
func (n *serverConf) LoseData() error {
	if n.etcd != nil {
		n.etcd.lost = true
		return os.RemoveAll(filepath.Join(n.dir, "data"))
	}
	if err := os.RemoveAll(filepath.Join(n.dir, "appendonlydir")); err != nil {
		return err
	}
	if err := os.Remove(filepath.Join(n.dir, "dump.rdb")); err != nil && !os.IsNotExist(err) {
		return err
	}
	return nil
}

func (n *LocalNode) start(ctx context.Context) error {
	if n.etcd != nil && n.etcd.lost {
		// etcd's 5 s reconfiguration check, and elections on a busy
		// machine, come first.
		rejoinCtx, cancel := context.WithTimeout(ctx, rejoinWithin)
		err := n.etcd.rejoin(rejoinCtx, n.serverConf)
		cancel()
		if err != nil {
			return fmt.Errorf("node %s: %w", n.name, err)
		}
	}
	if err := n.launch(); err != nil {
		return err
	}
	return n.waitReady(ctx)
}

// rejoinWithin bounds adding back an etcd member that lost its data.
const rejoinWithin = 30 * time.Second

// binary is the program the node runs.
func (n *serverConf) binary() string {
	switch {
	case n.etcd != nil:
		return "etcd"
	case n.sentinel:
		return "redis-sentinel"
	}
	return "redis-server"
}

// launch starts the node's process without waiting for it to answer.
func (n *LocalNode) launch() error {
	binary := n.binary()
	bin, err := exec.LookPath(binary)
	if err != nil {
		return fmt.Errorf("%s not found on PATH (run `make setup`): %w", binary, err)
	}
	n.clearData()
	cmd := exec.Command(bin, n.args()...)
	cmd.Dir = n.dir
	if n.clockFile != "" {
		cmd.Env = append(os.Environ(), clockshim.Env(n.clockLib, n.clockFile)...)
	}
	if err := proc.Start(cmd); err != nil {
		return fmt.Errorf("node %s: start %s: %w", n.name, binary, err)
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		proc.Forget(cmd)
		close(exited)
	}()
	n.mu.Lock()
	n.cmd, n.exited, n.paused = cmd, exited, false
	n.mu.Unlock()
	return nil
}

// waitReady waits until the launched node answers, and kills it when it
// does not.
func (n *LocalNode) waitReady(ctx context.Context) error {
	cmd, exited := n.current()
	err := n.waitPong(ctx, func() bool {
		select {
		case <-exited:
			return true
		default:
			return false
		}
	}, filepath.Base(cmd.Path))
	if err == nil && n.clockFile != "" {
		err = n.checkShimLoaded(cmd.Process.Pid, filepath.Base(cmd.Path), n.clockLib)
	}
	if err != nil {
		n.Kill()
	}
	return err
}

// checkShimLoaded makes sure the shim, at lib as the process sees it, is in
// process pid: the dynamic loader only warns on stderr and goes on when it
// cannot preload a library.
func (n *serverConf) checkShimLoaded(pid int, what, lib string) error {
	maps, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return fmt.Errorf("node %s: %w", n.name, err)
	}
	if !strings.Contains(string(maps), lib) {
		return fmt.Errorf("node %s: %s did not load the clock shim %s", n.name, what, lib)
	}
	return nil
}

// waitPong waits up to 15 s for the node's PONG, and fails at once when
// gone says the server exited, with the end of its log.
func (n *serverConf) waitPong(ctx context.Context, gone func() bool, what string) error {
	deadline := time.Now().Add(15 * time.Second)
	for {
		if n.answers(ctx) == nil {
			return nil
		}
		if gone() {
			return fmt.Errorf("node %s: %s exited during start-up; log %s ends:\n%s", n.name, what, n.LogPath(), tail(n.LogPath(), 5))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("node %s: no PONG from %s within 15s; log %s", n.name, n.Addr(), n.LogPath())
		}
	}
}

// answers asks the node whether it serves: a PONG, or an etcd member's
// health.
func (n *serverConf) answers(ctx context.Context) error {
	if n.etcd != nil {
		ctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		return etcdHealthy(ctx, n.Addr())
	}
	return n.sec.ping(n.Addr(), 200*time.Millisecond)
}

// Ping sends a RESP PING to a plain server (no Auth, no TLS) and wants
// +PONG back; a LOADING reply is not ready. (*Cluster).Ping reaches a
// secured one.
func Ping(addr string, timeout time.Duration) error {
	return (*security)(nil).ping(addr, timeout)
}

func tail(path string, lines int) string { return proc.Tail(path, lines) }

func (n *LocalNode) current() (*exec.Cmd, chan struct{}) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.cmd, n.exited
}

// Running reports whether the process is alive (paused counts as alive).
func (n *LocalNode) Running() bool {
	_, exited := n.current()
	if exited == nil {
		return false
	}
	select {
	case <-exited:
		return false
	default:
		return true
	}
}

// Kill sends SIGKILL and waits for the process to be gone: a crash, with no
// chance to write anything more to disk.
func (n *LocalNode) Kill() error {
	cmd, exited := n.current()
	if cmd == nil {
		return nil
	}
	if err := proc.Kill(cmd); err != nil {
		return fmt.Errorf("node %s: kill: %w", n.name, err)
	}
	return n.waitExit(exited)
}

func (n *LocalNode) waitExit(exited <-chan struct{}) error {
	select {
	case <-exited:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("node %s: still running 10s after SIGKILL", n.name)
	}
}

// Stop shuts the node down with SIGTERM (resuming it first if paused) and
// falls back to SIGKILL.
func (n *LocalNode) Stop() error {
	cmd, exited := n.current()
	if cmd == nil || !n.Running() {
		return nil
	}
	syscall.Kill(cmd.Process.Pid, syscall.SIGCONT)
	syscall.Kill(cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-exited:
		return nil
	case <-time.After(3 * time.Second):
		return n.Kill()
	}
}

// Restart starts the node again on the same port and directory. With
// persistence none it comes back empty; with aof-always it replays its AOF.
func (n *LocalNode) Restart(ctx context.Context) error {
	if n.Running() {
		return fmt.Errorf("node %s: restart while running", n.name)
	}
	return n.start(ctx)
}

// Paused reports whether the server is stopped by Pause.
func (n *LocalNode) Paused() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.paused
}

// Pause freezes the server with SIGSTOP, as a long GC or VM stall would.
func (n *LocalNode) Pause() error { return n.signal(syscall.SIGSTOP, true) }

// Resume thaws a paused server.
func (n *LocalNode) Resume() error { return n.signal(syscall.SIGCONT, false) }

func (n *LocalNode) signal(sig syscall.Signal, paused bool) error {
	cmd, _ := n.current()
	if cmd == nil || !n.Running() {
		return fmt.Errorf("node %s: not running", n.name)
	}
	if err := syscall.Kill(cmd.Process.Pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("node %s: %v: %w", n.name, sig, err)
	}
	n.mu.Lock()
	n.paused = paused
	n.mu.Unlock()
	return nil
}
