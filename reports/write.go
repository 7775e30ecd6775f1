package reports

import (
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/history"
)

// DefaultSlack absorbs clock-rate differences between the harness and the
// servers (see checker.Options).
const DefaultSlack = 2 * time.Millisecond

// LinearHTMLMaxOps is the most operations a run may have for linear.html
// to be drawn.
const LinearHTMLMaxOps = 200_000

// operations counts a run's client operations.
func operations(r Results) int {
	n := 0
	for _, s := range r.Stats {
		n += s.OK + s.Fail + s.Info
	}
	return n
}

// WriteRun writes what a checked run leaves in its directory: results.json,
// linear.html when the check is not clean, and with render the plots and
// index.html, all from the events and the checker's operations in memory.
func WriteRun(dir string, events []history.Event, res Results, render bool) error {
	return NewRun(events, res).Write(dir, render, false)
}

// WriteRunFrom is WriteRun for results checked from a stream: it reads the
// history from histPath, once, only when a page needs its events; with
// single it also writes report.html (see Run.Write).
func WriteRunFrom(dir, histPath string, res Results, render, single bool) error {
	if noted, drawLinear := linearDrawn(res); !render && !drawLinear {
		return WriteResults(dir, noted)
	}
	r, err := ReadRun(histPath, res)
	if err != nil {
		return err
	}
	return r.Write(dir, render, single)
}

// linearDrawn says whether linear.html is drawn for the results, and notes
// in them why not when the run is too large for it.
func linearDrawn(res Results) (Results, bool) {
	drawLinear := res.Valid != checker.Valid || !res.check.Linearizable()
	if n := operations(res); drawLinear && n > LinearHTMLMaxOps {
		// Porcupine's page of a soak would hold every event in memory and
		// draw millions of bars no browser opens.
		res.Checker.Notes = append(slices.Clone(res.Checker.Notes), fmt.Sprintf("linear.html not written: %d operations is more than its %d", n, LinearHTMLMaxOps))
		return res, false
	}
	return res, drawLinear
}

// Write writes the run into dir: results.json, linear.html when the check
// is not clean, and with render the plots, timeline.html and index.html
// (with single also report.html).
func (r *Run) Write(dir string, render, single bool) error {
	res, drawLinear := linearDrawn(r.Results)
	r.Results = res
	if err := WriteResults(dir, res); err != nil {
		return err
	}
	if drawLinear {
		if err := checker.WriteLinearHTML(filepath.Join(dir, "linear.html"), r.a.events.kept, res.check); err != nil {
			return err
		}
	}
	if render {
		return r.renderPages(dir, single)
	}
	return nil
}
