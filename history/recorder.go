package history

import (
	"io"
	"sync"
	"time"
)

// Recorder appends events to a history, stamping each with the time since
// the recorder was created on Go's monotonic clock. It is the run's one clock:
// invokes, completions and fault windows are all stamped here.
type Recorder struct {
	mu     sync.Mutex
	start  time.Time
	out    io.Writer
	events []Event
	// n is how many events were recorded; keep, if set, picks those
	// kept in events (NewStreamingRecorder).
	n    int
	keep func(*Event) bool
	err  error
	// pending are the lines not yet written: whole lines, written together
	// every writeInterval or once they reach writeAt bytes, and at Close.
	pending []byte
	closed  chan struct{}
	wrote   chan struct{}
	close   sync.Once
	// watchers see each event as it is recorded (Watch).
	watchers map[int]func(Event)
	nextID   int
}

// NewRecorder starts the clock and writes every event to w as a JSON line.
// w may be nil to keep the history in memory only.
// Lines are written in batches, never torn: a harness that dies loses at
// most writeInterval of its history, and a run spends one write on hundreds of
// events instead of one each (issue 34's profile: a write per event cost
// the recorder a system call per event).
func NewRecorder(w io.Writer) *Recorder {
	r := &Recorder{start: time.Now()}
	if w != nil {
		r.out, r.closed, r.wrote = w, make(chan struct{}), make(chan struct{})
		go r.writeEvery()
	}
	return r
}

// NewStreamingRecorder is NewRecorder for a history that lives in w: it
// keeps in memory only the events keep accepts (Events returns those), so
// that an hour's soak does not hold its million events while it runs.
func NewStreamingRecorder(w io.Writer, keep func(*Event) bool) *Recorder {
	r := NewRecorder(w)
	r.keep = keep
	return r
}

// Pending lines are written every writeInterval, and at once when they
// reach writeAt bytes.
const (
	writeInterval = 20 * time.Millisecond
	writeAt       = 64 << 10
)

func (r *Recorder) writeEvery() {
	defer close(r.wrote)
	tick := time.NewTicker(writeInterval)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
		case <-r.closed:
		}
		r.mu.Lock()
		r.write()
		r.mu.Unlock()
		if r.isClosed() {
			return
		}
	}
}

// write writes the pending lines; the caller holds mu.
func (r *Recorder) write() {
	if len(r.pending) == 0 || r.err != nil {
		return
	}
	_, r.err = r.out.Write(r.pending)
	r.pending = r.pending[:0]
}

// Close writes every pending line and stops writing; events recorded after
// it are written nowhere, and kept in memory as any other (all of them, or
// those a streaming recorder keeps). It returns the first error writing the
// history, as Err does.
func (r *Recorder) Close() error {
	if r.closed != nil {
		r.close.Do(func() { close(r.closed) })
		<-r.wrote
	}
	return r.Err()
}

// Now is the time since the run started.
func (r *Recorder) Now() time.Duration { return time.Since(r.start) }

// Record stamps the event with the current time and the next index, appends
// it and returns the stamped event.
func (r *Recorder) Record(e Event) Event {
	return r.RecordWith(func() Event { return e })
}

// RecordWith calls build under the recorder's lock and records what it
// returns. Use it when the event must be ordered exactly with an effect, such
// as a write to the protected resource, that build performs.
func (r *Recorder) RecordWith(build func() Event) Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := build()
	if e.IsNemesis() && e.Facts == nil {
		// Facts mark a history of schema 2 even where there are none.
		e.Facts = &Facts{}
	}
	e.Time = int64(time.Since(r.start))
	e.Index = r.n
	r.n++
	if r.keep == nil || r.keep(&e) {
		r.events = append(r.events, e)
	}
	if r.out != nil && r.err == nil && !r.isClosed() {
		r.pending, r.err = e.AppendLine(r.pending)
		r.pending = append(r.pending, '\n')
		if len(r.pending) >= writeAt {
			r.write()
		}
	}
	for _, f := range r.watchers {
		f(e)
	}
	return e
}

// Watch calls f with every event recorded from now on, in order, under the
// recorder's lock: f must neither block nor record. stop ends the watch.
func (r *Recorder) Watch(f func(Event)) (stop func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.watchers == nil {
		r.watchers = make(map[int]func(Event))
	}
	id := r.nextID
	r.nextID++
	r.watchers[id] = f
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		delete(r.watchers, id)
	}
}

// Events returns the history so far (of a streaming recorder, the events
// it keeps), in order. It is the recorder's own, not a
// copy, for a soak's is hundreds of megabytes and an online audit reads it
// every few hundred milliseconds: read it, never change it. Later events
// are appended past its end, where it cannot see them.
func (r *Recorder) Events() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.events[:len(r.events):len(r.events)]
}

func (r *Recorder) isClosed() bool {
	select {
	case <-r.closed:
		return true
	default:
		return false
	}
}

// Err reports the first error writing the history, if any.
func (r *Recorder) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}
