package resource

import (
	"fmt"
	"sync"

	"github.com/lockharness/lockharness/history"
)

// Counter is the embedded resource the lock protects: a counter held by the
// harness that clients read-modify-write under the lock, one per lock key.
// With fencing it refuses a write whose fence is lower than the highest it
// has accepted under that key, as a storage service that checks fencing
// tokens would.
type Counter struct {
	mu      sync.Mutex
	rec     *history.Recorder
	fenced  bool
	value   map[string]int64
	highest map[string]int64
}

// NewCounter makes counters at 0 whose reads and writes are recorded in rec.
func NewCounter(rec *history.Recorder, fenced bool) *Counter {
	return &Counter{rec: rec, fenced: fenced, value: map[string]int64{}, highest: map[string]int64{}}
}

// Read records the invoke of a write with the value it read, atomically with
// the read.
func (r *Counter) Read(e history.Event) (history.Event, int64) {
	var v int64
	e = r.rec.RecordWith(func() history.Event {
		r.mu.Lock()
		defer r.mu.Unlock()
		v = r.value[e.Key]
		e.Value = history.Int64(v)
		return e
	})
	return e, v
}

// Write applies a client's write of value under fence and records the
// completion: ok when accepted, fail when fencing rejected it. The record is
// taken under the resource's lock so the history's order is the resource's.
func (r *Counter) Write(e history.Event, value, fence int64) history.Event {
	return r.rec.RecordWith(func() history.Event {
		r.mu.Lock()
		defer r.mu.Unlock()
		e.Fence = fence
		e.Value = history.Int64(value)
		e.FenceChecked = r.fenced
		if highest := r.highest[e.Key]; r.fenced && fence < highest {
			e.Type, e.Reason = history.Fail, history.ReasonRejected
			e.Error = fmt.Sprintf("fence %d is below the highest accepted fence %d", fence, highest)
			return e
		}
		e.Type = history.OK
		r.value[e.Key] = value
		if fence > r.highest[e.Key] {
			r.highest[e.Key] = fence
		}
		return e
	})
}

// Value is the counters' current values added up.
func (r *Counter) Value() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	var sum int64
	for _, v := range r.value {
		sum += v
	}
	return sum
}
