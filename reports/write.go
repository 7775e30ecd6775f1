package reports

import (
	"path/filepath"
	"time"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/history"
)

// DefaultSlack absorbs clock-rate differences between the harness and the
// servers (see checker.Options).
const DefaultSlack = 2 * time.Millisecond

// WriteRun writes what a checked run leaves in its directory: results.json,
// linear.html when the check is not clean, and with render the plots and
// index.html.
func WriteRun(dir string, events []history.Event, res Results, render bool) error {
	return writeRunWith(dir, func() ([]history.Event, error) { return events, nil }, res, render)
}

// WriteRunFrom is WriteRun for results checked from a stream: it reads the
// history from histPath only when a page needs its events.
func WriteRunFrom(dir, histPath string, res Results, render bool) error {
	return writeRunWith(dir, func() ([]history.Event, error) { return history.ReadFile(histPath) }, res, render)
}

func writeRunWith(dir string, events func() ([]history.Event, error), res Results, render bool) error {
	if err := WriteResults(dir, res); err != nil {
		return err
	}
	if res.Valid != checker.Valid || !res.check.Linearizable() {
		evs, err := events()
		if err != nil {
			return err
		}
		if err := checker.WriteLinearHTML(filepath.Join(dir, "linear.html"), evs, res.check); err != nil {
			return err
		}
	}
	if render {
		return Render(dir)
	}
	return nil
}
