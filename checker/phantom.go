package checker

import (
	"fmt"
	"strings"

	"github.com/lockharness/lockharness/history"
)

// auditPhantoms flags a grant answered while every node that can hold the
// lock was out from before the acquire was sent until after its answer
// (history.Outage): no server can have made it (PhantomGrant). A grant
// sent before a node went down, or answered after it began to come back,
// may be real, and is not judged.
func (c *checker) auditPhantoms() {
	if len(c.outages) == 0 {
		return
	}
	for i := range c.ops {
		o := &c.ops[i]
		if o.F != history.Acquire || o.Type != history.OK {
			continue
		}
		var out []history.Outage
		nodes := map[string]bool{}
		of := 0
		for _, d := range c.outages {
			if d.From <= o.InvT && o.DoneT <= d.Until && !nodes[d.Node] {
				nodes[d.Node] = true
				out = append(out, d)
				of = max(of, d.Of)
			}
		}
		if len(out) == 0 || len(nodes) < of {
			continue
		}
		spans := make([]string, len(out))
		for i, d := range out {
			spans[i] = fmt.Sprintf("%s from %s until %s", d.Node, history.Secs(d.From), history.Secs(d.Until))
		}
		node := "the lock's one node was"
		if of > 1 {
			node = fmt.Sprintf("all %d of the lock's nodes were", of)
		}
		narrative := fmt.Sprintf("%s %s asked for %s; at %s it was told it holds it, but %s down from before it asked until after its answer (%s): no server can have granted it",
			history.Secs(o.InvT), who(o), grantee(o), history.Secs(o.DoneT), node, strings.Join(spans, ", "))
		c.report(PhantomGrant, o.Key, positions(o), narrative)
	}
}
