package cluster

import (
	"fmt"

	"github.com/lockharness/lockharness/access"
)

// DefaultRedlockNodes is the size of a redlock topology unless told otherwise.
const DefaultRedlockNodes = 5

// redlock is N independent primaries, n1..nN, as the Redlock algorithm
// wants: no replication, no shared fate.
var redlock = topology{
	name:    Redlock,
	summary: fmt.Sprintf("independent primaries for Redlock (--nodes N, default %d)", DefaultRedlockNodes),
	has:     []Capability{access.Independent, Majorities, NodeControl},
	plan: func(s Spec) (plan, error) {
		n := s.Nodes
		if n == 0 {
			n = DefaultRedlockNodes
		}
		if n < 3 {
			return plan{}, fmt.Errorf("a redlock topology needs at least 3 nodes, got %d", n)
		}
		var p plan
		for i := 1; i <= n; i++ {
			p.nodes = append(p.nodes, fmt.Sprintf("n%d", i))
		}
		return p, nil
	},
	start:  startEachNode,
	access: eachNode,
}

// Quorum is the majority of the topology's nodes.
func (c *Cluster) Quorum() int { return len(c.planned.nodes)/2 + 1 }

// Majority is client slot's majority of the nodes in the majorities ring:
// Quorum consecutive nodes starting at slot·(Quorum−1), so that the
// majorities of neighbouring slots share exactly one node (with 5 nodes:
// n1-n3, n3-n5, n5-n2, ...), and no two slots below N share a majority.
// It needs started nodes.
func (c *Cluster) Majority(slot int) []Node {
	q := c.Quorum()
	var out []Node
	for k := 0; k < q && len(c.Nodes) > 0; k++ {
		out = append(out, c.Nodes[(slot*(q-1)+k)%len(c.Nodes)])
	}
	return out
}
