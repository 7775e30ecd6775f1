package reports

import (
	"strings"
	"testing"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/history"
)

// A legitimate holder's refused write, and a grant answered while the one
// node was down, are drawn on the timeline and told in the causes.
func TestRefusedWriteAndPhantomGrantOnThePage(t *testing.T) {
	var b builder
	b.at(0.100, acq(history.Invoke, 0, 0, "a0"))
	b.at(0.102, with(acq(history.OK, 0, 0, "a0"), func(e *history.Event) { e.Fence = 5 }))
	b.at(0.103, with(op(history.Invoke, history.Write, 0, 0, "a0"), func(e *history.Event) { e.Fence, e.Value = 5, history.Int64(0) }))
	b.at(0.104, with(op(history.Fail, history.Write, 0, 0, "a0"), func(e *history.Event) {
		e.Fence, e.Reason, e.Error = 5, history.ReasonRejected, "fence 5 is below the highest accepted fence 9"
	}))
	b.at(0.200, op(history.Invoke, history.Release, 0, 0, "a0"))
	b.at(0.201, op(history.OK, history.Release, 0, 0, "a0"))
	b.at(2.000, fault("kill-node", history.Start, "n1", "restart in 50ms"))
	b.at(2.100, acq(history.Invoke, 1, 1, "b0"))
	b.at(2.101, acq(history.OK, 1, 1, "b0"))
	b.at(2.300, with(fault("kill-node", history.End, "n1", "restarted"), func(e *history.Event) {
		e.Down = []history.Outage{{Node: "n1", From: 2.001e9, Until: 2.250e9, Of: 1}}
	}))
	events := b.events
	res, err := Conclude(events, Meta{Seed: 1}, checker.Options{Slack: DefaultSlack})
	if err != nil {
		t.Fatal(err)
	}
	if res.Anomalies[checker.RefusedWrite] != 1 || res.Anomalies[checker.PhantomGrant] != 1 {
		t.Fatalf("anomalies %v", res.Anomalies)
	}
	tl := TimelineData(events, res)
	var refused int
	for _, w := range tl.Writes {
		if w.Status == WriteRefused {
			refused++
		}
	}
	if refused != 1 {
		t.Errorf("%d writes drawn as refused, want 1: %+v", refused, tl.Writes)
	}
	lanes := map[string]bool{}
	for _, s := range tl.RedSpans {
		if s.Client >= 0 {
			lanes[s.Anomaly] = true
		}
	}
	if !lanes[checker.RefusedWrite] || !lanes[checker.PhantomGrant] {
		t.Errorf("red spans on the lanes: %v, want one for each finding", lanes)
	}
	for _, f := range res.Checker.Findings {
		causes := strings.Join(Causes(events, f), " | ")
		switch f.Anomaly {
		case checker.RefusedWrite:
			if !strings.Contains(causes, "the resource's check refused client 0's write with fence 5 at 0.104 s") {
				t.Errorf("refused-write causes: %s", causes)
			}
		case checker.PhantomGrant:
			if !strings.Contains(causes, "n1 was killed from 2.001 s until 2.250 s (kill-node), the whole of client 1's acquire from 2.100 s to 2.101 s") {
				t.Errorf("phantom-grant causes: %s", causes)
			}
		}
	}
}
