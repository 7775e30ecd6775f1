package checker

import (
	"testing"

	"github.com/lockharness/lockharness/history"
)

// down adds a kill of nodes from start to end (ms) whose end records each
// node out from from to until, of the topology's of nodes.
func (h *hist) down(start, from, until, end int64, of int, nodes ...string) {
	h.fault("kill-node", nodes[0], start, end)
	e := h.events[len(h.events)-1]
	for _, n := range nodes {
		e.Down = append(e.Down, history.Outage{Node: n, From: from * 1e6, Until: until * 1e6, Of: of})
	}
}

func TestPhantomGrant(t *testing.T) {
	h := newHist()
	h.down(100, 101, 300, 310, 1, "n1")
	h.acquire(0, key, "A", 150, 152, ok)
	h.release(0, key, "A", 160, 161, fail)
	r := h.check(t, Options{Slack: slack2})
	expect(t, r, map[string]int{PhantomGrant: 1})
	mentions(t, finding(t, r, PhantomGrant).Narrative,
		"0.150 s client 0 (process 0) asked for lock:a token A; at 0.152 s it was told it holds it, but the lock's one node was down",
		"(n1 from 0.101 s until 0.300 s): no server can have granted it")

	for name, tc := range map[string]struct {
		inv, done int64
		of        int
		nodes     []string
	}{
		"sent before the kill":       {100, 152, 1, []string{"n1"}},
		"answered as it came back":   {150, 305, 1, []string{"n1"}},
		"another node was up":        {150, 152, 2, []string{"n1"}},
		"every node down, not one":   {150, 152, 2, []string{"n1", "n2"}},
		"an outage of the same node": {150, 152, 2, []string{"n1", "n1"}},
	} {
		t.Run(name, func(t *testing.T) {
			h := newHist()
			h.down(100, 101, 300, 310, tc.of, tc.nodes...)
			h.acquire(0, key, "A", tc.inv, tc.done, ok)
			want := map[string]int(nil)
			if name == "every node down, not one" {
				want = map[string]int{PhantomGrant: 1}
			}
			expect(t, h.check(t, Options{Slack: slack2}), want)
		})
	}
}

func TestOutagesAreValidated(t *testing.T) {
	h := newHist()
	h.down(100, 200, 150, 310, 1, "n1")
	if _, err := Check(h.build(), Options{}); err == nil {
		t.Error("an outage that ends before it begins was accepted")
	}
	h = newHist()
	h.down(100, 101, 400, 310, 1, "n1")
	if _, err := Check(h.build(), Options{}); err == nil {
		t.Error("an outage past its fault's end was accepted")
	}
}
