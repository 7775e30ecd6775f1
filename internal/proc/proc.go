// Package proc starts the harness's child processes (redis-server, workers)
// so that none outlives the harness: each runs in its own process group, gets
// SIGKILL from the kernel when the harness dies (Pdeathsig), and is listed in
// a registry that KillAll empties on a signal or an error. Things that are
// not child processes, such as containers, register a remover with AtKill.
package proc

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

var (
	mu       sync.Mutex
	children = map[int]*exec.Cmd{}
	removers = map[int]func(){}
	nextID   int
)

// AtKill registers remove to run on KillAll, for what the kernel will not
// kill with the harness (a container is the Docker engine's child, not
// ours). The returned function unregisters it.
func AtKill(remove func()) (unregister func()) {
	mu.Lock()
	defer mu.Unlock()
	nextID++
	id := nextID
	removers[id] = remove
	return func() {
		mu.Lock()
		delete(removers, id)
		mu.Unlock()
	}
}

// Start starts cmd as a child that dies with the harness. Its own process
// group keeps a terminal's Ctrl-C away from it, so the harness decides the
// order in which things stop. Pdeathsig fires when the starting thread
// exits; Go only retires threads of goroutines that locked them, and the
// harness never does, so it fires when the harness dies.
func Start(cmd *exec.Cmd) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	if err := cmd.Start(); err != nil {
		return err
	}
	mu.Lock()
	children[cmd.Process.Pid] = cmd
	mu.Unlock()
	return nil
}

// Forget removes a child that has been waited for from the registry.
func Forget(cmd *exec.Cmd) {
	if cmd == nil || cmd.Process == nil {
		return
	}
	mu.Lock()
	delete(children, cmd.Process.Pid)
	mu.Unlock()
}

// Kill sends SIGKILL to the child's whole process group. A stopped
// (SIGSTOPped) process dies from SIGKILL too.
func Kill(cmd *exec.Cmd) error {
	if cmd == nil || cmd.Process == nil {
		return nil
	}
	err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// KillAll kills every registered child. It is the last line of defence for
// signal handlers and error paths; orderly shutdown stops children itself.
func KillAll() {
	mu.Lock()
	for pid := range children {
		syscall.Kill(-pid, syscall.SIGKILL)
		syscall.Kill(pid, syscall.SIGCONT)
	}
	var rm []func()
	for _, f := range removers {
		rm = append(rm, f)
	}
	mu.Unlock()
	// Outside the lock: a remover may take its time and call back into proc.
	for _, f := range rm {
		f()
	}
}

// Live counts registered children, for tests that check nothing leaked.
func Live() int {
	mu.Lock()
	defer mu.Unlock()
	return len(children)
}

// stat is /proc/PID/stat after the command name (which is in parentheses
// and may contain spaces): state, ppid, pgrp, ...
func stat(pid int) ([]string, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil, fmt.Errorf("process %d: %w", pid, err)
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return nil, fmt.Errorf("process %d: unreadable stat %q", pid, s)
	}
	return strings.Fields(s[i+2:]), nil
}

// WaitGroupStopped waits until the kernel reports stopped every process of
// process group pgid (all), or at least one of them: a worker under a
// shell that stopped itself stops alone, a SIGSTOP of the group stops all.
func WaitGroupStopped(pgid int, all bool, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		members, stopped := groupStates(pgid)
		switch {
		case members == 0:
			return fmt.Errorf("process group %d has no process left", pgid)
		case all && stopped == members, !all && stopped > 0:
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("process group %d: %d of %d processes stopped within %v", pgid, stopped, members, timeout)
		}
		time.Sleep(time.Millisecond)
	}
}

// groupStates counts the live processes of group pgid and those stopped.
func groupStates(pgid int) (members, stopped int) {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		fields, err := stat(pid)
		if err != nil || len(fields) < 3 || fields[2] != strconv.Itoa(pgid) {
			continue
		}
		switch fields[0] {
		case "Z", "X":
			continue
		case "T", "t":
			stopped++
		}
		members++
	}
	return members, stopped
}

// FreePort is a free TCP port on 127.0.0.1 for a server to bind later. It
// lies below the kernel's ephemeral range, which every listen on port 0
// (the proxies) and every outgoing connection draw from: a port from that
// range could be taken by one of them between the pick and the server's
// bind. No port is handed out twice in a while within the process, nor,
// for portHold, to another process that asks here (reservePort): several
// harnesses at once (a suite's shards, runs side by side) would otherwise
// draw the same port between one's pick and its server's bind, which for a
// container or a cluster's nodes takes a while.
func FreePort() (int, error) {
	lo := ephemeralLow()
	base := max(lo/2, 1024)
	portsMu.Lock()
	defer portsMu.Unlock()
	if len(handedOut) > (lo-base)/2 {
		handedOut = map[int]bool{}
	}
	for range 200 {
		port := base + rand.IntN(lo-base)
		if handedOut[port] || !reservePort(port) {
			continue
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			continue
		}
		l.Close()
		handedOut[port] = true
		return port, nil
	}
	return 0, fmt.Errorf("no free port found in %d-%d on 127.0.0.1", base, lo-1)
}

var (
	portsMu   sync.Mutex
	handedOut = map[int]bool{}
)

// portHold is how long a port handed out stays reserved against other
// processes: longer than any topology takes to start its servers.
const portHold = 2 * time.Minute

// portLocks is the file whose byte N a process locks (fcntl, released at
// its exit) while port N is reserved for it; nil when it cannot be opened,
// and then ports are reserved within the process only.
var portLocks = sync.OnceValue(func() *os.File {
	// One file per user: another user's file in a sticky temp directory
	// could not be opened for writing.
	f, err := os.OpenFile(filepath.Join(os.TempDir(), fmt.Sprintf("lockharness-ports-%d.lock", os.Getuid())), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		fmt.Fprintf(os.Stderr, "lockharness: ports are reserved within this process only: %v\n", err)
		return nil
	}
	return f
})

// reserved is when each port this process reserved against the others
// is given back; a later reservation of the same port extends it.
var reserved = map[int]time.Time{}

// reservePort takes port for portHold against other processes, and
// reports whether no other process holds it; portsMu is held. The file is
// never closed: a close would drop every lock the process holds on it.
func reservePort(port int) bool {
	f := portLocks()
	if f == nil {
		return true
	}
	lock := func(typ int16) error {
		return syscall.FcntlFlock(f.Fd(), syscall.F_SETLK, &syscall.Flock_t{Type: typ, Whence: 0, Start: int64(port), Len: 1})
	}
	if err := lock(syscall.F_WRLCK); err != nil {
		return !errors.Is(err, syscall.EAGAIN) && !errors.Is(err, syscall.EACCES)
	}
	until := time.Now().Add(portHold)
	reserved[port] = until
	time.AfterFunc(portHold, func() {
		portsMu.Lock()
		defer portsMu.Unlock()
		// Only the last reservation of the port gives it back.
		if reserved[port].Equal(until) {
			delete(reserved, port)
			lock(syscall.F_UNLCK)
		}
	})
	return true
}

// ephemeralLow is the bottom of the kernel's ephemeral port range.
func ephemeralLow() int {
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if lo, err := strconv.Atoi(f[0]); err == nil && lo > 2048 {
				return lo
			}
		}
	}
	return 32768
}

// Tail is the last lines of a child's log file, for an error that says why
// it did not start.
func Tail(path string, lines int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	all := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}
