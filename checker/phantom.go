package checker

import (
	"fmt"
	"sort"
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
	down := newOutageIndex(c.outages)
	for i := range c.ops {
		o := &c.ops[i]
		if o.F != history.Acquire || o.Type != history.OK || !down.allOut(o.InvT, o.DoneT) {
			continue
		}
		out := down.covering(o.InvT, o.DoneT)
		spans := make([]string, len(out))
		for i, d := range out {
			spans[i] = fmt.Sprintf("%s from %s until %s", d.Node, Secs(d.From), Secs(d.Until))
		}
		node := "the lock's one node was"
		if down.of > 1 {
			node = fmt.Sprintf("all %d of the lock's nodes were", down.of)
		}
		narrative := fmt.Sprintf("%s %s asked for %s; at %s it was told it holds it, but %s down from before it asked until after its answer (%s): no server can have granted it",
			Secs(o.InvT), who(o), grantee(o), Secs(o.DoneT), node, strings.Join(spans, ", "))
		c.report(PhantomGrant, o.Key, positions(o), narrative)
	}
}

// outageIndex answers, for a span, which nodes were out all through it:
// each node's outages by start, with the latest end among each prefix.
type outageIndex struct {
	of     int
	byNode map[string][]history.Outage
	// reach[node][i] is the latest Until among byNode[node][:i+1].
	reach map[string][]int64
}

func newOutageIndex(outages []history.Outage) *outageIndex {
	x := &outageIndex{byNode: map[string][]history.Outage{}, reach: map[string][]int64{}}
	for _, d := range outages {
		x.of = max(x.of, d.Of)
		x.byNode[d.Node] = append(x.byNode[d.Node], d)
	}
	for node, ds := range x.byNode {
		sort.Slice(ds, func(i, j int) bool { return ds[i].From < ds[j].From })
		r := make([]int64, len(ds))
		for i, d := range ds {
			r[i] = d.Until
			if i > 0 {
				r[i] = max(r[i], r[i-1])
			}
		}
		x.reach[node] = r
	}
	return x
}

// outAt is the index of the last outage of node begun by from that
// lasted to until, or -1.
func (x *outageIndex) outAt(node string, from, until int64) int {
	ds := x.byNode[node]
	n := sort.Search(len(ds), func(i int) bool { return ds[i].From > from })
	if n == 0 || x.reach[node][n-1] < until {
		return -1
	}
	return n - 1
}

// allOut reports whether every node was out all through [from, until].
func (x *outageIndex) allOut(from, until int64) bool {
	if len(x.byNode) < x.of {
		return false
	}
	out := 0
	for node := range x.byNode {
		if x.outAt(node, from, until) >= 0 {
			out++
		}
	}
	return out >= x.of
}

// covering are, per node, an outage that lasted all through [from, until].
func (x *outageIndex) covering(from, until int64) []history.Outage {
	var out []history.Outage
	nodes := make([]string, 0, len(x.byNode))
	for node := range x.byNode {
		nodes = append(nodes, node)
	}
	sort.Strings(nodes)
	for _, node := range nodes {
		for i := x.outAt(node, from, until); i >= 0; i-- {
			if d := x.byNode[node][i]; d.Until >= until {
				out = append(out, d)
				break
			}
		}
	}
	return out
}
