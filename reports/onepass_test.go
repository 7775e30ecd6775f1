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

		// harness report's reading: checked as read, then read again
		// keeping only the events the pages tell one by one, to the same
		// verdict, operations, timeline, stories and causes.
		f, err := history.Open(history.InDir(dir))
		if err != nil {
			t.Fatal(err)
		}
		streamed, err := ConcludeStream(f, Meta{}, checker.Options{Slack: DefaultSlack})
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if streamed.Valid != res.Valid || !reflect.DeepEqual(streamed.Anomalies, res.Anomalies) || !reflect.DeepEqual(streamed.check.Ops(), paired) {
			t.Errorf("%s: checked as read: %s %v; reading then checking gave %s %v", filepath.Base(dir), streamed.Valid, streamed.Anomalies, res.Valid, res.Anomalies)
			continue
		}
		run, err := ReadRun(history.InDir(dir), streamed)
		if err != nil {
			t.Fatal(err)
		}
		if kept := len(run.a.events.kept); run.a.events.pos == nil || hasClientEvents(events) && kept == len(events) {
			t.Errorf("%s: the pages kept %d of %d events: every one, not the few they tell", filepath.Base(dir), kept, len(events))
		}
		whole := analyse(events)
		if got := timelineOf(run.a, streamed); !reflect.DeepEqual(got, again) {
			t.Errorf("%s: the timeline from the events the pages keep differs from the one from every event", filepath.Base(dir))
		}
		if !reflect.DeepEqual(marginViews(streamed.Margins, run.a), marginViews(res.Margins, whole)) {
			t.Errorf("%s: the margins' links differ", filepath.Base(dir))
		}
		for i, f := range res.Checker.Findings {
			if got, want := run.a.story(f), whole.story(f); !reflect.DeepEqual(got, want) {
				t.Errorf("%s: finding %d's story from the kept events:\n%v\nfrom every event:\n%v", filepath.Base(dir), i+1, got, want)
			}
			if got, want := run.a.causes(f), whole.causes(f); !reflect.DeepEqual(got, want) {
				t.Errorf("%s: finding %d's causes from the kept events:\n%v\nfrom every event:\n%v", filepath.Base(dir), i+1, got, want)
			}
		}
	}
	// A malformed line stops the check with the line named.
	if _, err := ConcludeStream(strings.NewReader("{\"index\":0}\nnot json\n"), Meta{}, checker.Options{}); err == nil || !strings.Contains(err.Error(), "line ") {
		t.Errorf("a malformed history: %v", err)
	}
}

// hasClientEvents reports whether any event is a client's.
func hasClientEvents(events []history.Event) bool {
	for _, e := range events {
		if !e.IsNemesis() {
			return true
		}
	}
	return false
}
