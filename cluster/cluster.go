// Package cluster starts the topologies a run tests, Redis's and an etcd
// cluster beside them, built from nodes that a backend provides. The local
// backend (the default) runs redis-server (or etcd) processes on
// 127.0.0.1; the docker backend runs each node in a container
// of a chosen image with host networking, so both look the same from the
// outside. Every node can be stopped, killed, restarted on the same port
// and directory, paused and resumed, which is what the process faults need.
package cluster

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockharness/lockharness/internal/suggest"
)

// Persistence modes a node can run with.
const (
	PersistNone      = "none"
	PersistAOFAlways = "aof-always"
)

// Persistences lists the valid persistence modes.
var Persistences = []string{PersistNone, PersistAOFAlways}

// Backends this build knows.
var Backends = []string{BackendLocal, BackendDocker}

// Backends: where nodes run.
const (
	BackendLocal  = "local"
	BackendDocker = "docker"
)

// Node is one Redis server.
type Node interface {
	Name() string
	// Addr is the server's own host:port. Clients never use it directly:
	// they go through a proxy so that the link can be faulted.
	Addr() string
	Kill() error
	// Restart starts a killed node on the same port and directory. (A
	// local node stopped with Stop can restart too; a container cannot,
	// since Stop removes it.)
	Restart(ctx context.Context) error
	// LoseData removes what the node keeps across a restart (Redis's AOF
	// and RDB, an etcd member's data directory), as a disk lost with its
	// machine would; call it while the node is down.
	LoseData() error
	Pause() error
	Resume() error
	// Paused reports whether the node is paused (Pause without Resume).
	Paused() bool
	Stop() error
	Running() bool
	// SetClockOffset moves the node's wall clock to d from true time (the
	// clock faults); it fails unless the node was started with Spec.Clock.
	SetClockOffset(d time.Duration) error
	// ClockOffset is the node's current clock offset.
	ClockOffset() time.Duration
	// ShiftClock moves the node's wall clock by d from wherever it is,
	// keeping any drift: a fault that shifts a clock and shifts it back
	// leaves another fault's move in place.
	ShiftClock(d time.Duration) error
	// DriftClock makes the node's wall clock run fast (rate > 0) or slow
	// by rate parts per billion from the offset it has now, and returns
	// what takes that drift back (its rate before, less what this drift
	// gained). SetClockOffset stops any drift.
	DriftClock(rate int64) (undo func() error, err error)
	// ClockDrift is the rate the node's clock drifts at now.
	ClockDrift() int64
}

// Spec says what to start.
type Spec struct {
	Topology string
	// Target is the URL of a deployment the harness did not start; it
	// makes the topology Target.
	Target  string
	Backend string
	// Image is the docker backend's node image; empty means DefaultImage.
	Image       string
	Persistence string
	// Dir holds one directory per node (data and log).
	Dir string
	// Clock starts every redis-server under the clock shim, so that
	// Node.SetClockOffset works; the clock faults need it.
	Clock bool
	// Nodes is how many nodes the topology has, for topologies whose size
	// can be chosen (redlock); 0 is the topology's own size.
	Nodes int
	// Shards and Replicas size a cluster topology: primaries, and replicas
	// of each; 0 is the default.
	Shards, Replicas int
	// Auth runs every node and sentinel with passwords and ACLs: the
	// default user has a password only the harness knows (its own checks,
	// replication, the sentinels' monitoring), and lock clients log in as
	// ClientUser, who may run only what a lock client needs, on LockKeys.
	Auth bool
	// TLS runs every node and sentinel with TLS only (no plain port),
	// replication and monitoring included, with a CA and certificate made
	// for the run under Dir/tls.
	TLS bool
	// LockKeys are the key patterns (Redis globs) ClientUser may touch
	// under Auth; empty means every key.
	LockKeys []string
	// Link makes a proxy named name in front of upstream and returns its
	// address. Every path to a node goes through one: each client's, and
	// for topologies whose nodes talk to each other (replication,
	// monitoring) that traffic too, so any of it can be faulted.
	Link func(name, upstream string) (addr string, err error)
	// describing plans a topology only to say what it can do (Describe).
	describing bool
}

// Cluster is a topology: planned by New, started by Start.
type Cluster struct {
	// Topology is the topology's name.
	Topology string
	// Nodes are the Redis servers once started; for sentinel, n1 starts
	// as the primary.
	Nodes []Node
	// Sentinels watch the nodes (sentinel topology only).
	Sentinels []Node
	top       *topology
	spec      Spec
	planned   plan
	backend   backend
	// internal maps a node's name to the address its peers and monitors
	// use for it: its internal link (topologies with Replication).
	internal map[string]string
	// sec is the started run's passwords and certificates (Auth, TLS);
	// nil for a plain run.
	sec *security
	// announcedSentinels are the addresses a Sentinel target's sentinels
	// announce for each other, by sentinel name.
	announcedSentinels map[string][]string
	// bus are a cluster topology's bus routers, one per node, in order.
	bus []*busRouter
	// closers release what the topology made besides its nodes, after
	// them.
	closers []func()
}

// backend starts nodes somewhere: as local processes or as containers.
type backend interface {
	start(ctx context.Context, cfg NodeConfig) (Node, error)
	// close releases the backend once its nodes are stopped.
	close() error
}

type localBackend struct{}

func (localBackend) start(ctx context.Context, cfg NodeConfig) (Node, error) {
	n, err := StartLocalConfig(ctx, cfg)
	if err != nil {
		return nil, err // not a typed nil in a Node
	}
	return n, nil
}
func (localBackend) close() error { return nil }

// startNode starts one node of the topology with the cluster's backend.
func (c *Cluster) startNode(ctx context.Context, cfg NodeConfig) (Node, error) {
	return c.backend.start(ctx, cfg)
}

// Validate reports the first problem with the spec, naming the bad value
// and the valid ones.
func (s Spec) Validate() error {
	_, err := New(s)
	return err
}

// OneOf returns an error naming the bad value and the valid ones when v is
// not among them.
func OneOf(what, v string, valid []string) error {
	for _, ok := range valid {
		if v == ok {
			return nil
		}
	}
	return suggest.Unknown(what, v, valid, "")
}

// New plans the topology the spec asks for, without starting anything:
// what faults and recipes ask of it (Can, NodeNames) is known before any
// node runs, so impossible combinations are refused up front.
func New(s Spec) (*Cluster, error) {
	if s.Target != "" {
		if s.Topology != "" && s.Topology != Single && s.Topology != Target && s.Topology != TargetSentinel {
			return nil, fmt.Errorf("--target is a deployment of its own: drop --topology %s", s.Topology)
		}
		s.Topology = Target
		if t, err := ParseTarget(s.Target); err == nil && t.Master != "" {
			s.Topology = TargetSentinel
		}
	}
	top, err := lookup(s.Topology)
	if err != nil {
		return nil, err
	}
	if err := OneOf("backend", s.Backend, Backends); err != nil {
		return nil, err
	}
	if s.Image != "" && s.Backend != BackendDocker {
		return nil, fmt.Errorf("--image %q needs the docker backend, not %q", s.Image, s.Backend)
	}
	if s.Persistence == "" {
		s.Persistence = PersistNone
	}
	if err := OneOf("persistence", s.Persistence, Persistences); err != nil {
		return nil, err
	}
	p, err := top.plan(s)
	if err != nil {
		return nil, err
	}
	return &Cluster{Topology: top.name, top: top, spec: s, planned: p}, nil
}

// Describe plans the named topology with its defaults only to say what it
// can do (Can, NodeNames, Shape): harness list, the suites and the
// contract tests ask every topology, a target included, without a URL.
// Describe's plan is not meant to start.
func Describe(name string) (*Cluster, error) {
	return New(Spec{Topology: name, Backend: BackendLocal, describing: true})
}

// Fresh is an unstarted copy of the planned topology, to start once more.
func (c *Cluster) Fresh() *Cluster {
	return &Cluster{Topology: c.Topology, top: c.top, spec: c.spec, planned: c.planned}
}

// Start plans and starts a topology (New, then Start).
func Start(ctx context.Context, s Spec) (*Cluster, error) {
	c, err := New(s)
	if err != nil {
		return nil, err
	}
	if err := c.Start(ctx, s.Dir, s.Link); err != nil {
		return nil, err
	}
	return c, nil
}

// Start starts every planned node, each in its own directory under dir,
// with every link between nodes made by link (see Spec.Link), and waits
// until each answers PING (and whatever else the topology waits for:
// sentinels agreeing, say). On error, whatever started is stopped again.
func (c *Cluster) Start(ctx context.Context, dir string, link func(name, upstream string) (string, error)) (err error) {
	if c.backend != nil {
		return fmt.Errorf("topology %s started twice", c.Topology)
	}
	if c.spec.describing {
		return fmt.Errorf("topology %s was planned to describe it (Describe), not to start", c.Topology)
	}
	c.spec.Dir, c.spec.Link = dir, link
	if c.planned.target != nil {
		c.sec, err = c.planned.target.security()
	} else {
		c.sec, err = newSecurity(c.spec, dir)
	}
	if err != nil {
		return err
	}
	c.backend = localBackend{}
	if c.spec.Backend == BackendDocker {
		if c.backend, err = newDockerBackend(ctx, c.spec.Image); err != nil {
			c.backend = nil
			return err
		}
	}
	if err := c.top.start(ctx, c); err != nil {
		c.Close()
		return err
	}
	return nil
}

// NodeNames are the names of the topology's nodes, started or not.
func (c *Cluster) NodeNames() []string { return append([]string(nil), c.planned.nodes...) }

// SentinelNames are the names of the topology's sentinels, started or not.
func (c *Cluster) SentinelNames() []string { return append([]string(nil), c.planned.sentinels...) }

// Servers are the started nodes and sentinels, nodes first.
func (c *Cluster) Servers() []Node { return append(append([]Node(nil), c.Nodes...), c.Sentinels...) }

// ServerVersions asks every started node and sentinel which server it is
// (INFO server) and says, by name, its version and what it runs from: the
// executable, or the docker backend's image. A server that does not answer
// says why.
func (c *Cluster) ServerVersions(ctx context.Context) map[string]string {
	out := map[string]string{}
	for _, n := range c.Servers() {
		if c.top.version != nil {
			v, err := c.top.version(ctx, n)
			if err != nil {
				v = "unknown (" + err.Error() + ")"
			}
			out[n.Name()] = v
			continue
		}
		v, err := c.query(ctx, n.Addr(), "INFO", "server")
		if err != nil {
			out[n.Name()] = "unknown (" + err.Error() + ")"
			continue
		}
		info := map[string]string{}
		text, _ := v.(string)
		for _, line := range strings.Split(text, "\n") {
			if k, val, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
				info[k] = val
			}
		}
		from := info["executable"]
		if c.spec.Backend == BackendDocker {
			from = "image " + cmp.Or(c.spec.Image, DefaultImage)
		}
		out[n.Name()] = fmt.Sprintf("%s (%s)", info["redis_version"], from)
	}
	return out
}

// nodeConfig is how a topology starts a planned node: in its own
// directory, with the spec's persistence and clock.
func (c *Cluster) nodeConfig(name string) NodeConfig {
	return NodeConfig{Name: name, Dir: filepath.Join(c.spec.Dir, name), Persistence: c.spec.Persistence, Clock: c.spec.Clock, sec: c.sec}
}

// Do runs one command on a started node or sentinel as the harness does
// for itself: as the default user, with the run's admin password and TLS
// when it has them. Lock clients never get this path (see ConnectClient).
func (c *Cluster) Do(ctx context.Context, n Node, args ...any) (any, error) {
	return c.query(ctx, n.Addr(), args...)
}

// DoAll runs commands one after another on one connection of the harness's
// own to a started node, as Do runs one, and returns each one's answer and
// error: for commands that change the connection for the next, such as a
// cluster replica's READONLY before a read.
func (c *Cluster) DoAll(ctx context.Context, n Node, cmds ...[]any) ([]any, []error) {
	opts := c.sec.options(n.Addr())
	opts.PoolSize = 1
	cl := redis.NewClient(opts)
	defer cl.Close()
	pipe := cl.Pipeline()
	done := make([]*redis.Cmd, len(cmds))
	for i, args := range cmds {
		done[i] = pipe.Do(ctx, args...)
	}
	pipe.Exec(ctx) // each command's own error is kept with it
	vals, errs := make([]any, len(cmds)), make([]error, len(cmds))
	for i, cmd := range done {
		vals[i], errs[i] = cmd.Result()
	}
	return vals, errs
}

// Ping wants a PONG from a started node or sentinel within timeout, over
// the harness's own path (see Do).
func (c *Cluster) Ping(n Node, timeout time.Duration) error {
	return c.sec.ping(n.Addr(), timeout)
}

// query sends one command to addr on a short-lived connection of the
// harness's own.
func (c *Cluster) query(ctx context.Context, addr string, args ...any) (any, error) {
	cl := redis.NewClient(c.sec.options(addr))
	defer cl.Close()
	return cl.Do(ctx, args...).Result()
}

// Node returns the node with the given name.
func (c *Cluster) Node(name string) (Node, error) {
	var names []string
	for _, n := range c.Nodes {
		if n.Name() == name {
			return n, nil
		}
		names = append(names, n.Name())
	}
	return nil, fmt.Errorf("no node %q (nodes: %s)", name, strings.Join(names, ", "))
}

// Close stops every node and sentinel, then the backend. Paused nodes are
// resumed first so they can exit; containers are removed. Closing a
// cluster that never started does nothing.
func (c *Cluster) Close() error {
	var errs []error
	for _, n := range append(append([]Node(nil), c.Sentinels...), c.Nodes...) {
		errs = append(errs, n.Stop())
	}
	if c.backend != nil {
		errs = append(errs, c.backend.close())
		c.backend = nil
	}
	for _, f := range c.closers {
		f()
	}
	c.closers, c.bus = nil, nil
	return errors.Join(errs...)
}
