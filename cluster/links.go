package cluster

import (
	"fmt"

	"github.com/lockharness/lockharness/access"
)

// Link names: the one place they are spelled. Faults find a link by the
// name a Cluster method gives them.
func internalLinkName(node string) string         { return "int-" + node }
func clientLinkName(slot int, node string) string { return fmt.Sprintf("c%d-%s", slot, node) }

// ConnectClient makes client slot's links, one to every node and sentinel,
// and says how the client reaches the lock service through them. A direct
// client gets no links: it reaches every node and sentinel at its own
// address, for a run in which no fault cuts or slows a client's links
// (faults.Nemesis.CutsClientLinks), sparing each command two crossings of
// a proxy.
func (c *Cluster) ConnectClient(slot int, direct bool) (access.Access, error) {
	if c.spec.Link == nil && !direct {
		return access.Access{}, fmt.Errorf("topology %s: clients need a Link function for their proxies", c.Topology)
	}
	if len(c.Nodes) == 0 {
		return access.Access{}, fmt.Errorf("topology %s has not started", c.Topology)
	}
	addrs := map[string]string{}
	for _, n := range c.Servers() {
		addr := n.Addr()
		if !direct {
			var err error
			if addr, err = c.spec.Link(clientLinkName(slot, n.Name()), n.Addr()); err != nil {
				return access.Access{}, err
			}
		}
		addrs[n.Name()] = addr
	}
	return c.sec.clientAccess(c.top.access(c, func(node string) string { return addrs[node] })), nil
}

// ClientLink is the name of client slot's link to a node or sentinel.
func (c *Cluster) ClientLink(slot int, node string) string { return clientLinkName(slot, node) }

// ClientLinks are the names of client slot's links, one to every node and
// sentinel (ConnectClient makes them).
func (c *Cluster) ClientLinks(slot int) []string {
	var out []string
	for _, n := range append(c.NodeNames(), c.planned.sentinels...) {
		out = append(out, clientLinkName(slot, n))
	}
	return out
}

// InternalLinks are the names of the links that a node's peers and
// monitors reach it through, or an error for a topology whose nodes have
// none: its client port (replication, monitoring) and, on a cluster, its
// cluster bus both ways, with every peer.
func (c *Cluster) InternalLinks(node string) ([]string, error) {
	if err := c.Can(Replication); err != nil {
		return nil, err
	}
	if _, ok := c.internal[node]; !ok {
		return nil, fmt.Errorf("topology %s has no node %q", c.Topology, node)
	}
	out := []string{internalLinkName(node)}
	if len(c.bus) > 0 {
		for _, peer := range c.planned.nodes {
			if peer != node {
				out = append(out, busLinkName(node, peer), busLinkName(peer, node))
			}
		}
	}
	return out, nil
}

// InternalAddr is the address a node's peers and monitors use for it, and
// so the one its sentinels announce: the address clients are told to dial
// and access.Access.Dial maps. Empty for topologies whose nodes have none.
func (c *Cluster) InternalAddr(node string) string { return c.internal[node] }
