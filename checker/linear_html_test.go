package checker

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockharness/lockharness/history"
)

func writeHTML(t *testing.T, h *hist) (Result, string) {
	t.Helper()
	events := h.build()
	r, err := Check(events, Options{Slack: slack})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "linear.html")
	if err := WriteLinearHTML(path, events, r); err != nil {
		t.Fatalf("WriteLinearHTML: %v", err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return r, string(b)
}

func TestLinearHTMLShowsFaultsAndAnomalies(t *testing.T) {
	h := newHist()
	h.acquire(0, key, "A", 0, 5, ok).fence(1)
	h.events = append(h.events, nemesis("restart", "redis-1", "no persistence", 100, 200)...)
	h.acquire(1, key, "B", 300, 305, ok).fence(1)
	h.acquire(2, key, "C", 310, 320, info)
	r, page := writeHTML(t, h)
	if r.Valid != Invalid {
		t.Fatalf("verdict %s", r.Valid)
	}
	for _, want := range []string{
		`"Tag":"nemesis"`, `"Description":"restart"`, `"Details":"redis-1 no persistence"`,
		`"Tag":"double-grant"`, `"Description":"double-grant lock:a"`, "#dc2626",
		"acquire A ttl 1000 ms → ok, fence 1", "acquire B ttl 1000 ms → ok, fence 1", "acquire C ttl 1000 ms → unknown",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("linear.html lacks %s", want)
		}
	}
}

func TestLinearHTMLForACleanRun(t *testing.T) {
	h := newHist()
	h.acquire(0, key, "A", 0, 5, ok)
	h.release(0, key, "A", 100, 102, ok)
	h.fault("partition", "client 1", 150, 160)
	h.acquire(1, "lock:b", "B", 200, 205, ok)
	r, page := writeHTML(t, h)
	if r.Valid != Valid {
		t.Fatalf("verdict %s", r.Valid)
	}
	for _, want := range []string{`"Tag":"nemesis"`, "release A → ok", "acquire B ttl 1000 ms → ok"} {
		if !strings.Contains(page, want) {
			t.Errorf("linear.html lacks %s", want)
		}
	}

	// An empty history still makes a page.
	if _, page := writeHTML(t, newHist()); !strings.Contains(page, "<html") {
		t.Errorf("no page for an empty history")
	}
}

func TestLinearHTMLForALongKeyShowsWhereItFails(t *testing.T) {
	defer func(n int) { maxVisualOps = n }(maxVisualOps)
	maxVisualOps = 500
	cfg := randomConfig(3)
	cfg.keys, cfg.ops = 1, 3000
	events := simulate(cfg)
	// A second grant in the middle of a lease, halfway through.
	for i := len(events) / 2; i < len(events); i++ {
		if e := events[i]; e.F == history.Acquire && e.Type == history.OK {
			grab := history.Event{Time: e.Time + 1, Type: history.Invoke, Process: 1000, Client: 99, F: history.Acquire, Key: e.Key, Token: "intruder", TTLMs: 50}
			done := grab
			done.Time, done.Type = e.Time+2, history.OK
			events = append(events[:i+1], append([]history.Event{grab, done}, events[i+1:]...)...)
			break
		}
	}
	for i := range events {
		events[i].Index = i
	}
	r, err := Check(events, Options{Slack: simSlackMs * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	linear(t, r, LeaseLockModel, LinearIllegal, "lock:a")
	path := filepath.Join(t.TempDir(), "linear.html")
	if err := WriteLinearHTML(path, events, r); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	if n := strings.Count(page, `"OriginalStart"`); n == 0 || n > 1000 {
		t.Errorf("linear.html draws %d operations, want the failing segment of %d", n, len(events)/2)
	}
	if !strings.Contains(page, "acquire intruder ttl 50 ms → ok") {
		t.Errorf("linear.html lacks the intruder")
	}
}

// nemesis is a fault window with a detail.
func nemesis(name, target, detail string, start, end int64) []*history.Event {
	h := newHist()
	h.fault(name, target, start, end)
	h.events[0].Detail = detail
	return h.events
}
