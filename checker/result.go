// Package checker turns a history into a verdict: a linearizability check of
// every lock operation with porcupine against the lease-lock model (and the
// fenced-mutex model when the lock hands out fences), audits of the lock's
// grants (overlap, foreign release), of the protected resource (stale writes,
// fencing, the counter), liveness after healing, and per-operation stats.
package checker

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/lockharness/lockharness/history"
)

// Anomaly names, the words the reports use.
const (
	DoubleGrant    = "double-grant"
	StaleWrite     = "stale-write"
	LostUpdate     = "lost-update"
	ForeignRelease = "foreign-release"
	StuckLock      = "stuck-lock"
	// ExpiredWrite: the resource accepted a write from a client whose lease
	// had certainly expired on the servers, though the client (or its
	// library) still believed it held the lock. It is caught even when no
	// newer holder wrote in between, which stale-write needs.
	ExpiredWrite = "expired-write"
	// RefusedWrite: the resource refused a write of the one legitimate
	// holder: its lease was certainly live from the write's invoke to its
	// answer, and no other grant of the key could have been live then, so
	// no newer fence could rightly exist. A fence that refuses the current
	// holder loses work; one that refuses everything is not safe, only
	// useless.
	RefusedWrite = "refused-write"
	// PhantomGrant: a client was told it holds the lock while every node
	// that could grant it was down, from before its acquire was sent until
	// after its answer came: no server granted it. A client or library
	// that reports a grant it never got does this.
	PhantomGrant = "phantom-grant"
)

// AnomalyNames lists every anomaly in report order.
var AnomalyNames = []string{DoubleGrant, StaleWrite, LostUpdate, ForeignRelease, StuckLock, ExpiredWrite, RefusedWrite, PhantomGrant}

// Verdict is Jepsen's three-valued result (valid, invalid or unknown), and
// a fourth value for a run that has none because the harness failed.
type Verdict int

const (
	Unknown Verdict = iota
	Valid
	Invalid
	// Failed is no verdict: the harness itself failed (a server that would
	// not start, a worker that could not go on), so what the run recorded
	// is no evidence either way. The checker never concludes it; a run's
	// results say it, and CI reads it apart from a lock's unknown.
	Failed
)

// MarshalJSON writes true, false, "unknown" or "error", as results.json
// specifies.
func (v Verdict) MarshalJSON() ([]byte, error) {
	switch v {
	case Valid:
		return []byte("true"), nil
	case Invalid:
		return []byte("false"), nil
	case Failed:
		return []byte(`"error"`), nil
	}
	return []byte(`"unknown"`), nil
}

// UnmarshalJSON reads true, false, "unknown" or "error".
func (v *Verdict) UnmarshalJSON(b []byte) error {
	switch string(b) {
	case "true":
		*v = Valid
	case "false":
		*v = Invalid
	case `"unknown"`:
		*v = Unknown
	case `"error"`:
		*v = Failed
	default:
		return fmt.Errorf("verdict must be true, false, \"unknown\" or \"error\", got %s", b)
	}
	return nil
}

func (v Verdict) String() string {
	switch v {
	case Valid:
		return "valid"
	case Invalid:
		return "invalid"
	case Failed:
		return "error"
	}
	return "unknown"
}

// ExitCode is the Jepsen exit code for the verdict: 0 valid, 1 invalid,
// 2 unknown; and 255, the harness's own, when it failed.
func (v Verdict) ExitCode() int {
	switch v {
	case Valid:
		return 0
	case Invalid:
		return 1
	case Failed:
		return 255
	}
	return 2
}

// Options tune the checks.
type Options struct {
	// Slack is subtracted from every "the lease certainly lasted until"
	// bound and added to every "the lease may have lasted until" bound
	// that a ttl counted by a server gives, to absorb clock-rate
	// differences between the harness and the servers. Bounds taken from
	// the harness's own events (an acquire's answer, a release's invoke)
	// take none: there is no other clock in them.
	Slack time.Duration
	// Outlive is how long past its TTL the lock service may keep a lease
	// (locks.Recipe.Outlives): the bound on when a lease may still be
	// live moves that much later, never the one on when it certainly is.
	Outlive time.Duration
	// Tables are a real resource's final rows (nil: the in-memory
	// counter): the resource audits then judge the database's own record
	// of what it accepted, in its order.
	Tables *history.Tables
	// Database says the writes went to a real database. Without its
	// Tables the writes are not audited and the verdict is at best
	// unknown: the answers alone do not say what the database kept.
	Database bool
	// Timeout bounds the check, counted from the call to Check (0:
	// DefaultTimeout): porcupine stops when it runs out, and the verdict
	// is then unknown unless an audit found an anomaly. Never valid.
	Timeout time.Duration
	// SizeHint is the history's size in bytes, when known (CheckStream
	// sizes its memory by it).
	SizeHint int64
	// Offline says the check is its process's one job (harness check,
	// harness report): CheckStream then asks for huge pages
	// (history.NewOfflineOpsBuilder), which a process running clients,
	// such as the end of harness run, must not.
	Offline bool
}

// DefaultTimeout is the check's time bound when Options.Timeout is 0.
const DefaultTimeout = 30 * time.Second

func (o Options) timeout() time.Duration {
	if o.Timeout <= 0 {
		return DefaultTimeout
	}
	return o.Timeout
}

// Finding is one anomaly with the events behind it, in order.
type Finding struct {
	Anomaly string `json:"anomaly"`
	Key     string `json:"key,omitempty"`
	// Events are history indices, in time order.
	Events []int `json:"events"`
	// Narrative tells the events in order with their times, for a person.
	Narrative string `json:"narrative"`
}

// OpStats counts one operation kind's completions and their latencies.
type OpStats struct {
	OK    int     `json:"ok"`
	Fail  int     `json:"fail"`
	Info  int     `json:"info"`
	P50Ms float64 `json:"p50_ms"`
	P99Ms float64 `json:"p99_ms"`
	MaxMs float64 `json:"max_ms"`
}

// Fencing counts what fencing tokens prevented.
type Fencing struct {
	Rejected int `json:"rejected"`
}

// Counter is the guarded counter audit's evidence.
type Counter struct {
	Acknowledged int   `json:"acknowledged"`
	Final        int64 `json:"final"`
}

// Liveness states.
const (
	LivenessOK         = "ok"
	LivenessStuck      = "stuck"
	LivenessNotChecked = "not-checked"
)

// Result is everything the checker concludes from one history.
type Result struct {
	Valid     Verdict            `json:"valid"`
	Anomalies map[string]int     `json:"anomalies"`
	Fencing   Fencing            `json:"fencing"`
	Stats     map[string]OpStats `json:"stats"`
	Counter   Counter            `json:"counter"`
	// Database is the audit of a real resource's final rows.
	Database *Database `json:"database,omitempty"`
	Liveness string    `json:"liveness"`
	Findings []Finding `json:"findings"`
	// Notes explain an unknown verdict or a check that could not run, and
	// say so when porcupine and the overlap audit disagree.
	Notes []string `json:"notes,omitempty"`
	// Unjudged counts, per anomaly, the findings that rest on when a lease
	// ended, for leases renewed where the harness cannot see: they make
	// the verdict unknown, not invalid.
	Unjudged map[string]int `json:"unjudged,omitempty"`
	// Linearizability is porcupine's verdict on the lock operations.
	Linearizability Linearizability `json:"linearizability"`
	// Margins are the run's closest calls: for each safety property
	// measured, the least room it kept (negative: broken).
	Margins []Margin `json:"margins"`

	// opts are the options the result was reached with, for WriteLinearHTML.
	opts Options
	// ops are the operations the history was paired into (history.Ops),
	// for the reports drawn from the same history: pairing it again
	// would repeat the work and could only agree.
	ops []history.Op
}

// Ops are the operations the checker paired the history into, in invoke
// order (history.Ops); nil for a result from another source.
func (r Result) Ops() []history.Op { return r.ops }

// Linearizable reports whether porcupine found every model's history
// linearizable (false when it found one not linearizable or did not finish).
func (r Result) Linearizable() bool { return r.Linearizability.Result == LinearOK }

// String is a compact form for logs and test failures.
func (r Result) String() string {
	b, _ := json.Marshal(r.Anomalies)
	s := fmt.Sprintf("%s %s fencing.rejected=%d", r.Valid, b, r.Fencing.Rejected)
	for _, m := range r.Linearizability.Models {
		s += fmt.Sprintf(" %s=%s", m.Model, m.Result)
		if len(m.Failed) > 0 {
			s += fmt.Sprintf("%v", m.Failed)
		}
	}
	return s
}

// Porcupine's results, as results.json writes them.
const (
	LinearOK      = "ok"
	LinearIllegal = "illegal"
	LinearUnknown = "unknown"
)

// Model names.
const (
	LeaseLockModel   = "lease-lock"
	FencedMutexModel = "fenced-mutex"
)

// Linearizability is what porcupine concluded about the lock operations.
type Linearizability struct {
	// Result is ok when every model accepted the history, illegal when one
	// found it not linearizable, unknown when a check ran out of time.
	Result string `json:"result"`
	// Models has one entry per model checked: always the lease-lock model,
	// and the fenced-mutex model when some grant carried a fence.
	Models []ModelCheck `json:"models"`
}

// ModelCheck is one model's porcupine check.
type ModelCheck struct {
	Model  string `json:"model"`
	Result string `json:"result"`
	// ElapsedMs is the time spent in this model, summed over its keys
	// (keys are checked as many at once as there are cores).
	ElapsedMs float64 `json:"elapsed_ms"`
	// Operations counts the lock operations checked, Keys the lock keys
	// (porcupine's partitions) and Segments the independent pieces the keys
	// were cut into (see models.Partitioning).
	Operations int `json:"operations"`
	Keys       int `json:"keys"`
	Segments   int `json:"segments"`
	// Failed lists the keys whose operations are not linearizable, Unknown
	// those whose check did not finish.
	Failed  []string `json:"failed,omitempty"`
	Unknown []string `json:"unknown,omitempty"`
}
