package reports

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/lockharness/lockharness/checker"
)

// SuiteSchema is the version of a suite's results.json, which `repro
// --json` and `suite --json` print too. Keys only ever grow (1: no schema
// key; 2: schema, and errors counted apart from missed).
const SuiteSchema = 2

// Suite is a suite's results.json: every run of every row, expected
// against actual. Scripts read it; the page is drawn from it.
type Suite struct {
	Schema   int        `json:"schema"`
	Name     string     `json:"name"`
	Started  time.Time  `json:"started"`
	WallSec  float64    `json:"wall_s"`
	Rows     []SuiteRow `json:"rows"`
	Met      int        `json:"met"`
	Missed   int        `json:"missed"`
	Explored int        `json:"explored"`
	// Errors counts the runs the harness failed: neither met nor missed,
	// they say nothing of the lock.
	Errors  int `json:"errors"`
	Planned int `json:"planned"`
	// Complete is false when the suite was interrupted.
	Complete bool `json:"complete"`
	// Passed is true exactly when every run with an expectation met it,
	// the harness failed none, and the suite completed.
	Passed bool `json:"passed"`
	// Shard is which part of a sharded suite this is ("1/2"), empty for a
	// whole one; Merged lists the shard directories a merge joined.
	Shard  string   `json:"shard,omitempty"`
	Merged []string `json:"merged,omitempty"`
	// Overrides are the flags that changed every row's spec (--lock,
	// --backend, ...), as given; parts merge only when they agree.
	Overrides string `json:"overrides,omitempty"`
}

// SuiteRow is one scenario across its seeds.
type SuiteRow struct {
	Scenario string `json:"scenario"`
	Spec     string `json:"spec"`
	// Expect is empty for randomised runs, which only explore.
	Expect string      `json:"expect,omitempty"`
	Cells  []SuiteCell `json:"cells"`
	// Order is the row's place in the whole suite, shards or not.
	Order int `json:"order"`
}

// SuiteCell is one run.
type SuiteCell struct {
	Seed    int64  `json:"seed"`
	Verdict string `json:"verdict"`
	// Met is nil for runs without an expectation.
	Met       *bool          `json:"met,omitempty"`
	Why       string         `json:"why,omitempty"`
	Anomalies map[string]int `json:"anomalies,omitempty"`
	// Narrative is the first finding of each anomaly the run found, one
	// a line.
	Narrative string `json:"narrative,omitempty"`
	// Run is the run directory, relative to the suite directory.
	Run     string  `json:"run,omitempty"`
	Seconds float64 `json:"seconds"`
	Error   string  `json:"error,omitempty"`
	// Alone says the run had nothing else of the suite beside it: what
	// it measured of its lock's cost is the lock's, not the machine's
	// share of it.
	Alone bool `json:"alone,omitempty"`
}

// Tally counts the suite's met, missed, explored and failed runs from its
// cells: a cell with an expectation met it or not, one the harness failed
// is an error, one without an expectation explored, an interrupted one
// none of these. It sets Passed from them and Complete.
func (s *Suite) Tally() {
	s.Schema = SuiteSchema
	s.Met, s.Missed, s.Explored, s.Errors = 0, 0, 0, 0
	for _, r := range s.Rows {
		for _, c := range r.Cells {
			switch {
			case c.Verdict == "interrupted":
			case c.Error != "":
				s.Errors++
			case c.Met == nil:
				s.Explored++
			case c.Met != nil && *c.Met:
				s.Met++
			default:
				s.Missed++
			}
		}
	}
	s.Passed = s.Complete && s.Missed == 0 && s.Errors == 0
}

// FirstFindings is the narrative of the first finding of each anomaly in
// the results, one a line, as suite cells keep them.
func FirstFindings(r Results) string {
	seen := map[string]bool{}
	var lines []string
	for _, f := range r.Checker.Findings {
		if !seen[f.Anomaly] {
			seen[f.Anomaly] = true
			lines = append(lines, f.Anomaly+": "+f.Narrative)
		}
	}
	return strings.Join(lines, "\n")
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
	if err := writeAtomic(filepath.Join(dir, "scorecard.md"), func(w io.Writer) error {
		_, err := io.WriteString(w, s.Scorecard())
		return err
	}); err != nil {
		return err
	}
	if s.Comparable() {
		if err := WriteCompare(dir, CompareOf(dir, s)); err != nil {
			return err
		}
	}
	return writeAtomic(filepath.Join(dir, "index.html"), func(w io.Writer) error {
		return templates.ExecuteTemplate(w, "suite.html", s)
	})
}

// Comparable reports whether every row names a candidate and what it ran
// under ("redsync × partition"): a comparison of locks, as `harness
// compare` and the libs suite run, which WriteSuite also lays out as one
// (compare.md, compare.html).
func (s Suite) Comparable() bool {
	for _, r := range s.Rows {
		if !strings.Contains(r.Scenario, CompareSep) {
			return false
		}
	}
	return len(s.Rows) > 0
}

// Scorecard is the suite as a markdown table: per row, the runs that found
// each anomaly, and whether the expectation held, each row linked to its
// first run.
func (s Suite) Scorecard() string {
	var b strings.Builder
	fmt.Fprintf(&b, "| scenario | expect | runs | invalid | %s |\n|---|---|---|---|%s\n",
		strings.Join(anomalyColumns, " | "), strings.Repeat("---|", len(anomalyColumns)))
	for _, r := range s.Rows {
		invalid, runs, errs := 0, 0, 0
		found := make([]int, len(anomalyColumns))
		for _, c := range r.Cells {
			// A run the harness failed or that was interrupted found
			// nothing either way: it is counted apart, not as a miss.
			if c.Error != "" {
				errs++
				continue
			}
			runs++
			if c.Verdict == "invalid" {
				invalid++
			}
			for i, a := range anomalyColumns {
				if c.Anomalies[a] > 0 {
					found[i]++
				}
			}
		}
		name := r.Scenario
		if len(r.Cells) > 0 && r.Cells[0].Run != "" {
			name = fmt.Sprintf("[%s](%s/index.html)", r.Scenario, r.Cells[0].Run)
		}
		expect := r.Expect
		if expect == "" {
			expect = "explore"
		}
		if errs > 0 {
			expect += fmt.Sprintf(" (%d more runs the harness failed)", errs)
		}
		cells := make([]string, len(found))
		for i, n := range found {
			cells[i] = fmt.Sprintf("%d/%d", n, runs)
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %d | %s |\n", name, expect, runs, invalid, strings.Join(cells, " | "))
	}
	return b.String()
}

var anomalyColumns = checker.AnomalyNames

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
