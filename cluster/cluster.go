// Package cluster starts the Redis topologies a run tests, built from nodes
// that a backend provides. The local backend (the default) runs redis-server
// processes on 127.0.0.1; the docker backend runs each node in a container
// of a chosen image with host networking, so both look the same from the
// outside. Every node can be stopped, killed, restarted on the same port
// and directory, paused and resumed, which is what the process faults need.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"
)

// Persistence modes a node can run with.
const (
	PersistNone      = "none"
	PersistAOFAlways = "aof-always"
)

// Persistences lists the valid persistence modes.
var Persistences = []string{PersistNone, PersistAOFAlways}

// Topologies and backends this build knows.
var (
	Topologies = []string{"single", "sentinel", "redlock"}
	Backends   = []string{BackendLocal, BackendDocker}
)

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
	Pause() error
	Resume() error
	Stop() error
	Running() bool
	// SetClockOffset moves the node's wall clock to d from true time (the
	// clock faults); it fails unless the node was started with Spec.Clock.
	SetClockOffset(d time.Duration) error
	// ClockOffset is the node's current clock offset.
	ClockOffset() time.Duration
}

// Spec says what to start.
type Spec struct {
	Topology string
	Backend  string
	// Image is the docker backend's node image; empty means DefaultImage.
	Image       string
	Persistence string
	// Dir holds one directory per node (data and log).
	Dir string
	// Clock starts every redis-server under the clock shim, so that
	// Node.SetClockOffset works; the clock faults need it.
	Clock bool
	// Nodes is the number of independent primaries of a redlock topology.
	Nodes int
	// Link makes a proxy named name in front of upstream and returns its
	// address. Topologies whose nodes talk to each other (replication,
	// sentinels) route that traffic through such proxies, so it can be
	// faulted like any client link.
	Link func(name, upstream string) (addr string, err error)
}

// Cluster is a started topology.
type Cluster struct {
	Topology string
	// Nodes are the Redis servers; for sentinel, n1 starts as the primary.
	Nodes []Node
	// Sentinels watch the nodes (sentinel topology only).
	Sentinels []Node
	// Internal maps a node's name to the address its peers and the
	// sentinels use for it: its internal proxy.
	Internal map[string]string
	// Master is the name the sentinels monitor the primary under.
	Master string

	backend backend
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

// Validate reports the first unknown name in the spec, listing the valid ones.
func (s Spec) Validate() error {
	if err := OneOf("topology", s.Topology, Topologies); err != nil {
		return err
	}
	if err := OneOf("backend", s.Backend, Backends); err != nil {
		return err
	}
	if s.Image != "" && s.Backend != BackendDocker {
		return fmt.Errorf("--image %q needs the docker backend, not %q", s.Image, s.Backend)
	}
	return OneOf("persistence", s.Persistence, Persistences)
}

// OneOf returns an error naming the bad value and the valid ones when v is
// not among them.
func OneOf(what, v string, valid []string) error {
	for _, ok := range valid {
		if v == ok {
			return nil
		}
	}
	return fmt.Errorf("unknown %s %q (valid: %s)", what, v, strings.Join(valid, ", "))
}

// Start starts every node of the topology and waits until each answers PING.
// On error, whatever started is stopped again.
func Start(ctx context.Context, s Spec) (c *Cluster, err error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	c = &Cluster{Topology: s.Topology, backend: localBackend{}}
	if s.Backend == BackendDocker {
		if c.backend, err = newDockerBackend(ctx, s.Image); err != nil {
			return nil, err
		}
	}
	defer func() {
		if err != nil {
			c.Close()
		}
	}()
	switch s.Topology {
	case "sentinel":
		err = c.startSentinel(ctx, s)
	case "redlock":
		err = c.startRedlock(ctx, s)
	default:
		var n Node
		n, err = c.startNode(ctx, NodeConfig{Name: "n1", Dir: filepath.Join(s.Dir, "n1"), Persistence: s.Persistence, Clock: s.Clock})
		if n != nil {
			c.Nodes = append(c.Nodes, n)
		}
	}
	if err != nil {
		return nil, err
	}
	return c, nil
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
// resumed first so they can exit; containers are removed.
func (c *Cluster) Close() error {
	var errs []error
	for _, n := range append(append([]Node(nil), c.Sentinels...), c.Nodes...) {
		errs = append(errs, n.Stop())
	}
	if c.backend != nil {
		errs = append(errs, c.backend.close())
	}
	return errors.Join(errs...)
}
