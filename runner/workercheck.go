package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockharness/lockharness/cluster"
	"github.com/lockharness/lockharness/faults"
	"github.com/lockharness/lockharness/resource"
	"github.com/lockharness/lockharness/scenario"
	"github.com/lockharness/lockharness/workloads"
)

// ErrNotAnnounced is a session asked for on a topology the worker's ready
// line does not announce: one it does not name, or one that does not
// offer what it needs.
var ErrNotAnnounced = errors.New("not a topology the worker announces")

// WorkerCheckOptions are how `harness worker-check` runs a worker's
// sessions.
type WorkerCheckOptions struct {
	// Topologies limits the sessions to these of the ones the worker
	// runs on (empty: every one).
	Topologies  []string
	OpTimeout   time.Duration
	ReplyWithin time.Duration
	// Dir is where the sessions' servers keep their files.
	Dir string
	// Stderr gets the worker's stderr; Log a line as each session starts.
	Stderr io.Writer
	Log    func(format string, args ...any)
}

// WorkerSession is one conformance session of a worker: on a topology, and
// with a database (Resource) when Database names its workload.
type WorkerSession struct {
	Topology, Resource, Database string
	Report                       *workloads.Conformance
}

// Name is the session as the report heads it.
func (w WorkerSession) Name() string {
	if w.Database != "" {
		return w.Topology + " + " + w.Resource + " " + w.Database
	}
	return w.Topology
}

// CheckWorker runs a worker the way runs will: first its ready line, then
// a conformance session on every topology it announces, each against
// servers of its own started as a run starts them, its hello shaped as a
// run's (behind links of its own, with the dial map a sentinel's or
// cluster's announced addresses need); and, for a worker that writes to a
// database itself, one session for each workload on that database, each
// against a scratch server.
func CheckWorker(ctx context.Context, commandLine string, opt WorkerCheckOptions) (workloads.Ready, []WorkerSession, error) {
	ready, err := workloads.Probe(workloads.ShellCommand(commandLine, 0), opt.Stderr)
	if err != nil {
		return ready, nil, err
	}
	topologies, err := scenario.WorkerTopologies(ready)
	if err != nil {
		return ready, nil, fmt.Errorf("its ready line: %v", err)
	}
	for _, t := range opt.Topologies {
		if !slices.Contains(topologies, t) {
			return ready, nil, fmt.Errorf("--topology %s: %w (it runs on %s)", t, ErrNotAnnounced, strings.Join(topologies, ", "))
		}
	}
	if len(opt.Topologies) > 0 {
		topologies = opt.Topologies
	}
	var sessions []WorkerSession
	for i, t := range topologies {
		if err := cluster.OneOf("topology", t, cluster.Topologies); err != nil {
			return ready, sessions, fmt.Errorf("its ready line: %w", err)
		}
		opt.Log("session on %s", t)
		rep, err := checkOnTopology(ctx, commandLine, t, nil, filepath.Join(opt.Dir, fmt.Sprint(i)), opt)
		if err != nil {
			return ready, sessions, fmt.Errorf("session on %s: %w", t, err)
		}
		sessions = append(sessions, WorkerSession{Topology: t, Report: rep})
	}
	// A worker that writes to a database itself gets one session for
	// each workload on it that it writes, each against a server of its
	// own.
	for _, res := range resource.Resources {
		if !res.Database || !slices.Contains(ready.Writes, res.Name) {
			continue
		}
		if err := res.Available(); err != nil {
			return ready, sessions, fmt.Errorf("the worker writes to %s, and this machine has none to check it against: %w", res.Name, err)
		}
		for _, wl := range workloads.Workloads() {
			if !wl.WritesTo(res.Name) || !ready.WritesWorkload(wl.Name) {
				continue
			}
			opt.Log("session on %s with %s (%s)", topologies[0], res.Name, wl.Name)
			rep, err := checkWithDatabase(ctx, commandLine, topologies[0], res, wl, ready, filepath.Join(opt.Dir, res.Name+"-"+wl.Name), opt)
			if err != nil {
				return ready, sessions, fmt.Errorf("session with %s (%s): %w", res.Name, wl.Name, err)
			}
			sessions = append(sessions, WorkerSession{Topology: topologies[0], Resource: res.Name, Database: wl.Name, Report: rep})
		}
	}
	return ready, sessions, nil
}

// checkWithDatabase runs one session with the workload's tables on a
// server of the resource's own.
func checkWithDatabase(ctx context.Context, commandLine, topology string, res resource.Resource, wl workloads.Workload, ready workloads.Ready, dir string, opt WorkerCheckOptions) (*workloads.Conformance, error) {
	srv, err := res.StartServer(ctx, filepath.Join(dir, res.Name))
	if err != nil {
		return nil, err
	}
	defer srv.Close()
	if err := wl.Prepare(ctx, srv.Addr, workloads.Setup{Keys: []string{workloads.CheckKey}}); err != nil {
		return nil, err
	}
	db := &workloads.Database{Kind: res.Name, DSN: resource.DSN(srv.Addr), Workload: wl.Name, SKU: wl.Tables.SKU, Fencing: resource.FenceNone, TimeoutMs: 10_000}
	if ready.Fences && slices.Contains(wl.Fencings, resource.FenceWhere) {
		db.Fencing = resource.FenceWhere
	}
	return checkOnTopology(ctx, commandLine, topology, &database{srv: srv, workload: wl}, dir, opt, db)
}

// checkOnTopology starts the topology as a run would, runs one session
// against it, and stops it. With a database, the hello names it.
func checkOnTopology(ctx context.Context, commandLine, topology string, db *database, dir string, opt WorkerCheckOptions, dbHello ...*workloads.Database) (*workloads.Conformance, error) {
	cl, err := cluster.New(cluster.Spec{Topology: topology, Backend: cluster.BackendLocal})
	if err != nil {
		return nil, err
	}
	network := faults.NewNetwork()
	defer network.Close()
	defer cl.Close()
	if err := cl.Start(ctx, filepath.Join(dir, "nodes"), network.Proxy); err != nil {
		return nil, err
	}
	access, err := cl.ConnectClient(0, false)
	if err != nil {
		return nil, err
	}
	h := workloads.HelloFor(0, cl.Shape(), access, opt.OpTimeout, opt.ReplyWithin)
	// The worker's own links are counted, so that one dialling the
	// addresses the servers announce instead of the hello's dial map
	// is told so: faults on its links would never reach it.
	counted := newCounters()
	defer counted.close()
	if h.Nodes, err = counted.wrapAll(h.Nodes); err != nil {
		return nil, err
	}
	if h.Sentinel != nil {
		if h.Sentinel.Addrs, err = counted.wrapAll(h.Sentinel.Addrs); err != nil {
			return nil, err
		}
	}
	dialled := map[string]*counter{}
	for announced, own := range h.Dial {
		c, err := counted.wrap(own)
		if err != nil {
			return nil, err
		}
		h.Dial[announced], dialled[announced] = c.addr, c
	}
	if len(dbHello) > 0 {
		h.Database = dbHello[0]
	}
	rep, err := workloads.CheckWorker(ctx, workloads.ShellCommand(commandLine, 0), workloads.ConformanceConfig{Hello: h,
		Servers: topologyServers{cl: cl, db: db}, OpTimeout: opt.OpTimeout, ReplyWithin: opt.ReplyWithin, Stderr: opt.Stderr})
	if err != nil {
		return nil, err
	}
	var through int64
	for _, c := range dialled {
		through += c.n.Load()
	}
	switch {
	case len(dialled) == 0:
	case through == 0 && acquired(rep):
		rep.Problems = append(rep.Problems, fmt.Sprintf("it never dialled through the hello's dial map (%d announced addresses mapped to its own links): it connected to the addresses the servers announce, so faults on its own links would never reach it", len(dialled)))
	case through > 0:
		rep.Passed = append(rep.Passed, fmt.Sprintf("dial: %d connections through its own links to the nodes the servers announced", through))
	}
	return rep, nil
}

// acquired reports whether the session got as far as a grant: a worker
// that did had to reach a node.
func acquired(rep *workloads.Conformance) bool {
	for _, p := range rep.Passed {
		if strings.HasPrefix(p, "acquire of a free lock") {
			return true
		}
	}
	return false
}

// topologyServers is a started topology (and a database) as a session
// inspects it.
type topologyServers struct {
	cl *cluster.Cluster
	db *database
}

func (t topologyServers) Flush(ctx context.Context) error {
	if !t.cl.SpeaksRedis() {
		return t.cl.Wipe(ctx)
	}
	var errs []error
	for _, n := range t.cl.Nodes {
		// A replica refuses (READONLY) and follows its primary's flush.
		if _, err := t.cl.Do(ctx, n, "FLUSHALL"); err != nil && !strings.HasPrefix(err.Error(), "READONLY") {
			errs = append(errs, fmt.Errorf("%s: %w", n.Name(), err))
		}
	}
	return errors.Join(errs...)
}

func (t topologyServers) Keys(ctx context.Context) (int64, error) {
	var sum int64
	for _, n := range t.cl.Nodes {
		k, err := t.cl.KeyCount(ctx, n)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", n.Name(), err)
		}
		sum += k
	}
	return sum, nil
}

func (t topologyServers) Rows(ctx context.Context, token string) (int64, error) {
	if t.db == nil {
		return 0, errors.New("no database")
	}
	return t.db.workload.RowsOf(ctx, t.db.srv.Addr, token)
}

func (t topologyServers) FenceAbove(ctx context.Context) error {
	if t.db == nil {
		return errors.New("no database")
	}
	return t.db.workload.FenceAbove(ctx, t.db.srv.Addr)
}

// counters are TCP forwarders in front of a worker's own links, each
// counting the connections it took.
type counters struct {
	mu  sync.Mutex
	all []*counter
}

type counter struct {
	addr string
	ln   net.Listener
	n    atomic.Int64
	mu   sync.Mutex
	open []net.Conn
	// closed: connections accepted from now on are closed at once.
	closed bool
}

// keep tracks a forwarded connection until close, or closes it at once
// when close has run.
func (c *counter) keep(conns ...net.Conn) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		for _, conn := range conns {
			conn.Close()
		}
		return false
	}
	c.open = append(c.open, conns...)
	return true
}

func newCounters() *counters { return &counters{} }

func (cs *counters) wrapAll(addrs []string) ([]string, error) {
	out := make([]string, len(addrs))
	for i, a := range addrs {
		c, err := cs.wrap(a)
		if err != nil {
			return nil, err
		}
		out[i] = c.addr
	}
	return out, nil
}

// wrap starts a forwarder to upstream.
func (cs *counters) wrap(upstream string) (*counter, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	c := &counter{addr: ln.Addr().String(), ln: ln}
	cs.mu.Lock()
	cs.all = append(cs.all, c)
	cs.mu.Unlock()
	go func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", upstream)
			if err != nil {
				in.Close()
				continue
			}
			if !c.keep(in, out) {
				continue
			}
			c.n.Add(1)
			go func() { io.Copy(out, in); out.Close() }()
			go func() { io.Copy(in, out); in.Close() }()
		}
	}()
	return c, nil
}

func (cs *counters) close() {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	for _, c := range cs.all {
		c.ln.Close()
		c.mu.Lock()
		c.closed = true
		for _, conn := range c.open {
			conn.Close()
		}
		c.open = nil
		c.mu.Unlock()
	}
}
