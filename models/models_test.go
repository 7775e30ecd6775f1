package models

import (
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/lockharness/lockharness/history"
)

const msec int64 = 1e6

// hb builds a history; times are milliseconds.
type hb struct{ events []history.Event }

func (h *hb) add(e history.Event) {
	e.Index = len(h.events)
	h.events = append(h.events, e)
}

// op adds an invoke at `at` and, unless outcome is "", its completion.
func (h *hb) op(p int, f, key, token string, at, done int64, outcome, errText string, ttlMs, fence int64) {
	e := history.Event{Time: at * msec, Type: history.Invoke, Process: history.Process(p), Client: p, F: f, Key: key, Token: token, TTLMs: ttlMs}
	h.add(e)
	if outcome != "" {
		e.Time, e.Type, e.Error, e.Fence = done*msec, outcome, errText, fence
		if outcome == history.Fail {
			e.Reason = reasonOf(errText)
		}
		h.add(e)
	}
}

// reasonOf is the reason a worker gives with a failure's error, as these
// tests write them.
func reasonOf(errText string) string {
	switch {
	case errText == "", strings.Contains(errText, "busy"):
		return history.ReasonBusy
	case strings.Contains(errText, "not held"):
		return history.ReasonNotHeld
	}
	return history.ReasonRejected
}

func TestOperations(t *testing.T) {
	h := &hb{}
	h.op(0, history.Acquire, "k", "A", 0, 5, history.OK, "", 1000, 7)
	h.add(history.Event{Time: 6 * msec, Type: history.Info, Process: history.Nemesis, F: "pause", Phase: history.Start})
	h.op(1, history.Write, "k", "A", 6, 7, history.OK, "", 0, 0) // the resource: left out
	h.op(0, history.Extend, "k", "A", 10, 12, history.Fail, "lock not held: gone", 0, 0)
	h.op(2, history.Acquire, "k", "B", 20, 25, history.Fail, "READONLY You can't write against a read only replica.", 1000, 0)
	h.op(3, history.Acquire, "k", "C", 30, 40, history.Info, "i/o timeout", 500, 0)
	h.op(4, history.Release, "k", "D", 50, 0, "", "", 0, 0) // never completed
	ops, err := Operations(h.events)
	if err != nil {
		t.Fatal(err)
	}
	if len(ops) != 5 {
		t.Fatalf("%d operations, want 5: %+v", len(ops), ops)
	}
	end := 50*msec + 1
	want := []struct {
		in  Input
		out Output
		ret int64
	}{
		{Input{Kind: Acquire, Key: "k", Token: "A", Invoke: 0, Return: 5 * msec, TTL: 1000 * msec},
			Output{Outcome: OK, Fence: 7}, 5 * msec},
		{Input{Kind: Extend, Key: "k", Token: "A", Invoke: 10 * msec, Return: 12 * msec, TTL: 1000 * msec},
			Output{Outcome: Fail, Error: "lock not held: gone"}, 12 * msec},
		{Input{Kind: Acquire, Key: "k", Token: "B", Invoke: 20 * msec, Return: 25 * msec, TTL: 1000 * msec, Anonymous: true},
			Output{Outcome: Fail, Rejected: true, Error: "READONLY You can't write against a read only replica."}, 25 * msec},
		{Input{Kind: Acquire, Key: "k", Token: "C", Invoke: 30 * msec, Return: Forever, TTL: 500 * msec, Anonymous: true},
			Output{Outcome: Info}, end},
		{Input{Kind: Release, Key: "k", Token: "D", Invoke: 50 * msec, Return: Forever},
			Output{Outcome: Info}, end},
	}
	for i, w := range want {
		o := ops[i]
		if o.Input.(Input) != w.in || o.Output.(Output) != w.out || o.Return != w.ret || o.Call != w.in.Invoke {
			t.Errorf("operation %d:\n got %+v %+v [%d, %d]\nwant %+v %+v [%d, %d]", i,
				o.Input, o.Output, o.Call, o.Return, w.in, w.out, w.in.Invoke, w.ret)
		}
	}
	if lanes := []int{ops[0].ClientId, ops[1].ClientId, ops[2].ClientId}; lanes[0] != lanes[1] || lanes[0] == lanes[2] {
		t.Errorf("lanes %v: one per process", lanes)
	}

	for name, events := range map[string][]history.Event{
		"double invoke":  {{Type: history.Invoke, Process: 1, F: history.Acquire}, {Index: 1, Type: history.Invoke, Process: 1, F: history.Release}},
		"orphan":         {{Type: history.OK, Process: 1, F: history.Acquire}},
		"mismatched":     {{Type: history.Invoke, Process: 1, F: history.Acquire}, {Index: 1, Type: history.OK, Process: 1, F: history.Release}},
		"unknown type":   {{Type: history.Invoke, Process: 1, F: history.Acquire}, {Index: 1, Type: "maybe", Process: 1, F: history.Acquire}},
		"resource clash": {{Type: history.Invoke, Process: 1, F: history.Write}, {Index: 1, Type: history.OK, Process: 1, F: history.Acquire}},
	} {
		if _, err := Operations(events); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// run checks a history against the lease model, whole and cut as finely
// as possible, and requires both to agree.
func run(t *testing.T, h *hb, slack time.Duration) porcupine.CheckResult {
	t.Helper()
	ops, err := Operations(h.events)
	if err != nil {
		t.Fatal(err)
	}
	whole := porcupine.CheckOperations(LeaseLockPartitioned(slack, Partitioning{Whole: true}), ops)
	cut := porcupine.CheckOperations(LeaseLockPartitioned(slack, Partitioning{MinSegment: 1}), ops)
	if whole != cut {
		t.Errorf("whole keys: %v, segments: %v", whole, cut)
	}
	if whole {
		return porcupine.Ok
	}
	return porcupine.Illegal
}

func TestLeaseModel(t *testing.T) {
	const A, B, C, X = "A", "B", "C", "X"
	acq := func(h *hb, p int, tok string, at, done int64, outcome string, ttl int64) {
		h.op(p, history.Acquire, "k", tok, at, done, outcome, "", ttl, 0)
	}
	busy := func(h *hb, p int, tok string, at, done int64) {
		h.op(p, history.Acquire, "k", tok, at, done, history.Fail, "lock busy", 100, 0)
	}
	rel := func(h *hb, p int, tok string, at, done int64, outcome, errText string) {
		h.op(p, history.Release, "k", tok, at, done, outcome, errText, 0, 0)
	}
	ext := func(h *hb, p int, tok string, at, done int64, outcome string, ttl int64) {
		h.op(p, history.Extend, "k", tok, at, done, outcome, "", ttl, 0)
	}
	cases := []struct {
		name  string
		slack time.Duration
		build func(h *hb)
		want  porcupine.CheckResult
	}{
		{"grant after expiry", 0, func(h *hb) {
			acq(h, 0, A, 0, 5, history.OK, 100)
			acq(h, 1, B, 100, 105, history.OK, 100)
		}, porcupine.Ok},
		{"grant inside the lease", 0, func(h *hb) {
			acq(h, 0, A, 0, 5, history.OK, 100)
			acq(h, 1, B, 90, 95, history.OK, 100)
		}, porcupine.Illegal},
		{"grant inside the lease, within slack", 10 * time.Millisecond, func(h *hb) {
			acq(h, 0, A, 0, 5, history.OK, 100)
			acq(h, 1, B, 88, 92, history.OK, 100)
		}, porcupine.Ok},
		{"grant overlapping the acquire's own uncertainty", 0, func(h *hb) {
			acq(h, 0, A, 0, 50, history.OK, 100) // may have started at 0
			acq(h, 1, B, 99, 101, history.OK, 100)
		}, porcupine.Ok},
		{"busy at the edge of the uncertainty", 0, func(h *hb) {
			acq(h, 0, A, 0, 50, history.OK, 100) // may have started at 50
			busy(h, 1, B, 149, 151)
		}, porcupine.Ok},
		{"busy after the lease certainly ended", 0, func(h *hb) {
			acq(h, 0, A, 0, 50, history.OK, 100)
			busy(h, 1, B, 150, 151)
		}, porcupine.Illegal},
		{"release by the holder, then a grant", 0, func(h *hb) {
			acq(h, 0, A, 0, 5, history.OK, 100)
			rel(h, 0, A, 20, 22, history.OK, "")
			acq(h, 1, B, 30, 35, history.OK, 100)
		}, porcupine.Ok},
		{"release by someone else", 0, func(h *hb) {
			acq(h, 0, A, 0, 5, history.OK, 100)
			rel(h, 1, B, 20, 22, history.OK, "")
		}, porcupine.Illegal},
		{"release after expiry", 0, func(h *hb) {
			acq(h, 0, A, 0, 5, history.OK, 100)
			rel(h, 0, A, 110, 112, history.OK, "")
		}, porcupine.Illegal},
		{"holder told not held after expiry", 0, func(h *hb) {
			acq(h, 0, A, 0, 5, history.OK, 100)
			rel(h, 0, A, 110, 112, history.Fail, "lock not held")
		}, porcupine.Ok},
		{"holder told not held while live", 0, func(h *hb) {
			acq(h, 0, A, 0, 5, history.OK, 100)
			rel(h, 0, A, 50, 52, history.Fail, "lock not held")
		}, porcupine.Illegal},
		{"holder refused while live", 0, func(h *hb) {
			acq(h, 0, A, 0, 5, history.OK, 100)
			rel(h, 0, A, 50, 52, history.Fail, "LOADING")
		}, porcupine.Ok},
		{"extend lengthens", 0, func(h *hb) {
			acq(h, 0, A, 0, 5, history.OK, 100)
			ext(h, 0, A, 80, 82, history.OK, 100)
			acq(h, 1, B, 150, 155, history.OK, 100)
		}, porcupine.Illegal},
		{"extend shortens", 0, func(h *hb) {
			acq(h, 0, A, 0, 5, history.OK, 100)
			ext(h, 0, A, 20, 22, history.OK, 30)
			acq(h, 1, B, 60, 65, history.OK, 100)
		}, porcupine.Ok},
		{"extend after expiry", 0, func(h *hb) {
			acq(h, 0, A, 0, 5, history.OK, 100)
			ext(h, 0, A, 110, 112, history.OK, 100)
		}, porcupine.Illegal},
		{"extend of unknown outcome keeps the lease possibly live", 0, func(h *hb) {
			acq(h, 0, A, 0, 5, history.OK, 100)
			ext(h, 0, A, 80, 90, history.Info, 100)
			busy(h, 1, B, 170, 171)
		}, porcupine.Ok},
		{"extend of unknown outcome may land after a later one", 0, func(h *hb) {
			acq(h, 0, A, 0, 5, history.OK, 100)
			ext(h, 9, A, 20, 30, history.Info, 30) // lands late, shortening
			ext(h, 0, A, 40, 42, history.OK, 100)
			acq(h, 1, B, 80, 85, history.OK, 100)
		}, porcupine.Ok},
		{"extend of unknown outcome never excuses a double grant", 0, func(h *hb) {
			acq(h, 0, A, 0, 5, history.OK, 100)
			ext(h, 9, A, 20, 30, history.Info, 100)
			acq(h, 1, B, 50, 55, history.OK, 100)
		}, porcupine.Illegal},
		{"release of unknown outcome may land late", 0, func(h *hb) {
			acq(h, 0, A, 0, 5, history.OK, 100)
			rel(h, 0, A, 10, 20, history.Info, "")
			busy(h, 1, B, 30, 31)
			acq(h, 2, C, 40, 45, history.OK, 100)
		}, porcupine.Ok},
		{"acquire of unknown outcome excuses busy, forever", 0, func(h *hb) {
			acq(h, 0, X, 0, 5, history.Info, 100)
			busy(h, 1, B, 5000, 5001)
		}, porcupine.Ok},
		{"acquire of unknown outcome never excuses a double grant", 0, func(h *hb) {
			acq(h, 0, A, 0, 5, history.OK, 100)
			acq(h, 2, X, 10, 20, history.Info, 100)
			acq(h, 1, B, 50, 55, history.OK, 100)
		}, porcupine.Illegal},
		{"acquire of unknown outcome whose token is released later", 0, func(h *hb) {
			acq(h, 0, X, 0, 5, history.Info, 100)
			rel(h, 1, X, 50, 52, history.OK, "")
		}, porcupine.Ok},
		{"acquire of unknown outcome lands only once the lease may have expired", 0, func(h *hb) {
			acq(h, 0, A, 0, 5, history.OK, 100)
			acq(h, 2, X, 10, 20, history.Info, 100)
			rel(h, 1, X, 50, 52, history.OK, "")
		}, porcupine.Illegal},
		{"no expiry", 0, func(h *hb) {
			acq(h, 0, A, 0, 5, history.OK, 0)
			busy(h, 1, B, 1e6, 1e6+1)
			acq(h, 2, C, 1e6+2, 1e6+3, history.OK, 100)
		}, porcupine.Illegal},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := &hb{}
			tc.build(h)
			if got := run(t, h, tc.slack); got != tc.want {
				t.Errorf("%v, want %v", got, tc.want)
			}
		})
	}
}

func TestFencedMutexModel(t *testing.T) {
	check := func(h *hb) bool {
		ops, err := Operations(h.events)
		if err != nil {
			t.Fatal(err)
		}
		whole := porcupine.CheckOperations(FencedMutexPartitioned(Partitioning{Whole: true}), ops)
		if cut := porcupine.CheckOperations(FencedMutexPartitioned(Partitioning{MinSegment: 1}), ops); cut != whole {
			t.Errorf("whole keys: %v, segments: %v", whole, cut)
		}
		return whole
	}
	h := &hb{}
	h.op(0, history.Acquire, "k", "A", 0, 5, history.OK, "", 100, 1)
	h.op(0, history.Release, "k", "A", 10, 12, history.OK, "", 0, 0)
	h.op(1, history.Acquire, "k", "B", 20, 25, history.OK, "", 100, 2)
	h.op(2, history.Acquire, "k", "X", 30, 35, history.Info, "", 100, 0)
	h.op(1, history.Release, "k", "B", 40, 42, history.OK, "", 0, 0)
	h.op(3, history.Acquire, "k", "C", 500, 505, history.OK, "", 100, 4) // B's expired lease let C in
	h.op(3, history.Extend, "k", "C", 510, 512, history.OK, "", 100, 0)
	if !check(h) {
		t.Error("growing fences rejected")
	}
	h.op(4, history.Acquire, "k", "D", 600, 605, history.OK, "", 100, 3)
	if check(h) {
		t.Error("a shrinking fence accepted")
	}
	h = &hb{}
	h.op(0, history.Acquire, "k", "A", 0, 5, history.OK, "", 100, 1)
	h.op(1, history.Acquire, "k", "B", 200, 205, history.OK, "", 100, 2)
	h.op(0, history.Release, "k", "A", 300, 302, history.OK, "", 0, 0)
	if check(h) {
		t.Error("a release by an earlier holder accepted")
	}
}

func TestSegments(t *testing.T) {
	// Three rounds on one key: A's lease is released, B's expires, C's is
	// live at the end. X's acquire of unknown outcome is anonymous; Y's
	// token is released later, so Y is copied.
	h := &hb{}
	h.op(0, history.Acquire, "k", "A", 0, 5, history.OK, "", 100, 1)
	h.op(5, history.Acquire, "k", "X", 6, 8, history.Info, "", 100, 0)
	h.op(0, history.Release, "k", "A", 10, 12, history.OK, "", 0, 0)
	h.op(1, history.Acquire, "k", "B", 20, 25, history.OK, "", 100, 2)
	h.op(6, history.Acquire, "k", "Y", 26, 28, history.Info, "", 100, 0)
	h.op(2, history.Acquire, "k", "C", 200, 205, history.OK, "", 100, 3)
	h.op(7, history.Release, "k", "Y", 206, 208, history.Fail, "lock not held", 0, 0)
	ops, err := Operations(h.events)
	if err != nil {
		t.Fatal(err)
	}
	segs := LeaseLockPartitioned(0, Partitioning{MinSegment: 1}).Partition(ops)
	var got []string
	for _, seg := range segs {
		var names []string
		for _, o := range seg {
			in := o.Input.(Input)
			name := in.Token
			if name == GhostToken {
				name = "ghost"
			}
			if o.Output.(Output).Outcome == Info && o.Return == o.Call {
				name += "(pinned)"
			}
			names = append(names, name)
		}
		got = append(got, strings.Join(names, " "))
	}
	// Cuts: after A's release (X may still land), and after B's lease
	// certainly ended (B's own grant and Y's copy before it).
	want := []string{"A X(pinned) A", "ghost(pinned) B Y", "Y ghost(pinned) C Y"}
	if strings.Join(got, " | ") != strings.Join(want, " | ") {
		t.Errorf("segments\n got %q\nwant %q", got, want)
	}
	fenced := FencedMutexPartitioned(Partitioning{MinSegment: 1}).Partition(ops)
	if len(fenced) != 2 || fenced[1][0].Input.(Input).Kind != seed || fenced[1][0].Output.(Output).Fence != 1 {
		t.Errorf("fenced segments %+v, want two, the second seeded with fence 1", fenced)
	}

	// A token acquired twice: no cuts.
	h.op(3, history.Acquire, "k", "A", 400, 405, history.OK, "", 100, 4)
	ops, _ = Operations(h.events)
	if n := len(LeaseLockPartitioned(0, Partitioning{MinSegment: 1}).Partition(ops)); n != 1 {
		t.Errorf("%d segments with a reused token, want 1", n)
	}
}

func TestHashAgreesWithEqual(t *testing.T) {
	m := LeaseLock(time.Millisecond)
	a := Lease{Held: true, Holder: "A", From: 5, Until: 10, Lost: true}
	b := a
	if !m.Equal([]interface{}{a}, []interface{}{b}) || m.Hash([]interface{}{a}) != m.Hash([]interface{}{b}) {
		t.Error("equal states hash differently")
	}
	for _, c := range []Lease{{Held: true, Holder: "A", From: 5, Until: 10}, {Held: true, Holder: "B", From: 5, Until: 10, Lost: true}, {Lost: true}} {
		if m.Equal([]interface{}{a}, []interface{}{c}) {
			t.Errorf("%+v equals %+v", a, c)
		}
	}
	f := FencedMutex()
	if f.Hash([]interface{}{Fenced{Fence: 3}}) != f.Hash([]interface{}{Fenced{Fence: 3}}) {
		t.Error("equal fenced states hash differently")
	}
}

func TestDescriptions(t *testing.T) {
	m := LeaseLock(0)
	for _, tc := range []struct {
		in   Input
		out  Output
		want string
	}{
		{Input{Kind: Acquire, Token: "c1-4", TTL: 1000 * msec}, Output{Outcome: OK, Fence: 7}, "acquire c1-4 ttl 1000 ms → ok, fence 7"},
		{Input{Kind: Release, Token: "c1-4"}, Output{Outcome: Fail, Error: "lock not held"}, "release c1-4 → fail: lock not held"},
		{Input{Kind: Extend, Token: "c1-4", TTL: 1500 * msec}, Output{Outcome: Info}, "extend c1-4 ttl 1500 ms → unknown"},
		{Input{Kind: Acquire, Token: GhostToken, TTL: msec}, Output{Outcome: Info}, "acquire (an earlier acquire of unknown outcome) ttl 1 ms → unknown"},
	} {
		if got := m.DescribeOperation(tc.in, tc.out); got != tc.want {
			t.Errorf("%q, want %q", got, tc.want)
		}
	}
	for _, tc := range []struct {
		st   Lease
		want string
	}{
		{Lease{}, "free"},
		{Lease{Held: true, Holder: "A", From: 1e9, Until: 2e9}, "held by A, may expire from 1.000 s, certainly over by 2.000 s"},
		{Lease{Held: true, Holder: "A", From: expirable, Until: Forever, Extending: true, Lost: true}, "held by A, may have expired, may last indefinitely; an extend may still land; a lost acquire may hold it"},
		{Lease{Held: true, Holder: "A", From: Forever, Until: Forever}, "held by A, no expiry"},
	} {
		if got := tc.st.String(); got != tc.want {
			t.Errorf("%q, want %q", got, tc.want)
		}
	}
}

// A lock service that may keep a lease past its TTL (etcd) makes a busy
// answer after the TTL legal, up to outlive later, and nothing else: a
// grant to another inside the TTL stays a double grant, and a busy answer
// past outlive is still wrong. The segments cut only where the longer
// bound has passed.
func TestLeaseModelOutliving(t *testing.T) {
	acq := func(h *hb, p int, tok string, at, done int64) {
		h.op(p, history.Acquire, "k", tok, at, done, history.OK, "", 100, 0)
	}
	busy := func(h *hb, p int, tok string, at, done int64) {
		h.op(p, history.Acquire, "k", tok, at, done, history.Fail, "lock busy", 100, 0)
	}
	const outlive = 200 * time.Millisecond
	for _, tc := range []struct {
		name             string
		build            func(h *hb)
		plain, outliving bool
	}{
		{"busy past the ttl, within outlive", func(h *hb) {
			acq(h, 0, "A", 0, 5)
			busy(h, 1, "B", 250, 252)
		}, false, true},
		{"busy past outlive", func(h *hb) {
			acq(h, 0, "A", 0, 5)
			busy(h, 1, "B", 306, 308)
		}, false, false},
		{"grant inside the ttl", func(h *hb) {
			acq(h, 0, "A", 0, 5)
			acq(h, 1, "B", 90, 95)
		}, false, false},
		{"grant after the ttl, before outlive ends", func(h *hb) {
			acq(h, 0, "A", 0, 5)
			acq(h, 1, "B", 150, 155)
			busy(h, 2, "C", 200, 202)
		}, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &hb{}
			tc.build(h)
			ops, err := Operations(h.events)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct {
				outlive time.Duration
				want    bool
			}{{0, tc.plain}, {outlive, tc.outliving}} {
				whole := porcupine.CheckOperations(LeaseLockOutliving(0, c.outlive, Partitioning{Whole: true}), ops)
				cut := porcupine.CheckOperations(LeaseLockOutliving(0, c.outlive, Partitioning{MinSegment: 1}), ops)
				if whole != c.want || cut != c.want {
					t.Errorf("outlive %v: whole %v, segments %v; want %v", c.outlive, whole, cut, c.want)
				}
			}
		})
	}
}
