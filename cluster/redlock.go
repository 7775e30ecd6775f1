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
func (c *Cluster) startRedlock(ctx context.Context, s Spec) error {
	n := s.Nodes
	if n == 0 {
		n = DefaultRedlockNodes
	}
	if n < 3 {
		return fmt.Errorf("a redlock topology needs at least 3 nodes, got %d", n)
	}
	for i := 1; i <= n; i++ {
		name := fmt.Sprintf("n%d", i)
		node, err := c.startNode(ctx, NodeConfig{Name: name, Dir: filepath.Join(s.Dir, name), Persistence: s.Persistence, Clock: s.Clock})
		if err != nil {
			return err
		}
		c.Nodes = append(c.Nodes, node)
	}
	return nil
}

// Quorum is the majority of the topology's nodes.
func (c *Cluster) Quorum() int { return len(c.Nodes)/2 + 1 }
