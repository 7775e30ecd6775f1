package reports

import (
	"io"
	"path/filepath"
)

// ShrinkPage is shrink.html: a failing run and the smallest scenario a
// shrink found that still fails the same way, side by side, with every
// cut the search tried.
type ShrinkPage struct {
	Anomaly string
	// Original and Minimal are the two scenarios.
	Original, Minimal ShrinkSide
	// File is the minimal scenario's file, Command the one that re-runs
	// it and Repro the one that tries it under other seeds.
	File, Command, Repro string
	Tries                int
	Budget               string
	Seconds              float64
	OutOfBudget          bool
	// Kept is false when no cut kept the anomaly: Minimal is then the
	// original schedule, replayed.
	Kept  bool
	Steps []ShrinkRow
}

// ShrinkSide is one scenario of a shrink page.
type ShrinkSide struct {
	Title string
	Line  string
	// Faults are its schedule's steps.
	Faults []string
	Found  string
	// Run links to a run of it; Timeline is its timeline image.
	Run, Timeline string
	Narrative     string
}

// ShrinkRow is one cut the search tried.
type ShrinkRow struct {
	Cut     string
	Kept    bool
	Found   string
	Seconds float64
}

// WriteShrink writes shrink.html into dir.
func WriteShrink(dir string, p ShrinkPage) error {
	return writeAtomic(filepath.Join(dir, "shrink.html"), func(w io.Writer) error {
		return templates.ExecuteTemplate(w, "shrink.html", p)
	})
}
