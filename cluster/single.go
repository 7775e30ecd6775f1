package cluster

import (
	"fmt"

	"github.com/lockharness/lockharness/access"
)

// single is one Redis node: the lock service most teams start with.
var single = topology{
	name:    Single,
	summary: "one redis-server",
	has:     []Capability{access.Primary, access.Independent, NodeControl},
	plan: func(s Spec) (plan, error) {
		if s.Nodes > 1 {
			return plan{}, fmt.Errorf("topology single has one node, not %d (--nodes is for topologies of several)", s.Nodes)
		}
		return plan{nodes: []string{"n1"}}, nil
	},
	start:  startEachNode,
	access: eachNode,
}
