package reports

import (
	"encoding/xml"
	"fmt"
	"strings"
)

// JUnit renders suites as JUnit XML, which CI systems show natively: one
// testsuite per suite, one testcase per scenario × seed. A run that missed
// its expectation is a failure whose text is what the checker found (the
// anomaly narratives) or why it did not; a run the harness failed is an
// error; an interrupted one is skipped. Passing runs keep their narratives
// as system-out, so a caught anomaly is readable there too.
func JUnit(suites ...Suite) ([]byte, error) {
	type failure struct {
		Message string `xml:"message,attr"`
		Type    string `xml:"type,attr"`
		Text    string `xml:",chardata"`
	}
	type skipped struct {
		Message string `xml:"message,attr"`
	}
	type testcase struct {
		Name      string   `xml:"name,attr"`
		Classname string   `xml:"classname,attr"`
		Time      string   `xml:"time,attr"`
		Failure   *failure `xml:"failure,omitempty"`
		Error     *failure `xml:"error,omitempty"`
		Skipped   *skipped `xml:"skipped,omitempty"`
		SystemOut string   `xml:"system-out,omitempty"`
	}
	type testsuite struct {
		Name     string     `xml:"name,attr"`
		Tests    int        `xml:"tests,attr"`
		Failures int        `xml:"failures,attr"`
		Errors   int        `xml:"errors,attr"`
		Skipped  int        `xml:"skipped,attr"`
		Time     string     `xml:"time,attr"`
		Cases    []testcase `xml:"testcase"`
	}
	type testsuites struct {
		XMLName xml.Name    `xml:"testsuites"`
		Suites  []testsuite `xml:"testsuite"`
	}
	var out testsuites
	for _, s := range suites {
		ts := testsuite{Name: "lockharness " + s.Name, Time: fmt.Sprintf("%.3f", s.WallSec)}
		for _, row := range s.Rows {
			for _, cell := range row.Cells {
				tc := testcase{Name: fmt.Sprintf("%s seed %d", row.Scenario, cell.Seed),
					Classname: "lockharness." + strings.ReplaceAll(s.Name, " ", "."), Time: fmt.Sprintf("%.3f", cell.Seconds)}
				detail := strings.TrimSpace(fmt.Sprintf("expect %s; verdict %s; run %s\n%s", orNone(row.Expect), cell.Verdict, cell.Run, cell.Narrative))
				switch {
				case cell.Verdict == "interrupted":
					tc.Skipped = &skipped{Message: "interrupted"}
					ts.Skipped++
				case cell.Error != "":
					tc.Error = &failure{Message: cell.Error, Type: "harness", Text: detail}
					ts.Errors++
				case cell.Met != nil && !*cell.Met:
					tc.Failure = &failure{Message: "expectation " + row.Expect + " not met: " + cell.Why, Type: "expectation", Text: detail}
					ts.Failures++
				default:
					tc.SystemOut = detail
				}
				ts.Cases = append(ts.Cases, tc)
			}
		}
		ts.Tests = len(ts.Cases)
		out.Suites = append(out.Suites, ts)
	}
	b, err := xml.MarshalIndent(out, "", "  ")
	if err != nil {
		return nil, err
	}
	return append([]byte(xml.Header), append(b, '\n')...), nil
}

func orNone(expect string) string {
	if expect == "" {
		return "nothing (explore)"
	}
	return expect
}
