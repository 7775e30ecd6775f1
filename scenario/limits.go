package scenario

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/lockharness/lockharness/cluster"
)

// What one client costs, measured on the built-in worker (a Go process with
// go-redis, 24 MB resident and 6 threads here) and rounded up, and what each
// of its links costs the harness: a proxy listener and up to four pooled
// connections of two sockets each.
const (
	workerBytes    = 32 << 20
	workerThreads  = 8
	workerFiles    = 4 // its stdin, stdout and stderr pipes, and its pidfd
	filesPerLink   = 1 + 2*4
	harnessFiles   = 64 // the harness's own, and a margin
	harnessThreads = 64
)

// clientsFit refuses a client count the machine cannot run, before anything
// starts, naming the limit that binds: each client is a worker process with
// links of its own to every node.
func clientsFit(n int, cl *cluster.Cluster) error {
	if cl == nil {
		return nil
	}
	links := len(cl.NodeNames()) + len(cl.SentinelNames())
	perClient := workerFiles + links*filesPerLink
	type bound struct {
		clients int
		why     string
	}
	var bounds []bound
	var files unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &files) == nil {
		bounds = append(bounds, bound{int((int64(files.Cur) - harnessFiles) / int64(perClient)),
			fmt.Sprintf("%d open files (ulimit -n), %d per client", files.Cur, perClient)})
	}
	if avail := memAvailable(); avail > 0 {
		bounds = append(bounds, bound{int(avail / workerBytes),
			fmt.Sprintf("%d MB of memory available, about %d MB per worker", avail>>20, workerBytes>>20)})
	}
	if free := freeThreads(); free > 0 {
		bounds = append(bounds, bound{(free - harnessThreads) / workerThreads,
			fmt.Sprintf("%d more threads (pid_max, threads-max, ulimit -u), about %d per worker", free, workerThreads)})
	}
	if len(bounds) == 0 {
		return nil
	}
	tightest := bounds[0]
	for _, b := range bounds[1:] {
		if b.clients < tightest.clients {
			tightest = b
		}
	}
	// One more slot than n runs at the end: the liveness check's client.
	if n+1 > tightest.clients {
		return fmt.Errorf("--clients %d is more than this machine can run: each client is a worker process with a link of its own to each of %d nodes and sentinels; %s allow at most %d clients",
			n, links, tightest.why, max(tightest.clients-1, 0))
	}
	return nil
}

// memAvailable is /proc/meminfo's MemAvailable in bytes, 0 if unknown.
func memAvailable() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemAvailable:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// freeThreads is how many more threads the machine lets this user start:
// the tightest of pid_max, threads-max and RLIMIT_NPROC, less the threads
// running now (/proc/loadavg's total); 0 if unknown.
func freeThreads() int {
	limit := 0
	for _, path := range []string{"/proc/sys/kernel/pid_max", "/proc/sys/kernel/threads-max"} {
		if v := readInt(path); v > 0 && (limit == 0 || v < limit) {
			limit = v
		}
	}
	var nproc unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NPROC, &nproc) == nil && nproc.Cur > 0 && nproc.Cur < uint64(limit) {
		limit = int(nproc.Cur)
	}
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil || limit == 0 {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 4 {
		return 0
	}
	_, total, _ := strings.Cut(f[3], "/")
	running, _ := strconv.Atoi(total)
	return limit - running
}

func readInt(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	v, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return v
}
