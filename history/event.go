// Package history is the contract between running, checking and reporting:
// the event type of a run's history, the recorder that stamps every event on
// the harness's one monotonic clock, and the JSONL codec that stores it.
//
// The semantics are Jepsen's: every client operation is an invoke followed by
// exactly one completion, ok (it happened), fail (it certainly did not) or
// info (unknown; it may still take effect). Faults are events of the process
// "nemesis".
package history

import (
	"fmt"
	"strconv"
	"time"
)

// Event types.
const (
	Invoke = "invoke"
	OK     = "ok"
	Fail   = "fail"
	Info   = "info"
)

// Operation kinds.
const (
	Acquire = "acquire"
	Extend  = "extend"
	Release = "release"
	Write   = "write"
	Read    = "read"
	// Lost is a library telling its caller that the lock is gone (a
	// lock-lost context, a refresh error): the client's belief, recorded
	// so it can be held against what the servers did.
	Lost = "lost"
)

// Nemesis phases. Instant marks something the harness observed rather
// than caused, such as a sentinel switching the primary.
const (
	Start   = "start"
	End     = "end"
	Instant = "event"
)

// GrantSeen is an observation (phase Instant) of where a grant lived just
// after its client was told: Key and Token are the grant's, Target the
// nodes found holding the token under the lock's key, comma-separated ("" if
// none did), and Detail says what each node answered.
const GrantSeen = "grant-seen"

// Nemesis is the process of fault events.
const Nemesis Process = -1

// Process identifies who performed an event. Client processes are numbered
// from 0; a client slot gets a fresh process number whenever its worker is
// replaced after an info. Nemesis events carry the process "nemesis".
type Process int

// MarshalJSON writes client processes as numbers and the nemesis as "nemesis".
func (p Process) MarshalJSON() ([]byte, error) {
	if p == Nemesis {
		return []byte(`"nemesis"`), nil
	}
	return strconv.AppendInt(nil, int64(p), 10), nil
}

// UnmarshalJSON accepts a non-negative number or "nemesis".
func (p *Process) UnmarshalJSON(b []byte) error {
	if string(b) == `"nemesis"` {
		*p = Nemesis
		return nil
	}
	n, err := strconv.Atoi(string(b))
	if err != nil || n < 0 {
		return fmt.Errorf("process must be a non-negative number or \"nemesis\", got %s", b)
	}
	*p = Process(n)
	return nil
}

// String names the process as the reports do.
func (p Process) String() string {
	if p == Nemesis {
		return "nemesis"
	}
	return strconv.Itoa(int(p))
}

// Event is one line of history.jsonl.
type Event struct {
	Index int `json:"index"`
	// Time is nanoseconds since the run started, on the harness's clock.
	Time    int64   `json:"time"`
	Type    string  `json:"type"`
	Process Process `json:"process"`
	// Client is the client slot the process belongs to; it survives worker
	// replacement, so a lane in a timeline is a client.
	Client int `json:"client,omitempty"`
	// F is the operation kind for clients and the fault name for the nemesis.
	F   string `json:"f"`
	Key string `json:"key,omitempty"`
	// Token is the lock token, unique per acquire attempt.
	Token string `json:"token,omitempty"`
	// Fence is the fencing token, for recipes that have one.
	Fence int64 `json:"fence,omitempty"`
	// TTLMs is the lease length an acquire or extend asked for.
	TTLMs int64 `json:"ttl_ms,omitempty"`
	// ValidMs is how long the client believes its lease is valid, counted
	// from the invoke of the acquire or extend.
	ValidMs int64 `json:"valid_ms,omitempty"`
	// Value is the counter value a write read (invoke) or stored (ok).
	Value *int64 `json:"value,omitempty"`
	Error string `json:"error,omitempty"`
	// Reason says why a fail completion failed: busy, not-held or
	// rejected (see ReasonBusy). Without one, a fail is the lock's own
	// answer: busy for an acquire, not-held for an extend or release.
	Reason string `json:"reason,omitempty"`
	// Final marks the closing liveness check's operations.
	Final bool `json:"final,omitempty"`
	// Background marks an operation a worker's library performed on its
	// own (a watchdog's renewal, an unasked release) and reported: the
	// harness stamps it when the report arrives, so its instants may be
	// late by the report's way through the worker's pipe.
	Background bool `json:"background,omitempty"`
	// FenceChecked marks a write's completion when the resource compared
	// the write's fence with the fences it had accepted before it decided
	// (a fenced counter, PostgreSQL with --fencing where or app-check, a
	// --write-sql naming :fence): the resource, not the lease, then keeps
	// the writes of successive holders apart.
	FenceChecked bool `json:"fence_checked,omitempty"`
	// UnseenRenewals marks an acquire by a client whose lock renews its
	// leases in the background where the harness cannot see it: how long
	// such a lease lasted is unknown, so nothing that depends on it is
	// judged.
	UnseenRenewals bool `json:"unseen_renewals,omitempty"`
	// Phase, Target and Detail describe nemesis events: Target and
	// Detail in words, for people; Facts the same as data, for readers. A
	// nemesis event written by this harness always carries Facts (schema
	// 2); one without them is from before (schema 1) and gets them from its
	// words as it is read.
	Phase  string `json:"phase,omitempty"`
	Target string `json:"target,omitempty"`
	Detail string `json:"detail,omitempty"`
	Facts  *Facts `json:"facts,omitempty"`
	// Options is a fault's start: its options as it ran, those it drew at
	// random included, spelled as after its name (clients=0/2:for=6.854s),
	// so that a replay can pin them.
	Options string `json:"options,omitempty"`
	// Down is a fault's end: the nodes it took out of service, each for
	// the span in which it certainly served nobody.
	Down []Outage `json:"down,omitempty"`
}

// Outage is a node certainly serving nobody from From until Until, on the
// harness's clock: killed and not yet restarting. Of is how many nodes of
// the topology can hold the lock, so that a reader can tell when every one
// of them was out: a grant answered then came from no server.
type Outage struct {
	Node  string `json:"node"`
	From  int64  `json:"from"`
	Until int64  `json:"until"`
	Of    int    `json:"of"`
}

// At is the event's time as a duration since the run started.
func (e Event) At() time.Duration { return time.Duration(e.Time) }

// IsNemesis reports whether the event is a fault start or end.
func (e Event) IsNemesis() bool { return e.Process == Nemesis }

// Completed reports whether the event completes an operation.
func (e Event) Completed() bool {
	return e.Type == OK || e.Type == Fail || e.Type == Info
}

// Int64 returns a pointer to v, for Event.Value.
func Int64(v int64) *int64 { return &v }

// MarshalLine encodes the event as one JSON line without the newline.
func (e Event) MarshalLine() ([]byte, error) { return e.AppendLine(nil) }
