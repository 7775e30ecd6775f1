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

// A frozen client's cause names the validity of the finding's own lease,
// not of an earlier lease of the same client that also ran out inside the
// pause (it once said 1.100 s where the event table said 1.600 s).
func TestFrozenClientsCauseNamesTheFindingsLease(t *testing.T) {
	var b builder
	b.at(0.100, acq(history.Invoke, 0, 0, "a0"))
	b.at(0.101, with(acq(history.OK, 0, 0, "a0"), func(e *history.Event) { e.ValidMs = 1000 }))
	b.at(0.500, op(history.Invoke, history.Release, 0, 0, "a0"))
	b.at(0.501, op(history.OK, history.Release, 0, 0, "a0"))
	b.at(0.600, acq(history.Invoke, 0, 0, "a1"))
	b.at(0.601, with(acq(history.OK, 0, 0, "a1"), func(e *history.Event) { e.ValidMs = 1000 }))
	b.at(0.602, with(op(history.Invoke, history.Write, 0, 0, "a1"), func(e *history.Event) { e.Value = history.Int64(0) }))
	b.at(0.650, fault("pause-client", history.Start, "client 0", "frozen at before-write for 2.35s"))
	b.at(1.700, acq(history.Invoke, 1, 1, "b0"))
	b.at(1.701, acq(history.OK, 1, 1, "b0"))
	b.at(1.702, with(op(history.Invoke, history.Write, 1, 1, "b0"), func(e *history.Event) { e.Value = history.Int64(0) }))
	b.at(1.703, with(op(history.OK, history.Write, 1, 1, "b0"), func(e *history.Event) { e.Value = history.Int64(1) }))
	b.at(3.000, fault("pause-client", history.End, "client 0", "resumed"))
	b.at(3.001, with(op(history.OK, history.Write, 0, 0, "a1"), func(e *history.Event) { e.Value = history.Int64(1) }))
	res, err := Conclude(b.events, Meta{Seed: 1}, checker.Options{Slack: DefaultSlack})
	if err != nil {
		t.Fatal(err)
	}
	told := false
	for _, f := range res.Checker.Findings {
		if f.Anomaly != checker.StaleWrite {
			continue
		}
		causes := strings.Join(Causes(b.events, f), " | ")
		if strings.Contains(causes, "1.100 s") || !strings.Contains(causes, "its lease's validity ran out at 1.600 s") {
			t.Errorf("stale-write causes: %s", causes)
		}
		told = true
	}
	if !told {
		t.Fatalf("no stale-write found: %v", res.Anomalies)
	}
}
