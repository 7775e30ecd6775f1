package history

import (
	"bufio"
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
	out    *bufio.Writer
	events []Event
	err    error
	// watchers see each event as it is recorded (Watch).
	watchers map[int]func(Event)
	nextID   int
}

// NewRecorder starts the clock and writes every event to w as a JSON line.
// w may be nil to keep the history in memory only.
func NewRecorder(w io.Writer) *Recorder {
	r := &Recorder{start: time.Now()}
	if w != nil {
		r.out = bufio.NewWriter(w)
	}
	return r
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
	e.Index = len(r.events)
	r.events = append(r.events, e)
	if r.out != nil && r.err == nil {
		line, err := e.MarshalLine()
		if err == nil {
			line = append(line, '\n')
			_, err = r.out.Write(line)
		}
		if err == nil {
			// A flush per event keeps the file whole up to the last event if
			// the harness itself dies; histories are small.
			err = r.out.Flush()
		}
		r.err = err
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

// Events returns a copy of the history so far.
func (r *Recorder) Events() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.events...)
}

// Err reports the first error writing the history, if any.
func (r *Recorder) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}
