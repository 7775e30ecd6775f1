// Package workloads is what clients do during a run: the worker process
// that runs a lock recipe (and the JSON-lines protocol the harness speaks
// with it), the harness-side clients that drive workers and record every
// operation in the history, the mutex workload, and the protected resource
// whose writes the checker audits.
package workloads

// Request is one line the harness sends a worker: an operation to perform.
type Request struct {
	ID    int64  `json:"id"`
	Op    string `json:"op"` // acquire, release, write
	Key   string `json:"key"`
	Token string `json:"token,omitempty"`
	TTLMs int64  `json:"ttl_ms,omitempty"`
	// Value is the counter value the harness read, for write.
	Value int64 `json:"value,omitempty"`
	// Pause lists the armed pause points: the worker stops itself with
	// SIGSTOP when it reaches one of them during this operation.
	Pause []string `json:"pause,omitempty"`
}

// Message kinds a worker sends.
const (
	KindReply  = "reply"
	KindPaused = "paused"
	KindAsync  = "async"
	KindReady  = "ready"
)

// Message is one line a worker sends: the reply to a request, the notice
// that it is about to stop at a pause point, or a background operation
// (a watchdog's renewal) starting or completing. Workers report durations,
// never absolute times: the harness stamps every line on its own clock.
type Message struct {
	Kind string `json:"kind"`
	ID   int64  `json:"id,omitempty"`
	// Type is ok, fail or info for replies and async completions, invoke
	// for an async start.
	Type    string `json:"type,omitempty"`
	F       string `json:"f,omitempty"`
	Key     string `json:"key,omitempty"`
	Token   string `json:"token,omitempty"`
	Fence   int64  `json:"fence,omitempty"`
	TTLMs   int64  `json:"ttl_ms,omitempty"`
	ValidMs int64  `json:"valid_ms,omitempty"`
	Value   int64  `json:"value,omitempty"`
	Point   string `json:"point,omitempty"`
	// Refused marks a grant the client will not use (a WAIT that no replica
	// acknowledged): the harness releases it without writing.
	Refused bool   `json:"refused,omitempty"`
	Error   string `json:"error,omitempty"`
	// Reason says why a fail failed: busy, not-held or rejected.
	Reason string `json:"reason,omitempty"`
}

// PointBeforeWrite is between a successful acquire and the protected write:
// where a GC pause hurts most.
const PointBeforeWrite = "before-write"
