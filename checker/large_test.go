package checker

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lockharness/lockharness/history"
)

// cleanHistory generates a correct fenced-counter run of about nOps
// operations: clients take turns to acquire (while another is told busy),
// write, have their watchdog extend, and release.
func cleanHistory(nOps int) []history.Event {
	const clients = 8
	events := make([]history.Event, 0, 2*nOps+10)
	var now, counter int64
	add := func(e history.Event) {
		now += int64(time.Millisecond)
		e.Index, e.Time = len(events), now
		events = append(events, e)
	}
	do := func(e history.Event, outcome string, completion func(*history.Event)) {
		add(e)
		e.Type = outcome
		if completion != nil {
			completion(&e)
		}
		add(e)
	}
	for i := 0; len(events) < 2*nOps; i++ {
		c := i % clients
		p, watchdog, rival := history.Process(c), history.Process(100+c), history.Process((c+1)%clients)
		tok, fence := fmt.Sprintf("t%d", i), int64(i+1)
		base := history.Event{Type: history.Invoke, Process: p, Client: c, Key: key, Token: tok}

		acq := base
		acq.F, acq.TTLMs = history.Acquire, 1000
		do(acq, history.OK, func(e *history.Event) { e.Fence, e.ValidMs = fence, 990 })

		busy := acq
		busy.Process, busy.Client, busy.Token = rival, int(rival), fmt.Sprintf("busy%d", i)
		do(busy, history.Fail, nil)

		w := base
		w.F, w.Fence, w.Value = history.Write, fence, history.Int64(counter)
		counter++
		do(w, history.OK, func(e *history.Event) { e.Value = history.Int64(counter) })

		ext := base
		ext.F, ext.Process, ext.TTLMs = history.Extend, watchdog, 1000
		do(ext, history.OK, nil)

		rel := base
		rel.F = history.Release
		do(rel, history.OK, nil)
	}
	return events
}

func TestGeneratedCleanHistoryIsValid(t *testing.T) {
	r, err := Check(cleanHistory(10_000), Options{Slack: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	expect(t, r, nil)
	if r.Counter.Acknowledged != 2000 || r.Counter.Final != 2000 {
		t.Errorf("counter %+v", r.Counter)
	}
}

func TestFindingsAreCappedButCounted(t *testing.T) {
	h := newHist()
	for i := int64(0); i < maxFindings+50; i++ {
		h.release(0, key, fmt.Sprint("ghost", i), 10*i, 10*i+1, ok)
	}
	r := h.check(t, Options{})
	expect(t, r, map[string]int{ForeignRelease: maxFindings + 50})
	if len(r.Findings) != maxFindings {
		t.Errorf("%d findings listed, want %d", len(r.Findings), maxFindings)
	}
	if !strings.Contains(strings.Join(r.Notes, "\n"), "50 more foreign-release findings") {
		t.Errorf("notes %q do not mention the unlisted findings", r.Notes)
	}
}

func BenchmarkCheck(b *testing.B) {
	events := cleanHistory(100_000)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Check(events, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
