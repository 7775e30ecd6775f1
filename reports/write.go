package reports

import (
	"fmt"
	"path/filepath"
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
// index.html.
func WriteRun(dir string, events []history.Event, res Results, render bool) error {
	return writeRunWith(dir, func() ([]history.Event, error) { return events, nil }, res, render, false)
}

// WriteRunFrom is WriteRun for results checked from a stream: it reads the
// history from histPath only when a page needs its events; with single it
// also writes report.html (see RenderPages).
func WriteRunFrom(dir, histPath string, res Results, render, single bool) error {
	return writeRunWith(dir, func() ([]history.Event, error) { return history.ReadFile(histPath) }, res, render, single)
}

func writeRunWith(dir string, events func() ([]history.Event, error), res Results, render, single bool) error {
	drawLinear := res.Valid != checker.Valid || !res.check.Linearizable()
	if n := operations(res); drawLinear && n > LinearHTMLMaxOps {
		// Porcupine's page of a soak would hold every event in memory and
		// draw millions of bars no browser opens.
		drawLinear = false
		res.Checker.Notes = append(res.Checker.Notes, fmt.Sprintf("linear.html not written: %d operations is more than its %d", n, LinearHTMLMaxOps))
	}
	if err := WriteResults(dir, res); err != nil {
		return err
	}
	if drawLinear {
		evs, err := events()
		if err != nil {
			return err
		}
		if err := checker.WriteLinearHTML(filepath.Join(dir, "linear.html"), evs, res.check); err != nil {
			return err
		}
	}
	if render {
		return RenderPages(dir, single)
	}
	return nil
}
