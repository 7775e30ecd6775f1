package resource

import (
	"testing"

	"github.com/lockharness/lockharness/history"
)

func TestCounterRejectsOlderFences(t *testing.T) {
	rec := history.NewRecorder(nil)
	r := NewCounter(rec, true)
	if e := r.Write(history.Event{F: history.Write}, 1, 5); e.Type != history.OK {
		t.Fatalf("first write %+v", e)
	}
	if e := r.Write(history.Event{F: history.Write}, 2, 4); e.Type != history.Fail || r.Value() != 1 {
		t.Fatalf("older fence accepted: %+v, value %d", e, r.Value())
	}
	if e := r.Write(history.Event{F: history.Write}, 2, 5); e.Type != history.OK || r.Value() != 2 {
		t.Fatalf("equal fence rejected: %+v", e)
	}
	unfenced := NewCounter(rec, false)
	unfenced.Write(history.Event{F: history.Write}, 7, 9)
	if e := unfenced.Write(history.Event{F: history.Write}, 3, 1); e.Type != history.OK {
		t.Fatalf("an unfenced resource rejected a write: %+v", e)
	}
}
