package runner

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/faults"
	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/reports"
)

// nonsense is what every Target and Detail of a nemesis event becomes:
// words that would mislead any reader that parsed them (a grant followed,
// a clock moved, a node emptied, a client frozen, a promotion, a probe).
const nonsense = "client 7 just acquired; n9 replaced n8 as primary; +9s; frozen at nowhere for 3s; " +
	"restarted empty (0 keys; persistence none); client 5's grant (event 0): on n9 (primary); absent on n1 (replica)"

// Every meaning the harness takes from a nemesis event comes from its
// facts, never from its words: with every Target and Detail of the
// recorded runs rewritten to nonsense, the verdicts, the findings' stories
// and causes, the timeline's labels and leases, schedule.json and the
// replay's steps are what they were.
func TestNonsenseWordsChangeNothing(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("..", "testdata", "runs", "*"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no recorded runs: %v", err)
	}
	var causes, labels, steps, upgraded int
	for _, dir := range dirs {
		name := filepath.Base(dir)
		t.Run(name, func(t *testing.T) {
			old, err := history.ReadFile(history.InDir(dir))
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range old {
				if e.IsNemesis() && e.Facts != nil {
					upgraded++
				}
			}
			// The run as this harness writes it (schema 2: facts), then
			// the same with its words replaced.
			written := roundTrip(t, old)
			garbled := make([]history.Event, len(written))
			copy(garbled, written)
			for i := range garbled {
				if garbled[i].IsNemesis() {
					garbled[i].Target, garbled[i].Detail = nonsense, nonsense
				}
			}
			garbled = roundTrip(t, garbled)

			want, got := meaning(t, written), meaning(t, garbled)
			if got.text != want.text {
				t.Errorf("the words changed what the run means:\n%s", firstDifference(want.text, got.text))
			}
			if old := meaning(t, old); old.text != want.text {
				t.Errorf("reading the recorded run and reading it rewritten as schema 2 differ:\n%s", firstDifference(old.text, want.text))
			}
			causes += want.causes
			labels += want.labels
			steps += want.steps
		})
	}
	// The test holds only if there was meaning to lose.
	t.Logf("%d runs: %d causes, %d fault labels, %d replay steps, %d nemesis events given facts from their words",
		len(dirs), causes, labels, steps, upgraded)
	if causes < 20 || labels < 40 || steps < 30 {
		t.Errorf("too little meaning to hold unchanged: %d causes, %d labels, %d steps", causes, labels, steps)
	}
}

// roundTrip encodes events as a history file holds them and reads them
// back.
func roundTrip(t *testing.T, events []history.Event) []history.Event {
	t.Helper()
	var buf bytes.Buffer
	if err := history.Encode(&buf, events); err != nil {
		t.Fatal(err)
	}
	out, err := history.Decode(&buf)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

type runMeaning struct {
	text                  string
	causes, labels, steps int
}

// meaning is everything the harness concludes from a run's history, as
// text to compare: the results (verdict, findings, counts), each
// finding's story and causes, the timeline's bands and leases, the
// schedule it followed and the steps a replay would take.
func meaning(t *testing.T, events []history.Event) runMeaning {
	t.Helper()
	var m runMeaning
	var b strings.Builder
	res, err := reports.Conclude(events, reports.Meta{}, checker.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range res.Checker.Linearizability.Models {
		res.Checker.Linearizability.Models[i].ElapsedMs = 0 // time taken, not meaning
	}
	js, _ := json.MarshalIndent(res, "", " ")
	fmt.Fprintf(&b, "results %s\n", js)
	for _, f := range res.Checker.Findings {
		for _, l := range reports.Story(events, f) {
			// A fault's own words are told beside the story, as they
			// were written: the rest is what the story concludes.
			fmt.Fprintf(&b, "story %v %s %s\n", l.At, l.Who, l.Text)
		}
		for _, c := range reports.Causes(events, f) {
			fmt.Fprintf(&b, "cause %s\n", c)
			m.causes++
		}
	}
	tl := reports.TimelineData(events, res)
	for _, band := range tl.Bands {
		fmt.Fprintf(&b, "band %s %v-%v open=%v observed=%v\n", band.Label(), band.Start, band.End, band.Open, band.Observed)
		m.labels++
	}
	for _, l := range tl.Leases {
		fmt.Fprintf(&b, "lease %s seen=%v nodes=%v primary=%s lacking=%v\n", l.Token, l.Seen, l.Nodes, l.Primary, l.Lacking)
	}
	followed := faults.FollowedOf(events, "recorded", 1, 0)
	dir := t.TempDir()
	if err := faults.WriteFollowed(dir, followed); err != nil {
		t.Fatal(err)
	}
	schedule, err := os.ReadFile(filepath.Join(dir, faults.FollowedFile))
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&b, "schedule.json %s\n", schedule)
	st, err := followed.Steps()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range st {
		fmt.Fprintf(&b, "step %s\n", s)
		m.steps++
	}
	m.text = b.String()
	return m
}

// firstDifference shows the first line where two texts part.
func firstDifference(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(al), len(bl)) {
		if al[i] != bl[i] {
			return fmt.Sprintf("line %d\n want %s\n  got %s", i+1, al[i], bl[i])
		}
	}
	return fmt.Sprintf("%d lines against %d", len(al), len(bl))
}
