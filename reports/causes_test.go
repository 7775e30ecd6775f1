package reports

import (
	"strings"
	"testing"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/history"
)

// failover is a failover-double-grant as the harness records it: client 0
// is granted the lock on n1 while n1 is cut from its replicas, the probe
// finds the grant on n1 (on n1 and n2 when replicated is set), n2 is
// promoted, and client 1 is granted the lock on n2 while client 0 still
// holds it.
func failover(replicated bool) ([]history.Event, checker.Finding) {
	var b builder
	b.at(0.500, fault("partition-primary", history.Start, "n1", "cut from its replicas and peers and client 1"))
	a := b.at(1.000, acq(history.Invoke, 0, 0, "a0"))
	b.at(1.002, acq(history.OK, 0, 0, "a0"))
	holders, answers := "n1", "on n1 (primary); absent on n2 (replica); absent on n3 (replica)"
	if replicated {
		holders, answers = "n1,n2", "on n1 (primary); on n2 (replica); absent on n3 (replica)"
	}
	b.at(1.003, with(fault(history.GrantSeen, history.Instant, holders, "client 0's grant (event 2): "+answers),
		func(e *history.Event) { e.Key, e.Token = "lock:orders", "a0" }))
	b.at(3.000, fault("switch-master", history.Instant, "n2", "n2 replaced n1 as primary"))
	b.at(3.100, acq(history.Invoke, 1, 1, "b0"))
	g := b.at(3.102, acq(history.OK, 1, 1, "b0"))
	b.at(3.103, with(fault(history.GrantSeen, history.Instant, "n2", "client 1's grant (event 6): another value on n1 (primary); on n2 (primary); absent on n3 (replica)"),
		func(e *history.Event) { e.Key, e.Token = "lock:orders", "b0" }))
	b.at(3.500, fault("partition-primary", history.End, "n1", "healed"))
	r := b.at(3.600, op(history.Invoke, history.Release, 0, 0, "a0"))
	b.at(3.601, op(history.OK, history.Release, 0, 0, "a0"))
	return b.events, checker.Finding{Anomaly: checker.DoubleGrant, Key: "lock:orders", Events: []int{a, a + 1, g - 1, g, r}}
}

func TestCausesNameThePromotionOfAnUnreplicatedGrant(t *testing.T) {
	events, f := failover(false)
	causes := Causes(events, f)
	want := "n2 was promoted (switch-master at 3.000 s) while client 0's grant of 1.002 s had not replicated to it: probed within 1.0 ms of the grant, it was on n1 only"
	if len(causes) != 1 || causes[0] != want {
		t.Errorf("causes %q, want [%q]", causes, want)
	}
	// The story tells where each grant was found.
	var told bool
	for _, l := range Story(events, f) {
		told = told || strings.Contains(l.Text, "just after, on n1 (primary); absent on n2 (replica); absent on n3 (replica)")
	}
	if !told {
		t.Errorf("the story does not say where client 0's grant was found: %v", Story(events, f))
	}

	// A grant found on the promoted replica is no such cause: the faults
	// around it are all that is said.
	events, f = failover(true)
	causes = Causes(events, f)
	if len(causes) != 1 || !strings.HasPrefix(causes[0], "partition-primary n1, 0.500 s to 3.500 s") {
		t.Errorf("a replicated grant's causes: %q", causes)
	}
}

func TestCausesNameAnEmptyRestartAndTheFenceGoingBack(t *testing.T) {
	var b builder
	a := b.at(1.000, acq(history.Invoke, 0, 0, "a0"))
	b.at(1.002, with(acq(history.OK, 0, 0, "a0"), func(e *history.Event) { e.Fence = 14 }))
	b.at(1.003, fault("kill-node", history.Start, "n1", "client 0 just acquired; restart in 37ms"))
	b.at(1.040, fault("kill-node", history.End, "n1", "restarted empty (0 keys; persistence none)"))
	b.at(1.100, acq(history.Invoke, 1, 1, "b0"))
	g := b.at(1.102, with(acq(history.OK, 1, 1, "b0"), func(e *history.Event) { e.Fence = 1 }))
	r := b.at(1.500, op(history.Invoke, history.Release, 0, 0, "a0"))
	b.at(1.501, op(history.Fail, history.Release, 0, 0, "a0"))
	f := checker.Finding{Anomaly: checker.DoubleGrant, Key: "lock:orders", Events: []int{a, a + 1, g - 1, g, r}}
	got := strings.Join(Causes(b.events, f), "\n")
	for _, want := range []string{
		"n1 restarted empty (0 keys; persistence none) at 1.040 s (kill-node): every grant it held was forgotten",
		"the fence counter went back: client 1's grant at 1.102 s carried fence 1, after fence 14 at 1.002 s, because n1 lost its keys when it restarted empty at 1.040 s",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("causes\n%s\nlack %q", got, want)
		}
	}

	// With persistence the node keeps its keys, and nothing is said of
	// it beyond the fault.
	b.events[3].Detail = "restarted with 2 keys (persistence aof-always)"
	b.events[3].Facts = history.FactsFromWords(b.events[3])
	if got := strings.Join(Causes(b.events, f), "\n"); strings.Contains(got, "forgotten") || strings.Contains(got, "lost its keys") {
		t.Errorf("a restart with its keys is told as empty: %s", got)
	}
}

func TestCausesNameAClockJump(t *testing.T) {
	var b builder
	a := b.at(1.000, acq(history.Invoke, 0, 0, "a0"))
	b.at(1.002, acq(history.OK, 0, 0, "a0"))
	b.at(1.003, fault("clock-jump", history.Start, "n3", "+6s; client 0 just acquired"))
	b.at(1.100, acq(history.Invoke, 1, 1, "b0"))
	g := b.at(1.102, acq(history.OK, 1, 1, "b0"))
	b.at(4.000, fault("clock-jump", history.End, "n3", "back to +0s"))
	f := checker.Finding{Anomaly: checker.DoubleGrant, Key: "lock:orders", Events: []int{a, a + 1, g - 1, g}}
	causes := Causes(b.events, f)
	want := "n3's clock was 6s ahead (clock-jump, 1.003 s to 4.000 s): leases it held expired early there"
	if len(causes) != 1 || causes[0] != want {
		t.Errorf("causes %q, want [%q]", causes, want)
	}
}

func TestTimelineNamesWhereEachGrantWasFound(t *testing.T) {
	events, f := failover(false)
	tl := TimelineData(events, Results{Checker: CheckerReport{Findings: []checker.Finding{f}}})
	nodes := map[string]string{}
	for _, l := range tl.Leases {
		if !l.Seen {
			t.Errorf("lease %s is not marked as looked for", l.Token)
		}
		nodes[l.Token] = strings.Join(l.Nodes, ",")
	}
	if nodes["a0"] != "n1" || nodes["b0"] != "n2" {
		t.Errorf("grants found on %v, want a0 on n1 and b0 on n2", nodes)
	}
	for _, b := range tl.Bands {
		if b.Fault == history.GrantSeen {
			t.Errorf("a probe is drawn as an instant of its own: %+v", b)
		}
	}
	if got := leaseLabels(tl.Leases[0]); len(got) == 0 || got[0] != "n1 (primary)" {
		t.Errorf("a0's bar says %q, want n1 (primary)", got)
	}
	// n1, cut off, and n2, promoted, both answer as primaries; b0 is on
	// n2 only, so n2 granted it.
	if tl.Leases[1].Primary != "n2" {
		t.Errorf("b0 granted by %q, want n2", tl.Leases[1].Primary)
	}
	// A Redlock grant lives on several primaries: none is the one.
	var b builder
	b.at(0.1, acq(history.Invoke, 0, 0, "r0"))
	b.at(0.2, acq(history.OK, 0, 0, "r0"))
	b.at(0.3, with(fault(history.GrantSeen, history.Instant, "n1,n2,n3", "client 0's grant (event 1): on n1 (primary); on n2 (primary); on n3 (primary); absent on n4 (primary)"),
		func(e *history.Event) { e.Key, e.Token = "lock:orders", "r0" }))
	b.at(0.5, op(history.Invoke, history.Release, 0, 0, "r0"))
	b.at(0.6, op(history.OK, history.Release, 0, 0, "r0"))
	if l := TimelineData(b.events, Results{}).Leases[0]; l.Primary != "" || leaseLabels(l)[0] != "n1+n2+n3" {
		t.Errorf("a Redlock grant: primary %q, labels %q", l.Primary, leaseLabels(l))
	}

	// The refused acquires are drawn faintly; none is of unknown outcome.
	events, res := pausedHolder()
	tl = TimelineData(events, res)
	refused := 0
	for _, a := range tl.Attempts {
		if a.Outcome != history.Fail || a.End < a.Start {
			t.Errorf("attempt %+v", a)
		}
		refused++
	}
	if refused != 2 {
		t.Errorf("%d refused acquires drawn, want 2", refused)
	}
}

// What the probes cannot see is not stated: a promoted node that did not
// answer, a probe that came after the lease was let go, a lock whose
// value is not the harness's token.
func TestCausesStayWithinWhatTheProbesSaw(t *testing.T) {
	events, f := failover(false)
	events[3].Detail = "client 0's grant (event 2): on n1 (primary); n2 did not answer; absent on n3 (replica)"
	events[3].Facts = history.FactsFromWords(events[3])
	causes := Causes(events, f)
	if len(causes) != 1 || !strings.HasSuffix(causes[0], "whether that grant had reached n2 is not known") {
		t.Errorf("a promoted node that did not answer: %q", causes)
	}

	events, f = failover(false)
	events[3].Time = int64(3.7e9) // after client 0 asked to release
	if l := TimelineData(events, Results{}).Leases[0]; l.Seen || len(l.Nodes) > 0 {
		t.Errorf("a probe after the lease was let go is taken as seen: %+v", l)
	}

	events, _ = failover(false)
	for i := range events {
		if events[i].F == history.GrantSeen {
			events[i].Target = ""
			events[i].Detail = "client 0's grant (event 2): another value on n1 (primary); another value on n2 (replica); absent on n3 (replica)"
			events[i].Facts = history.FactsFromWords(events[i])
		}
	}
	for _, l := range TimelineData(events, Results{}).Leases {
		if l.Seen {
			t.Errorf("no probe ever found a token, yet lease %s is labelled %q", l.Token, leaseLabels(l))
		}
	}
}

// A replica that restarts empty loses nothing (it resyncs), and a grant
// that finished after the later one was asked for is no fence going back.
func TestCausesOfRestartsAndFencesNeedTheirGrants(t *testing.T) {
	var b builder
	a := b.at(1.000, acq(history.Invoke, 0, 0, "a0"))
	b.at(1.002, with(acq(history.OK, 0, 0, "a0"), func(e *history.Event) { e.Fence = 14 }))
	b.at(1.003, with(fault(history.GrantSeen, history.Instant, "n1,n2", "client 0's grant (event 1): on n1 (primary); on n2 (replica)"),
		func(e *history.Event) { e.Key, e.Token = "lock:orders", "a0" }))
	b.at(1.004, fault("kill-node", history.Start, "n3", "restart in 37ms"))
	b.at(1.040, fault("kill-node", history.End, "n3", "restarted empty (0 keys; persistence none)"))
	g := b.at(1.050, acq(history.Invoke, 1, 1, "b0"))
	b.at(1.102, with(acq(history.OK, 1, 1, "b0"), func(e *history.Event) { e.Fence = 9 }))
	r := b.at(1.500, op(history.Invoke, history.Release, 0, 0, "a0"))
	b.at(1.501, op(history.OK, history.Release, 0, 0, "a0"))
	f := checker.Finding{Anomaly: checker.DoubleGrant, Key: "lock:orders", Events: []int{a, a + 1, g, g + 1, r}}
	got := strings.Join(Causes(b.events, f), "\n")
	if strings.Contains(got, "forgotten") || strings.Contains(got, "because n3") {
		t.Errorf("n3, which never held the grant, is blamed:\n%s", got)
	}
	if !strings.Contains(got, "the fence counter went back: client 1's grant at 1.102 s carried fence 9, after fence 14 at 1.002 s") {
		t.Errorf("causes lack the fence going back:\n%s", got)
	}
	// Client 0's grant returns only after client 1 asked: no order, no claim.
	b.events[1].Time = int64(1.060e9)
	b.events[2].Time = int64(1.061e9)
	if got := strings.Join(Causes(b.events, f), "\n"); strings.Contains(got, "fence counter") {
		t.Errorf("concurrent grants' fences told as going back:\n%s", got)
	}
}
