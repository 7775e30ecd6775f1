package history

import (
	"strings"
	"testing"
)

func TestOps(t *testing.T) {
	events := []Event{
		{Index: 0, Type: Invoke, Process: 0, F: Acquire, Key: "k", Token: "a", TTLMs: 1000},
		{Index: 1, Type: Info, Process: Nemesis, F: "partition", Phase: Start},
		{Index: 2, Type: Invoke, Process: 1, F: Acquire, Key: "k", Token: "b"},
		{Index: 3, Type: OK, Process: 0, F: Acquire, Fence: 7, ValidMs: 990, Time: 5},
		{Index: 4, Type: Invoke, Process: 0, F: Write, Key: "k", Token: "a", Value: Int64(3), Time: 6},
		{Index: 5, Type: Fail, Process: 0, F: Write, Value: Int64(4), Reason: ReasonRejected, Error: "fence", Time: 8},
	}
	ops, err := Ops(events)
	if err != nil {
		t.Fatal(err)
	}
	if len(ops) != 3 {
		t.Fatalf("ops %+v", ops)
	}
	acq, pending, w := ops[0], ops[1], ops[2]
	if acq.Inv != 0 || acq.Done != 3 || acq.Type != OK || acq.Fence != 7 || acq.ValidMs != 990 || acq.TTLMs != 1000 || acq.Latency() != 5 {
		t.Errorf("acquire %+v", acq)
	}
	if pending.Inv != 2 || pending.Done != -1 || pending.Type != Info || pending.Finished() {
		t.Errorf("unfinished acquire %+v", pending)
	}
	if *w.Read != 3 || *w.Stored != 4 || w.Reason != ReasonRejected || w.AboutTheLock() || w.Error != "fence" {
		t.Errorf("write %+v", w)
	}
	for _, c := range []struct {
		bad  []Event
		want string
	}{
		{[]Event{{Index: 0, Type: OK, Process: 0, F: Acquire}}, "event 0: ok completion of acquire by process 0 has no outstanding invoke"},
		{[]Event{{Index: 0, Type: Invoke, Process: 0, F: Acquire}, {Index: 1, Type: Invoke, Process: 0, F: Release}},
			"event 1: process 0 invokes release while its acquire invoked at event 0 is still outstanding"},
		{[]Event{{Index: 0, Type: Invoke, Process: 0, F: Acquire}, {Index: 1, Type: OK, Process: 0, F: Release}},
			"event 1: ok completion of release by process 0 does not match its outstanding acquire invoked at event 0"},
	} {
		ops, err := Ops(c.bad)
		if err == nil || err.Error() != c.want {
			t.Errorf("Ops(%+v) = %v, want %q", c.bad, err, c.want)
		}
		if len(ops) == 0 && c.bad[0].Type == Invoke {
			t.Errorf("Ops dropped what it could pair from %+v", c.bad)
		}
	}
}

func TestValidate(t *testing.T) {
	ok := []Event{
		{Index: 0, Time: 1, Type: Invoke, Process: 0, F: Acquire, Key: "k", Token: "a", TTLMs: 1000},
		{Index: 1, Time: 1, Type: Info, Process: Nemesis, F: "partition", Phase: Start},
		{Index: 2, Time: 2, Type: Fail, Process: 0, F: Acquire, Reason: ReasonBusy},
	}
	if err := Validate(ok); err != nil {
		t.Fatal(err)
	}
	mutate := func(i int, f func(*Event)) []Event {
		out := append([]Event(nil), ok...)
		f(&out[i])
		return out
	}
	for want, events := range map[string][]Event{
		"event 2: time 0 goes backwards":                                             mutate(2, func(e *Event) { e.Time = 0 }),
		"event 5: index 5 out of order":                                              mutate(1, func(e *Event) { e.Index = 5 }),
		"event 0: acquire invoke has no key":                                         mutate(0, func(e *Event) { e.Key = "" }),
		"event 0: acquire invoke has no token":                                       mutate(0, func(e *Event) { e.Token = "" }),
		"event 0: ttl_ms -5 is negative":                                             mutate(0, func(e *Event) { e.TTLMs = -5 }),
		`event 2: reason "nope" is not one of`:                                       mutate(2, func(e *Event) { e.Reason = "nope" }),
		`event 2: reason "busy" on a ok event`:                                       mutate(2, func(e *Event) { e.Type = OK }),
		"event 2: fail completion of acquire by process 1 has no outstanding invoke": mutate(2, func(e *Event) { e.Process = 1 }),
	} {
		err := Validate(events)
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("Validate = %v, want %q", err, want)
		}
	}
}

func TestFaultWindows(t *testing.T) {
	nem := func(i int, f, target, p string) Event {
		e := Event{Index: i, Type: Info, Process: Nemesis, F: f, Target: target, Phase: p}
		e.Facts = FactsFromWords(e)
		return e
	}
	events := []Event{
		nem(0, "pause-node", "n1", End), // an end without a start: ignored
		nem(1, "pause-node", "n1", Start),
		nem(2, "pause-node", "n2", Start),
		{Index: 3, Type: Invoke, Process: 0, F: Acquire},
		nem(4, "pause-node", "n1", Start), // a second window on n1, opened before the first closed
		nem(5, "pause-node", "n2", End),
		nem(6, "pause-node", "n1", End),
		nem(7, "kill-node", "n1", End), // another fault's end does not close pause-node
		nem(8, "pause-node", "n1", End),
		nem(9, "partition", "", Start), // never healed
	}
	got := FaultWindows(events)
	want := []FaultWindow{{1, 6}, {2, 5}, {4, 8}, {9, -1}}
	if len(got) != len(want) {
		t.Fatalf("windows %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("window %d = %v, want %v", i, got[i], want[i])
		}
	}
}

// Operations share one copy of what they have in common (OpKind): a
// completion must give its operation a new copy, never change the one the
// others still point to.
func TestOpsShareTheirKindWithoutSharingItsChanges(t *testing.T) {
	events := []Event{
		{Index: 0, Type: Invoke, Process: 0, Client: 0, F: Acquire, Key: "k", Token: "a", TTLMs: 100},
		{Index: 1, Type: Invoke, Process: 1, Client: 1, F: Acquire, Key: "k", Token: "b", TTLMs: 100},
		{Index: 2, Type: Invoke, Process: 2, Client: 0, F: Acquire, Key: "k", Token: "c", TTLMs: 200},
		{Index: 3, Type: OK, Process: 0, Client: 0, F: Acquire, Key: "k", Token: "a", Time: 1},
		{Index: 4, Type: Fail, Process: 2, Client: 0, F: Acquire, Key: "k", Token: "c", Error: "lock busy", Time: 2},
		{Index: 5, Type: Invoke, Process: 2, Client: 0, F: Acquire, Key: "k", Token: "d", TTLMs: 100, Time: 3},
		{Index: 6, Type: Fail, Process: 2, Client: 0, F: Acquire, Key: "k", Token: "d", Error: strings.Clone("lock busy"), Time: 4},
		{Index: 7, Type: Invoke, Process: 3, Client: 0, F: Acquire, Key: "k", Token: "e", TTLMs: 200, Time: 5},
		{Index: 8, Type: Fail, Process: 3, Client: 0, F: Acquire, Key: "k", Token: "e", Error: strings.Clone("lock busy"), Time: 6},
	}
	ops, err := Ops(events)
	if err != nil {
		t.Fatal(err)
	}
	type seen struct {
		typ, err string
		process  Process
		ttl      int64
	}
	want := []seen{{OK, "", 0, 100}, {Info, "", 1, 100}, {Fail, "lock busy", 2, 200}, {Fail, "lock busy", 2, 100}, {Fail, "lock busy", 3, 200}}
	for i, w := range want {
		if got := (seen{ops[i].Type, ops[i].Error, ops[i].Process, ops[i].TTLMs}); got != w {
			t.Errorf("op %d: %+v, want %+v", i, got, w)
		}
	}
	// Only what differs takes a copy of its own: the refused acquires of
	// client 0 share theirs (an error of the same words, read twice),
	// whatever their process, token and lease.
	if ops[2].OpKind != ops[3].OpKind || ops[2].OpKind != ops[4].OpKind {
		t.Errorf("two refusals of client 0 on k hold two copies of their kind")
	}
	if ops[0].OpKind == ops[2].OpKind || ops[1].OpKind == ops[0].OpKind {
		t.Errorf("operations that differ share their kind")
	}
}

// A key only the completion names is numbered as the key it is, and so is
// the token.
func TestCompletionNamesTheKey(t *testing.T) {
	events := []Event{
		{Index: 0, Type: Invoke, Process: 0, Client: 0, F: Acquire, Key: "a", Token: "x", TTLMs: 100},
		{Index: 1, Type: OK, Process: 0, Client: 0, F: Acquire, Key: "a", Token: "x", Time: 1},
		{Index: 2, Type: Invoke, Process: 0, Client: 0, F: Acquire, TTLMs: 100, Time: 2},
		{Index: 3, Type: OK, Process: 0, Client: 0, F: Acquire, Key: "b", Token: "y", Time: 3},
		{Index: 4, Type: Invoke, Process: 0, Client: 0, F: Release, Key: "b", Token: "y", Time: 4},
		{Index: 5, Type: OK, Process: 0, Client: 0, F: Release, Key: "b", Token: "y", Time: 5},
	}
	b := BuildOps(events)
	ops, keys := b.Ops(), b.Keys()
	if got := keys[ops[1].KeyID]; got != "b" {
		t.Errorf("the acquire whose completion named key b has the KeyID of %q", got)
	}
	if ops[1].KeyID != ops[2].KeyID || ops[1].TokenID != ops[2].TokenID {
		t.Errorf("the acquire of b (key %d, token %d) and its release (key %d, token %d) are numbered apart",
			ops[1].KeyID, ops[1].TokenID, ops[2].KeyID, ops[2].TokenID)
	}
}

// Only an offline check asks for huge pages: a harness that runs clients
// builds operations for its online audits and its end-of-run check, and
// must not.
func TestOnlyAnOfflineBuilderAsksForHugePages(t *testing.T) {
	if NewOpsBuilder(1 << 20).HugePages() {
		t.Error("NewOpsBuilder asks for huge pages")
	}
	if BuildOps(nil).HugePages() {
		t.Error("BuildOps asks for huge pages")
	}
	if !NewOfflineOpsBuilder(1 << 20).HugePages() {
		t.Error("NewOfflineOpsBuilder does not ask for huge pages")
	}
}
