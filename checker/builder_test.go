package checker

import (
	"sort"
	"strings"
	"testing"

	"github.com/lockharness/lockharness/history"
)

// Outcomes for the builder; pending leaves an operation without completion.
const (
	ok      = history.OK
	fail    = history.Fail
	info    = history.Info
	pending = ""
)

// hist builds a readable history. Times are milliseconds since the run
// started; operations may be added in any order, and build sorts the events
// by time (ties keep the order they were added in) and numbers them.
type hist struct {
	ttlMs  int64 // default lease length for acquires
	events []*history.Event
}

func newHist() *hist { return &hist{ttlMs: 1000} }

// hop is one operation under construction.
type hop struct{ inv, done *history.Event }

func (h *hist) op(proc int, f, key, token string, at, done int64, outcome string) *hop {
	inv := &history.Event{Time: at * 1e6, Type: history.Invoke, Process: history.Process(proc),
		Client: proc, F: f, Key: key, Token: token}
	o := &hop{inv: inv}
	h.events = append(h.events, inv)
	if outcome != pending {
		d := *inv
		d.Time, d.Type = done*1e6, outcome
		o.done = &d
		h.events = append(h.events, o.done)
	}
	return o
}

func (h *hist) acquire(proc int, key, token string, at, done int64, outcome string) *hop {
	return h.op(proc, history.Acquire, key, token, at, done, outcome).ttl(h.ttlMs)
}

func (h *hist) release(proc int, key, token string, at, done int64, outcome string) *hop {
	return h.op(proc, history.Release, key, token, at, done, outcome)
}

func (h *hist) extend(proc int, key, token string, at, done int64, outcome string, ttlMs int64) *hop {
	return h.op(proc, history.Extend, key, token, at, done, outcome).ttl(ttlMs)
}

// write reads the counter at its invoke and stores stored if accepted.
func (h *hist) write(proc int, key, token string, at, done int64, outcome string, read, stored int64) *hop {
	o := h.op(proc, history.Write, key, token, at, done, outcome)
	o.inv.Value = history.Int64(read)
	if o.done != nil {
		o.done.Value = nil
		if outcome == ok {
			o.done.Value = history.Int64(stored)
		}
	}
	return o
}

func (h *hist) fault(name, target string, start, end int64) {
	facts := &history.Facts{Nodes: []string{target}}
	h.events = append(h.events,
		&history.Event{Time: start * 1e6, Type: history.Info, Process: history.Nemesis, F: name, Phase: history.Start, Target: target, Facts: facts},
		&history.Event{Time: end * 1e6, Type: history.Info, Process: history.Nemesis, F: name, Phase: history.End, Target: target, Facts: facts})
}

func (o *hop) each(set func(e *history.Event)) *hop {
	set(o.inv)
	if o.done != nil {
		set(o.done)
	}
	return o
}

func (o *hop) ttl(ms int64) *hop { o.inv.TTLMs = ms; return o }

// err sets the completion's error text.
func (o *hop) err(text string) *hop {
	if o.done != nil {
		o.done.Error = text
	}
	return o
}

// rejected gives the completion the error text and, if it is a fail, the
// reason "rejected": a refusal that says nothing about the lock.
func (o *hop) rejected(text string) *hop {
	if o.done != nil {
		o.done.Error = text
		if o.done.Type == history.Fail {
			o.done.Reason = history.ReasonRejected
		}
	}
	return o
}

func (o *hop) fence(f int64) *hop {
	return o.each(func(e *history.Event) { e.Fence = f })
}
func (o *hop) final() *hop { return o.each(func(e *history.Event) { e.Final = true }) }
func (o *hop) client(c int) *hop {
	return o.each(func(e *history.Event) { e.Client = c })
}

func (h *hist) build() []history.Event {
	sorted := append([]*history.Event(nil), h.events...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Time < sorted[j].Time })
	events := make([]history.Event, len(sorted))
	for i, e := range sorted {
		events[i] = *e
		events[i].Index = i
	}
	return events
}

func (h *hist) check(t *testing.T, opts Options) Result {
	t.Helper()
	r, err := Check(h.build(), opts)
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	return r
}

// expect asserts the anomaly counts (absent names must be zero) and the
// verdict that follows from them.
func expect(t *testing.T, r Result, want map[string]int) {
	t.Helper()
	for _, name := range AnomalyNames {
		got, present := r.Anomalies[name]
		if !present {
			t.Errorf("anomalies lack %q: %v", name, r.Anomalies)
		}
		if got != want[name] {
			t.Errorf("%s = %d, want %d (%s)", name, got, want[name], r)
		}
	}
	if len(r.Anomalies) != len(AnomalyNames) {
		t.Errorf("anomalies have extra keys: %v", r.Anomalies)
	}
	verdict := Valid
	for _, n := range want {
		if n > 0 {
			verdict = Invalid
		}
	}
	if r.Valid != verdict {
		t.Errorf("verdict %s, want %s", r.Valid, verdict)
	}
	if t.Failed() {
		for _, f := range r.Findings {
			t.Logf("finding %s %v: %s", f.Anomaly, f.Events, f.Narrative)
		}
	}
}

// finding returns the only finding of anomaly, failing the test otherwise.
func finding(t *testing.T, r Result, anomaly string) Finding {
	t.Helper()
	var fs []Finding
	for _, f := range r.Findings {
		if f.Anomaly == anomaly {
			fs = append(fs, f)
		}
	}
	if len(fs) != 1 {
		t.Fatalf("want one %s finding, got %d: %+v", anomaly, len(fs), r.Findings)
	}
	return fs[0]
}

func mentions(t *testing.T, text string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(text, p) {
			t.Errorf("narrative lacks %q:\n%s", p, text)
		}
	}
}

// readOnly is a definite rejection that says nothing about the lock.
const readOnly = "READONLY You can't write against a read only replica."

// linear asserts a model's porcupine result and the keys it failed on.
func linear(t *testing.T, r Result, model, want string, failed ...string) {
	t.Helper()
	for _, m := range r.Linearizability.Models {
		if m.Model != model {
			continue
		}
		if m.Result != want || strings.Join(m.Failed, ",") != strings.Join(failed, ",") {
			t.Errorf("%s: %s failing %v, want %s failing %v (%s)", model, m.Result, m.Failed, want, failed, r)
		}
		return
	}
	t.Errorf("%s was not checked: %+v", model, r.Linearizability)
}

// noted asserts that a note contains every part.
func noted(t *testing.T, r Result, parts ...string) {
	t.Helper()
	for _, n := range r.Notes {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(n, p)
		}
		if all {
			return
		}
	}
	t.Errorf("no note says %q: %q", parts, r.Notes)
}
