package cluster

import (
	"context"
	"fmt"
	"path/filepath"
)

// DefaultRedlockNodes is the size of a redlock topology unless told otherwise.
const DefaultRedlockNodes = 5

// startRedlock starts N independent primaries, n1..nN, as the Redlock
// algorithm wants: no replication, no shared fate.
func startRedlock(ctx context.Context, s Spec) (c *Cluster, err error) {
	n := s.Nodes
	if n == 0 {
		n = DefaultRedlockNodes
	}
	if n < 3 {
		return nil, fmt.Errorf("a redlock topology needs at least 3 nodes, got %d", n)
	}
	c = &Cluster{Topology: "redlock"}
	defer func() {
		if err != nil {
			c.Close()
		}
	}()
	for i := 1; i <= n; i++ {
		name := fmt.Sprintf("n%d", i)
		node, err := StartLocalConfig(ctx, LocalConfig{Name: name, Dir: filepath.Join(s.Dir, name), Persistence: s.Persistence, Clock: s.Clock})
		if err != nil {
			return nil, err
		}
		c.Nodes = append(c.Nodes, node)
	}
	return c, nil
}

// Quorum is the majority of the topology's nodes.
func (c *Cluster) Quorum() int { return len(c.Nodes)/2 + 1 }
