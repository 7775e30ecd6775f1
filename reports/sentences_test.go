package reports

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/history"
)

// Every sentence a page says of a finding (its narrative and its causes)
// names only what the finding's own story shows: each time, node, client
// and lease token it names is one the story's lines name too, so that a
// reader can hold the sentence against the table beneath it. Checked over
// every recorded run in testdata/runs and every finding in them.
func TestEverySentenceRestsOnItsFindingsEvents(t *testing.T) {
	dirs := recordedRuns(t)
	named := map[string]*regexp.Regexp{
		"time":   regexp.MustCompile(`\b\d+\.\d{3} s\b`),
		"node":   regexp.MustCompile(`\b[ns]\d+\b`),
		"client": regexp.MustCompile(`\bclient \d+\b`),
		"token":  regexp.MustCompile(`\bc\d+-\d+-[0-9a-f]{8}\b`),
	}
	sentences, findings := 0, 0
	for _, dir := range dirs {
		events, res := checkRecorded(t, dir)
		a := analyse(events)
		for i, f := range res.Findings {
			findings++
			var shown []string
			for _, l := range a.story(f) {
				shown = append(shown, l.String())
			}
			table := strings.Join(shown, "\n")
			says := append([]string{f.Narrative}, a.causes(f)...)
			for _, s := range says {
				sentences++
				derived, err := derivedTimes(s)
				if err != nil {
					t.Errorf("%s finding %d (%s): %v in\n  %s", filepath.Base(dir), i+1, f.Anomaly, err, s)
				}
				for kind, re := range named {
					for _, word := range re.FindAllString(s, -1) {
						if kind == "time" && derived[word] {
							continue
						}
						if !containsWord(table, word) {
							t.Errorf("%s finding %d (%s): the %s %q in\n  %s\nis not in its story:\n  %s", filepath.Base(dir), i+1, f.Anomaly, kind, word, s, strings.ReplaceAll(table, "\n", "\n  "))
						}
					}
				}
			}
		}
	}
	t.Logf("%d sentences of %d findings in %d recorded runs", sentences, findings, len(dirs))
}

// A bound a sentence derives from an event it names, with the derivation
// beside it: "certainly held until 4.552 s (ttl 2000 ms from its invoke at
// 2.554 s, less 0.002 s slack)", "expired by 2.577 s (ttl 1000 ms from its
// grant at 1.575 s, plus 0.002 s slack)", "(release asked at 5.356 s)",
// and the "0.910 s after that" that follows an expiry.
var (
	derivation = regexp.MustCompile(`(?:until|by) (\d+\.\d{3}) s \((?:ttl (\d+) ms from its (?:invoke|grant) at|(\d+) ms from its extend answered at|extended at|release asked at) (\d+\.\d{3}) s(?: for (\d+) ms)?(?:, (less|plus) (\d+\.\d{3}) s slack)?\)`)
	afterThat  = regexp.MustCompile(`expired by (\d+\.\d{3}) s \([^)]*\); (\d+\.\d{3}) s [^;]*?, (\d+\.\d{3}) s after that`)
)

// derivedTimes checks the arithmetic of every bound a sentence derives and
// returns the times so derived, which need not be in the story: the
// events they rest on must be.
func derivedTimes(s string) (map[string]bool, error) {
	num := func(v string) float64 { f, _ := strconv.ParseFloat(v, 64); return f }
	out := map[string]bool{}
	for _, m := range derivation.FindAllStringSubmatch(s, -1) {
		bound, base := num(m[1]), num(m[4])
		ms := num(m[2]) + num(m[3]) + num(m[5])
		slack := num(m[7])
		if m[6] == "less" {
			slack = -slack
		}
		if want := base + ms/1000 + slack; math.Abs(want-bound) > 0.0015 {
			return out, fmt.Errorf("%q: %s s is not %.3f s", m[0], m[1], want)
		}
		out[m[1]+" s"] = true
		if m[7] != "" {
			if d := time.Duration(num(m[7]) * float64(time.Second)); d.Round(time.Millisecond) != DefaultSlack {
				return out, fmt.Errorf("%q: slack %s s is not the checker's %v", m[0], m[7], DefaultSlack)
			}
			out[m[7]+" s"] = true
		}
	}
	for _, m := range afterThat.FindAllStringSubmatch(s, -1) {
		if want := num(m[2]) - num(m[1]); math.Abs(want-num(m[3])) > 0.0015 {
			return out, fmt.Errorf("%q: %s s after %s s is %.3f s, not %s s", m[0], m[2], m[1], want, m[3])
		}
		out[m[3]+" s"] = true
	}
	return out, nil
}

// containsWord reports whether text holds word as a word of its own:
// "client 1" is not in "client 12", nor "1.005 s" in "11.005 s".
func containsWord(text, word string) bool {
	return regexp.MustCompile(`(^|[^0-9A-Za-z.-])` + regexp.QuoteMeta(word) + `($|[^0-9A-Za-z])`).MatchString(text)
}

// Every closest call a page states rests on its own events: each time it
// names is one of theirs or derived from one beside it, each client and
// token is one of theirs, it names its own margin, and (but for a clock's,
// which subtracts a move) that margin is the distance between two of the
// times it names. Checked over every margin of every recorded run.
func TestEveryMarginRestsOnItsEvents(t *testing.T) {
	timeRe := regexp.MustCompile(`\b\d+\.\d{3} s\b`)
	clientRe := regexp.MustCompile(`\bclient \d+\b`)
	tokenRe := regexp.MustCompile(`\bc\d+-\d+-[0-9a-f]{8}\b`)
	margins := 0
	for _, dir := range recordedRuns(t) {
		events, res := checkRecorded(t, dir)
		for _, m := range res.Margins {
			margins++
			where := fmt.Sprintf("%s %s margin %.3f ms", filepath.Base(dir), m.Property, m.Ms)
			times, clients, tokens := map[string]bool{fmt.Sprintf("%.3f s", m.At): true}, map[string]bool{}, map[string]bool{}
			for _, i := range m.Events {
				e := events[i]
				times[checker.Secs(e.Time)] = true
				if !e.IsNemesis() {
					clients[fmt.Sprintf("client %d", e.Client)] = true
					tokens[e.Token] = true
				}
			}
			derived, err := derivedTimes(m.Says)
			if err != nil {
				t.Errorf("%s: %v in\n  %s", where, err, m.Says)
			}
			var named []float64
			for _, w := range timeRe.FindAllString(m.Says, -1) {
				if !times[w] && !derived[w] {
					t.Errorf("%s: the time %q in\n  %s\nis none of its events' %v", where, w, m.Says, times)
				}
				v, _ := strconv.ParseFloat(strings.TrimSuffix(w, " s"), 64)
				named = append(named, v)
			}
			for _, w := range clientRe.FindAllString(m.Says, -1) {
				if !clients[w] {
					t.Errorf("%s: %q in\n  %s\nis none of its events' clients %v", where, w, m.Says, clients)
				}
			}
			for _, w := range tokenRe.FindAllString(m.Says, -1) {
				if !tokens[w] {
					t.Errorf("%s: token %q in\n  %s\nis none of its events'", where, w, m.Says)
				}
			}
			if own := fmt.Sprintf("%.1f ms", math.Abs(m.Ms)); !strings.Contains(m.Says, own) {
				t.Errorf("%s: it does not say its own margin, %s:\n  %s", where, own, m.Says)
			}
			if m.Property == checker.Clock || math.Abs(m.Ms) < 0.01 {
				continue
			}
			found := false
			for _, a := range named {
				for _, b := range named {
					found = found || math.Abs(math.Abs(a-b)*1000-math.Abs(m.Ms)) <= 1.5
				}
			}
			if !found {
				t.Errorf("%s: no two times it names (%v) are %.3f ms apart:\n  %s", where, named, m.Ms, m.Says)
			}
		}
	}
	t.Logf("%d margins in %d recorded runs", margins, len(recordedRuns(t)))
}

// checkRecorded reads a recorded run and checks it as its recording was
// checked: the database's final rows where it has them.
func checkRecorded(t *testing.T, dir string) ([]history.Event, checker.Result) {
	t.Helper()
	events, err := history.ReadFile(filepath.Join(dir, "history.jsonl.gz"))
	if err != nil {
		t.Fatal(err)
	}
	tables, err := history.ReadTables(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, statErr := os.Stat(filepath.Join(dir, history.TablesFile))
	res, err := checker.Check(events, checker.Options{Slack: DefaultSlack, Tables: tables, Database: statErr == nil})
	if err != nil {
		t.Fatal(err)
	}
	return events, res
}
