package reports

import (
	"encoding/xml"
	"strings"
	"testing"
)

func TestJUnitOneCasePerSeed(t *testing.T) {
	yes, no := true, false
	s := Suite{Name: "repro gc-pause", WallSec: 21.5, Rows: []SuiteRow{{
		Scenario: "gc-pause", Expect: "unsafe: stale-write",
		Cells: []SuiteCell{
			{Seed: 1, Verdict: "invalid", Met: &yes, Narrative: "stale-write: 0.956 s client 1 acquired ...", Seconds: 10.9, Run: "store/gc-pause/1"},
			{Seed: 2, Verdict: "valid", Met: &no, Why: "verdict valid, want invalid", Seconds: 10.6},
			{Seed: 3, Verdict: "error", Error: "redis-server did not start"},
			{Seed: 4, Verdict: "interrupted"},
		},
	}}}
	b, err := JUnit(s)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Suites []struct {
			Name     string `xml:"name,attr"`
			Tests    int    `xml:"tests,attr"`
			Failures int    `xml:"failures,attr"`
			Errors   int    `xml:"errors,attr"`
			Skipped  int    `xml:"skipped,attr"`
			Cases    []struct {
				Name    string `xml:"name,attr"`
				Failure *struct {
					Message string `xml:"message,attr"`
					Text    string `xml:",chardata"`
				} `xml:"failure"`
				SystemOut string `xml:"system-out"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("not valid XML: %v\n%s", err, b)
	}
	if len(doc.Suites) != 1 {
		t.Fatalf("%s", b)
	}
	ts := doc.Suites[0]
	if ts.Name != "lockharness repro gc-pause" || ts.Tests != 4 || ts.Failures != 1 || ts.Errors != 1 || ts.Skipped != 1 {
		t.Errorf("suite %+v", ts)
	}
	if c := ts.Cases[0]; c.Name != "gc-pause seed 1" || c.Failure != nil || !strings.Contains(c.SystemOut, "stale-write: 0.956 s") {
		t.Errorf("a met seed: %+v", c)
	}
	if c := ts.Cases[1]; c.Failure == nil || !strings.Contains(c.Failure.Message, "verdict valid, want invalid") {
		t.Errorf("a missed seed: %+v", c)
	}
}
