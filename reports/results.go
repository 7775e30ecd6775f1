package reports

import (
	"encoding/json"
	"os"
	"path/filepath"

	"github.com/lockharness/lockharness/checker"
)

// Results is results.json: the verdict and its evidence. Scripts and CI read
// it, so its keys only ever grow.
type Results struct {
	Valid     checker.Verdict            `json:"valid"`
	Anomalies map[string]int             `json:"anomalies"`
	Fencing   checker.Fencing            `json:"fencing"`
	Stats     map[string]checker.OpStats `json:"stats"`
	Seed      int64                      `json:"seed"`
	Spec      json.RawMessage            `json:"spec"`
	// Command re-runs this run exactly, seed included.
	Command string        `json:"command"`
	Checker CheckerReport `json:"checker"`
	// Faults counts fault windows by fault name.
	Faults map[string]int `json:"faults"`
	// Error is set when the harness itself failed.
	Error string `json:"error,omitempty"`
}

// CheckerReport is the checker's evidence beyond the counts.
type CheckerReport struct {
	Liveness string            `json:"liveness"`
	Counter  checker.Counter   `json:"counter"`
	Findings []checker.Finding `json:"findings"`
	Notes    []string          `json:"notes,omitempty"`
	SlackMs  float64           `json:"slack_ms"`
}

// NewResults assembles results.json from a checker result.
func NewResults(r checker.Result, seed int64, spec any, command string, faults map[string]int, slackMs float64) (Results, error) {
	js, err := json.Marshal(spec)
	if err != nil {
		return Results{}, err
	}
	if faults == nil {
		faults = map[string]int{}
	}
	return Results{
		Valid: r.Valid, Anomalies: r.Anomalies, Fencing: r.Fencing, Stats: r.Stats,
		Seed: seed, Spec: js, Command: command, Faults: faults,
		Checker: CheckerReport{Liveness: r.Liveness, Counter: r.Counter, Findings: r.Findings, Notes: r.Notes, SlackMs: slackMs},
	}, nil
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
func ReadResults(dir string) (Results, error) {
	var res Results
	b, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		return res, err
	}
	return res, json.Unmarshal(b, &res)
}
