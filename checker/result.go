// Package checker turns a history into a verdict: audits of the lock's
// grants (overlap, foreign release), of the protected resource (stale writes,
// fencing, the counter), liveness after healing, and per-operation stats.
package checker

import (
	"encoding/json"
	"fmt"
	"time"
)

// Anomaly names, the words the reports use.
const (
	DoubleGrant    = "double-grant"
	StaleWrite     = "stale-write"
	LostUpdate     = "lost-update"
	ForeignRelease = "foreign-release"
	StuckLock      = "stuck-lock"
)

// AnomalyNames lists every anomaly in report order.
var AnomalyNames = []string{DoubleGrant, StaleWrite, LostUpdate, ForeignRelease, StuckLock}

// Verdict is Jepsen's three-valued result: valid, invalid or unknown.
type Verdict int

const (
	Unknown Verdict = iota
	Valid
	Invalid
)

// MarshalJSON writes true, false or "unknown", as results.json specifies.
func (v Verdict) MarshalJSON() ([]byte, error) {
	switch v {
	case Valid:
		return []byte("true"), nil
	case Invalid:
		return []byte("false"), nil
	}
	return []byte(`"unknown"`), nil
}

// UnmarshalJSON reads true, false or "unknown".
func (v *Verdict) UnmarshalJSON(b []byte) error {
	switch string(b) {
	case "true":
		*v = Valid
	case "false":
		*v = Invalid
	case `"unknown"`:
		*v = Unknown
	default:
		return fmt.Errorf("verdict must be true, false or \"unknown\", got %s", b)
	}
	return nil
}

func (v Verdict) String() string {
	switch v {
	case Valid:
		return "valid"
	case Invalid:
		return "invalid"
	}
	return "unknown"
}

// ExitCode is the Jepsen exit code for the verdict: 0 valid, 1 invalid,
// 2 unknown.
func (v Verdict) ExitCode() int {
	switch v {
	case Valid:
		return 0
	case Invalid:
		return 1
	}
	return 2
}

// Options tune the checks.
type Options struct {
	// Slack is subtracted from every "the lease certainly lasted until"
	// bound and added to every "the lease may have lasted until" bound, to
	// absorb clock-rate differences between the harness and the servers.
	Slack time.Duration
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
	Liveness  string             `json:"liveness"`
	Findings  []Finding          `json:"findings"`
	// Notes explain an unknown verdict or a check that could not run.
	Notes []string `json:"notes,omitempty"`
}

// String is a compact form for logs and test failures.
func (r Result) String() string {
	b, _ := json.Marshal(r.Anomalies)
	return fmt.Sprintf("%s %s fencing.rejected=%d", r.Valid, b, r.Fencing.Rejected)
}
