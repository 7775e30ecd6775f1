package reports

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"time"
)

// Suite is a suite's results.json: every run of every row, expected
// against actual. Scripts read it; the page is drawn from it.
type Suite struct {
	Name     string     `json:"name"`
	Started  time.Time  `json:"started"`
	WallSec  float64    `json:"wall_s"`
	Rows     []SuiteRow `json:"rows"`
	Met      int        `json:"met"`
	Missed   int        `json:"missed"`
	Explored int        `json:"explored"`
	Planned  int        `json:"planned"`
	// Complete is false when the suite was interrupted.
	Complete bool `json:"complete"`
	// Passed is true exactly when every run with an expectation met it
	// and the suite completed.
	Passed bool `json:"passed"`
}

// SuiteRow is one scenario across its seeds.
type SuiteRow struct {
	Scenario string `json:"scenario"`
	Spec     string `json:"spec"`
	// Expect is empty for randomised runs, which only explore.
	Expect string      `json:"expect,omitempty"`
	Cells  []SuiteCell `json:"cells"`
}

// SuiteCell is one run.
type SuiteCell struct {
	Seed    int64  `json:"seed"`
	Verdict string `json:"verdict"`
	// Met is nil for runs without an expectation.
	Met       *bool          `json:"met,omitempty"`
	Why       string         `json:"why,omitempty"`
	Anomalies map[string]int `json:"anomalies,omitempty"`
	// Run is the run directory, relative to the suite directory.
	Run     string  `json:"run,omitempty"`
	Seconds float64 `json:"seconds"`
	Error   string  `json:"error,omitempty"`
}

// WriteSuite writes results.json and index.html into dir.
func WriteSuite(dir string, s Suite) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	if err := writeAtomic(filepath.Join(dir, "results.json"), func(w io.Writer) error {
		_, err := w.Write(append(b, '\n'))
		return err
	}); err != nil {
		return err
	}
	return writeAtomic(filepath.Join(dir, "index.html"), func(w io.Writer) error {
		return templates.ExecuteTemplate(w, "suite.html", s)
	})
}

// ReadSuite reads a suite's results.json.
func ReadSuite(dir string) (Suite, error) {
	var s Suite
	b, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		return s, err
	}
	return s, json.Unmarshal(b, &s)
}

// MaxSeeds is the widest row, for the matrix's columns.
func (s Suite) MaxSeeds() []int {
	n := 0
	for _, r := range s.Rows {
		n = max(n, len(r.Cells))
	}
	cols := make([]int, n)
	for i := range cols {
		cols[i] = i + 1
	}
	return cols
}
