package reports

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/history"
)

// ResultsSchema is the version of results.json's layout. Keys only ever
// grow; the version says which ones a file can have (1: the first wave,
// which wrote no schema; 2: schema and provenance; 3: valid "error" and the
// error object, where 2 had unknown and a string).
const ResultsSchema = 3

// Results is results.json: the verdict and its evidence. Scripts and CI read
// it, so its keys only ever grow.
type Results struct {
	Schema    int                        `json:"schema"`
	Valid     checker.Verdict            `json:"valid"`
	Anomalies map[string]int             `json:"anomalies"`
	Fencing   checker.Fencing            `json:"fencing"`
	Stats     map[string]checker.OpStats `json:"stats"`
	// Margins are the run's closest calls, a property each
	// (checker.Margin): how near each safety property came to breaking.
	Margins []checker.Margin `json:"margins"`
	Seed    int64            `json:"seed"`
	Spec    json.RawMessage  `json:"spec"`
	// Command re-runs this run exactly, seed included.
	Command string        `json:"command"`
	Checker CheckerReport `json:"checker"`
	// Faults counts fault windows by fault name.
	Faults map[string]int `json:"faults"`
	// Error is set when the harness itself failed; Valid is then "error".
	Error *RunError `json:"error,omitempty"`
	// Interrupted is set when the run was stopped before it finished.
	Interrupted bool `json:"interrupted,omitempty"`
	// StoppedEarly names the anomaly that ended the run before its time
	// limit, and when (--stop-on-anomaly).
	StoppedEarly string `json:"stopped_early,omitempty"`
	// Provenance says what ran: absent for a history recorded elsewhere.
	Provenance *Provenance `json:"provenance,omitempty"`

	// check is the checker's own result, kept for linear.html.
	check checker.Result
}

// CheckerReport is the checker's evidence beyond the counts.
type CheckerReport struct {
	// Linearizability is porcupine's verdict on the lock operations.
	Linearizability checker.Linearizability `json:"linearizability"`
	Liveness        string                  `json:"liveness"`
	Counter         checker.Counter         `json:"counter"`
	// Database is a real resource's final rows and what they say (the
	// full ledger is in resource.json beside the history).
	Database *checker.Database `json:"database,omitempty"`
	Findings []checker.Finding `json:"findings"`
	Notes    []string          `json:"notes,omitempty"`
	// Unjudged counts the findings the checker did not judge (see
	// checker.Result.Unjudged).
	Unjudged map[string]int `json:"unjudged,omitempty"`
	SlackMs  float64        `json:"slack_ms"`
	// OutliveMs is checker.Options.Outlive: how long past its TTL the
	// lock service may keep a lease.
	OutliveMs float64 `json:"outlive_ms,omitempty"`
}

// Provenance is what a run was made of, so that a result can be traced to
// the software that produced it.
type Provenance struct {
	// Harness and Go are the harness's version and the Go that built it.
	Harness string `json:"harness"`
	Go      string `json:"go"`
	// Servers is every node's and sentinel's redis-server version, as the
	// server itself reported it, with the binary or image it ran from.
	Servers map[string]string `json:"servers,omitempty"`
	// Topology is "fresh" for a topology started for the run, or which
	// earlier run's topology it reused and how that was reset.
	Topology string `json:"topology,omitempty"`
	// Workers says where the clients' workers ran: WorkersInside, or
	// WorkersProcesses (each a process of its own, which a fault may
	// freeze or kill). Empty in results written before it was recorded.
	Workers string `json:"workers,omitempty"`
	// Lock is the lock the run tested, as it named itself.
	Lock *LockProvenance `json:"lock,omitempty"`
	// Libraries is the Go library the tested recipe adapts, by module,
	// with its version as compiled in: only what ran (none for a built-in
	// recipe of the harness's own or an exec worker, whose Lock says).
	Libraries map[string]string `json:"libraries,omitempty"`
}

// Where a run's workers ran (Provenance.Workers).
const (
	WorkersInside    = "inside the harness (no fault stops a client)"
	WorkersProcesses = "a process per client"
)

// LockProvenance names the lock under test: a recipe of the harness, a Go
// library's adapter, or a worker of the team's own (exec) by the name and
// version its ready line announced.
type LockProvenance struct {
	// Recipe is the --lock value: cad, redsync, exec, ...
	Recipe string `json:"recipe"`
	// Name is what the lock calls itself: the recipe's name, or the
	// worker's announced name (redis-py-lock).
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
	// Library is the Go module a recipe adapts, when it adapts one.
	Library string `json:"library,omitempty"`
	// Worker is an exec lock's worker command.
	Worker string `json:"worker,omitempty"`
}

// Label is the lock in a few words: "redis-py-lock 4.3.4 (exec)",
// "redsync v4.18.1", "cad".
func (l *LockProvenance) Label() string {
	if l == nil {
		return ""
	}
	label := l.Name
	if l.Version != "" {
		label += " " + l.Version
	}
	if l.Recipe != l.Name {
		label += " (" + l.Recipe + ")"
	}
	return label
}

// Meta is what results.json says about a run besides what the checker
// concludes from its history: enough to re-check the run offline and reach
// the same verdict.
type Meta struct {
	Seed    int64
	Spec    json.RawMessage
	Command string
	// Error is the harness's own failure, if any.
	Error *RunError
	// Interrupted runs stopped before their time limit and liveness check.
	Interrupted bool
	// StoppedEarly says which anomaly, certain during the run, ended it
	// before its time limit (--stop-on-anomaly); the run still healed and
	// checked liveness.
	StoppedEarly string
	Provenance   *Provenance
}

// RunError is results.json's "error": the harness's own failure, which
// makes the run's verdict "error" (exit 255) whatever its history holds.
type RunError struct {
	// Stage is where the harness failed: StageStart or StageRun.
	Stage   string `json:"stage"`
	Message string `json:"message"`
}

// The stages a run can fail in.
const (
	// StageStart: the topology, the database or the clients would not
	// start, so the run recorded nothing worth checking.
	StageStart = "start"
	// StageRun: the run started and then failed (a worker that could not
	// go on, a fault that could not be injected or healed, the history
	// that could not be written).
	StageRun = "run"
)

// UnmarshalJSON also reads schema 2's error, a bare message.
func (e *RunError) UnmarshalJSON(b []byte) error {
	var msg string
	if json.Unmarshal(b, &msg) == nil {
		*e = RunError{Message: msg}
		return nil
	}
	type plain RunError
	return json.Unmarshal(b, (*plain)(e))
}

func (e *RunError) String() string {
	if e == nil {
		return ""
	}
	if e.Stage == "" {
		return e.Message
	}
	return e.Stage + ": " + e.Message
}

// MetaOf recovers the meta of an earlier results.json.
func MetaOf(r Results) Meta {
	return Meta{Seed: r.Seed, Spec: r.Spec, Command: r.Command, Error: r.Error, Interrupted: r.Interrupted, StoppedEarly: r.StoppedEarly, Provenance: r.Provenance}
}

// Conclude checks a history and assembles results.json. A run the harness
// failed is unknown; an interrupted one is unknown unless what it recorded is
// already invalid, because a clean part proves nothing about the rest.
func Conclude(events []history.Event, meta Meta, opts checker.Options) (Results, error) {
	r, err := checker.Check(events, opts)
	if err != nil {
		return Results{}, err
	}
	return assemble(r, events, meta, opts), nil
}

// ConcludeStream is Conclude for a history read as it is checked
// (checker.CheckStream), which never holds its events.
func ConcludeStream(hist io.Reader, meta Meta, opts checker.Options) (Results, error) {
	r, nemesis, err := checker.CheckStream(hist, opts)
	if err != nil {
		return Results{}, err
	}
	return assemble(r, nemesis, meta, opts), nil
}

// assemble is results.json from the checker's result; events need hold
// only the nemesis events.
func assemble(r checker.Result, events []history.Event, meta Meta, opts checker.Options) Results {
	switch {
	case meta.Error != nil:
		r.Valid = checker.Failed
	case meta.Interrupted:
		if r.Valid != checker.Invalid {
			r.Valid = checker.Unknown
		}
		r.Notes = append(r.Notes, "the run was interrupted before it finished")
	}
	if meta.StoppedEarly != "" {
		r.Notes = append(r.Notes, "the run stopped before its time limit: "+meta.StoppedEarly+" (--stop-on-anomaly); it healed, and its liveness was not checked: the closing check is for a run that reaches its end")
	}
	spec := meta.Spec
	if spec == nil {
		spec = json.RawMessage("{}")
	}
	return Results{
		Schema: ResultsSchema, Provenance: meta.Provenance,
		Valid: r.Valid, Anomalies: r.Anomalies, Fencing: r.Fencing, Stats: r.Stats, Margins: r.Margins,
		Seed: meta.Seed, Spec: spec, Command: meta.Command, Faults: faultCounts(events),
		Error: meta.Error, Interrupted: meta.Interrupted, StoppedEarly: meta.StoppedEarly, check: r,
		Checker: CheckerReport{Linearizability: r.Linearizability, Liveness: r.Liveness, Counter: r.Counter, Database: r.Database, Findings: r.Findings, Notes: r.Notes, Unjudged: r.Unjudged,
			SlackMs: float64(opts.Slack) / float64(time.Millisecond), OutliveMs: float64(opts.Outlive) / float64(time.Millisecond)},
	}
}

func faultCounts(events []history.Event) map[string]int {
	counts := map[string]int{}
	for _, e := range events {
		if e.IsNemesis() && e.Phase == history.Start {
			counts[e.F]++
		}
	}
	return counts
}

// WriteResults writes dir/results.json.
func WriteResults(dir string, res Results) error {
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "results.json"), append(b, '\n'), 0o644)
}

// ReadResults reads dir/results.json.
func ReadResults(dir string) (Results, error) { return readResults(os.DirFS(dir), ".") }

// Expectation is what a recorded run's check concluded, as testdata keeps
// it: the verdict and every count a change to the checker could flip.
type Expectation struct {
	Scenario        string          `json:"scenario"`
	Expect          string          `json:"expect"`
	Valid           checker.Verdict `json:"valid"`
	Anomalies       map[string]int  `json:"anomalies"`
	Fencing         checker.Fencing `json:"fencing"`
	Linearizability string          `json:"linearizability"`
	Liveness        string          `json:"liveness"`
	// Margins are the closest calls' milliseconds, by property.
	Margins map[string]float64 `json:"margins,omitempty"`
}

// ExpectationOf is the expectation a run's results set.
func ExpectationOf(scenario, expect string, r Results) Expectation {
	e := Expectation{Scenario: scenario, Expect: expect, Valid: r.Valid, Anomalies: r.Anomalies, Fencing: r.Fencing,
		Linearizability: r.Checker.Linearizability.Result, Liveness: r.Checker.Liveness}
	for _, m := range r.Margins {
		if e.Margins == nil {
			e.Margins = map[string]float64{}
		}
		e.Margins[m.Property] = m.Ms
	}
	return e
}

// AnomalyCount is an anomaly's count as pages and lines show it: a run
// whose liveness was not checked (it stopped early, or has no closing
// check) shows stuck-lock as not checked, not as none found.
func AnomalyCount(r Results, name string) string {
	if name == checker.StuckLock && r.Checker.Liveness == checker.LivenessNotChecked && r.Anomalies[name] == 0 {
		return "not checked"
	}
	return strconv.Itoa(r.Anomalies[name])
}
