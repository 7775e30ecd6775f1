package history

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"strings"
	"sync"
	"testing"
)

// Events hands out the recorder's own history, not a copy: what a reader
// appends to its slice must land past it, never over an event recorded
// later.
func TestRecorderEventsAreNotOverwrittenByAReader(t *testing.T) {
	r := NewRecorder(nil)
	// Three events: the recorder's slice then has room for a fourth.
	for p := range 3 {
		r.Record(Event{Type: Invoke, Process: Process(p), F: Acquire, Key: "k", Token: "a"})
	}
	seen := r.Events()
	seen = append(seen, Event{Type: OK, Process: 9, F: "reader's own"})
	r.Record(Event{Type: OK, Process: 0, F: Acquire, Key: "k", Token: "a"})
	all := r.Events()
	if len(all) != 4 || all[3].F != Acquire || all[3].Process != 0 {
		t.Fatalf("the recorder's fourth event is %+v", all[len(all)-1])
	}
	if len(seen) != 4 || seen[3].F != "reader's own" {
		t.Fatalf("the reader's own event became %+v", seen[3])
	}
}

func TestRecorderStampsAndRoundTrips(t *testing.T) {
	var buf bytes.Buffer
	r := NewRecorder(&buf)
	r.Record(Event{Type: Invoke, Process: 0, F: Acquire, Key: "k", Token: "t1", TTLMs: 1000})
	r.Record(Event{Type: OK, Process: 0, F: Acquire, Key: "k", Token: "t1", Fence: 3, ValidMs: 990})
	r.Record(Event{Type: Info, Process: Nemesis, F: "partition", Phase: Start, Target: "client 1"})
	r.Record(Event{Type: Invoke, Process: 2, Client: 1, F: Write, Value: Int64(0)})
	r.Record(Event{Type: OK, Process: 2, Client: 1, F: Write, Value: Int64(0)})
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := Decode(&buf)
	if err != nil {
		t.Fatal(err)
	}
	want := r.Events()
	if len(got) != len(want) {
		t.Fatalf("read %d events, wrote %d", len(got), len(want))
	}
	for i := range got {
		if got[i].Index != i {
			t.Errorf("event %d has index %d", i, got[i].Index)
		}
		if i > 0 && got[i].Time < got[i-1].Time {
			t.Errorf("time went backwards at %d", i)
		}
		if got[i].Process != want[i].Process || got[i].F != want[i].F || got[i].Fence != want[i].Fence {
			t.Errorf("event %d: got %+v want %+v", i, got[i], want[i])
		}
	}
	if got[2].Process != Nemesis {
		t.Errorf("nemesis process decoded as %v", got[2].Process)
	}
	if got[4].Value == nil || *got[4].Value != 0 {
		t.Errorf("a zero value must survive the round trip, got %v", got[4].Value)
	}
	if !strings.Contains(buf.String(), `"process":"nemesis"`) && buf.Len() != 0 {
		t.Errorf("nemesis not written as a string")
	}
}

// A streaming recorder writes every event and keeps only those asked
// for, numbered among all of them: what lets a soak run in bounded memory.
func TestStreamingRecorderWritesEveryEventAndKeepsThoseAsked(t *testing.T) {
	var buf bytes.Buffer
	r := NewStreamingRecorder(&buf, func(e *Event) bool { return e.IsNemesis() })
	for i := range 1000 {
		r.Record(Event{Type: Invoke, Process: 0, F: Acquire, Key: "k", Token: fmt.Sprint(i)})
		if i == 500 {
			r.Record(Event{Type: Info, Process: Nemesis, F: "partition", Phase: Start, Target: "n1"})
		}
		r.Record(Event{Type: Fail, Process: 0, F: Acquire, Key: "k", Token: fmt.Sprint(i)})
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	kept := r.Events()
	if len(kept) != 1 || kept[0].F != "partition" || kept[0].Index != 1001 {
		t.Fatalf("kept %d events (%+v), want the partition alone, index 1001", len(kept), kept)
	}
	got, err := Decode(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2001 || got[1001].F != "partition" || got[2000].Index != 2000 {
		t.Fatalf("wrote %d events, want 2001 with the partition at index 1001", len(got))
	}
}

func TestReadNamesTheBadLine(t *testing.T) {
	cases := map[string]string{
		"{\"index\":0,\"time\":1,\"type\":\"invoke\",\"process\":0,\"f\":\"acquire\",\"key\":\"k\",\"token\":\"t\"}\n{\"index\":1,\"ti":                                                                                          "line 2",
		"{\"index\":0,\"time\":5,\"type\":\"info\",\"process\":\"nemesis\",\"f\":\"partition\",\"phase\":\"start\"}\n\n{\"index\":1,\"time\":4,\"type\":\"info\",\"process\":\"nemesis\",\"f\":\"partition\",\"phase\":\"end\"}": "line 3: time 4 goes backwards",
		`{"type":"bogus","process":0,"f":"acquire"}`:                           `type "bogus"`,
		`{"type":"ok","process":0,"f":"lock"}`:                                 `f "lock"`,
		`{"type":"ok","process":-3,"f":"acquire"}`:                             "process",
		`{"type":"info","process":"nemesis","f":"partition","phase":"middle"}`: "phase",
		`{"type":"ok","process":0,"f":"acquire","color":"red"}`:                "unknown field",
	}
	for in, want := range cases {
		_, err := Decode(strings.NewReader(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Decode(%q) = %v, want an error containing %q", in, err, want)
		}
	}
}

// TestStreamRefusesATruncatedGzip: a gzip history cut off where its lines
// end would read as a shorter history, but the reader says the stream was
// cut, and the history is refused.
func TestStreamRefusesATruncatedGzip(t *testing.T) {
	var events []Event
	for i := range 2000 {
		events = append(events, Event{Index: i, Time: int64(i), Type: Invoke, Process: Process(i), F: Acquire, Key: "k", Token: fmt.Sprintf("t%d", i)})
	}
	var plain, zipped bytes.Buffer
	if err := Encode(&plain, events); err != nil {
		t.Fatal(err)
	}
	// Flushed at a line's end, the first half decompresses to whole lines.
	half := bytes.IndexByte(plain.Bytes()[plain.Len()/2:], '\n') + plain.Len()/2 + 1
	zw := gzip.NewWriter(&zipped)
	zw.Write(plain.Bytes()[:half])
	zw.Flush()
	cutAt := zipped.Len()
	zw.Write(plain.Bytes()[half:])
	zw.Close()
	cut := zipped.Bytes()[:cutAt]
	zr, err := gzip.NewReader(bytes.NewReader(cut))
	if err != nil {
		t.Fatal(err)
	}
	got, err := Decode(zr)
	if err == nil || !strings.Contains(err.Error(), "unexpected EOF") {
		t.Fatalf("Decode of a gzip history cut in half: %d events, error %v; want unexpected EOF", len(got), err)
	}
}

func TestRecorderWatchSeesEachEventInOrderUntilStopped(t *testing.T) {
	rec := NewRecorder(nil)
	rec.Record(Event{Type: Invoke, F: Acquire})
	var seen []int
	stop := rec.Watch(func(e Event) { seen = append(seen, e.Index) })
	rec.Record(Event{Type: OK, F: Acquire})
	rec.Record(Event{Type: Invoke, F: Release})
	stop()
	rec.Record(Event{Type: OK, F: Release})
	if len(seen) != 2 || seen[0] != 1 || seen[1] != 2 {
		t.Errorf("the watch saw events %v, want [1 2]: those recorded while it watched, in order", seen)
	}
}

// writes records each Write the recorder makes.
type writes struct {
	mu    sync.Mutex
	calls [][]byte
}

func (w *writes) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.calls = append(w.calls, append([]byte(nil), p...))
	return len(p), nil
}

// The recorder writes whole lines in batches, not a write per event, and
// everything recorded before Close is written by it; nothing after.
func TestRecorderWritesWholeLinesInBatches(t *testing.T) {
	var w writes
	r := NewRecorder(&w)
	for i := range 2000 {
		r.Record(Event{Type: Invoke, Process: Process(i), F: Acquire, Key: "lock:orders", Token: fmt.Sprintf("t%d", i), TTLMs: 2000})
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	r.Record(Event{Type: OK, Process: 0, F: Acquire, Key: "lock:orders", Token: "late"})
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.calls) == 0 || len(w.calls) > 200 {
		t.Fatalf("%d writes for 2000 events", len(w.calls))
	}
	var all []byte
	for i, c := range w.calls {
		if len(c) == 0 || c[len(c)-1] != '\n' {
			t.Fatalf("write %d does not end a line: %q", i, c[max(0, len(c)-40):])
		}
		all = append(all, c...)
	}
	got, err := Decode(bytes.NewReader(all))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2000 || got[1999].Token != "t1999" {
		t.Fatalf("read %d events back, the last %+v", len(got), got[len(got)-1])
	}
}
