package reports

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/history"
)

// The pages are drawn from the checker's own operations: for every
// recorded run they are the operations pairing the events again gives,
// and so is everything drawn from them.
func TestPagesUseTheCheckersOperations(t *testing.T) {
	for _, dir := range recordedRuns(t) {
		events, err := history.ReadFile(history.InDir(dir))
		if err != nil {
			t.Fatal(err)
		}
		res, err := Conclude(events, Meta{}, checker.Options{Slack: DefaultSlack})
		if err != nil {
			t.Fatal(err)
		}
		paired, _ := history.Ops(events)
		if ops := res.check.Ops(); len(ops) == 0 || !reflect.DeepEqual(ops, paired) {
			t.Errorf("%s: the checker's %d operations are not the %d the events pair into", filepath.Base(dir), len(ops), len(paired))
			continue
		}
		again := timelineOf(analyse(events), res)
		if once := TimelineData(events, res); !reflect.DeepEqual(once, again) {
			t.Errorf("%s: the timeline from the checker's operations differs from the one pairing them again", filepath.Base(dir))
		}

		// harness report's one pass: read, checked and paired at once,
		// to the same events, verdict and operations.
		f, err := history.Open(history.InDir(dir))
		if err != nil {
			t.Fatal(err)
		}
		kept, keptEvents, err := ConcludeKeeping(f, Meta{}, checker.Options{Slack: DefaultSlack})
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(keptEvents, events) || kept.Valid != res.Valid || !reflect.DeepEqual(kept.Anomalies, res.Anomalies) ||
			!reflect.DeepEqual(kept.check.Ops(), paired) {
			t.Errorf("%s: one pass gave %d events, %s %v; reading then checking gave %d, %s %v", filepath.Base(dir),
				len(keptEvents), kept.Valid, kept.Anomalies, len(events), res.Valid, res.Anomalies)
		}
	}
	// A malformed line stops the pass with the line named.
	if _, _, err := ConcludeKeeping(strings.NewReader("{\"index\":0}\nnot json\n"), Meta{}, checker.Options{}); err == nil || !strings.Contains(err.Error(), "line ") {
		t.Errorf("a malformed history: %v", err)
	}
}
