package reports

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockharness/lockharness/checker"
)

// A comparison lays a suite of "lock × fault" rows out as a matrix whose
// cells count the runs that found an anomaly and link to them, with each
// lock's cost measured in its runs without faults.
func TestCompareOfASuite(t *testing.T) {
	dir := t.TempDir()
	run := func(name string, acquires int, p50 float64) string {
		rel := filepath.Join("..", "..", name)
		abs := filepath.Join(dir, name)
		if err := os.MkdirAll(abs, 0o755); err != nil {
			t.Fatal(err)
		}
		res := Results{Valid: checker.Valid, Spec: json.RawMessage(`{"time_limit":"10s"}`),
			Stats: map[string]checker.OpStats{"acquire": {OK: acquires, P50Ms: p50, P99Ms: 2 * p50}}}
		if err := WriteResults(abs, res); err != nil {
			t.Fatal(err)
		}
		return rel
	}
	suiteDir := filepath.Join(dir, "suites", "x")
	os.MkdirAll(suiteDir, 0o755)
	cell := func(verdict string, anomalies map[string]int, r string) SuiteCell {
		return SuiteCell{Verdict: verdict, Anomalies: anomalies, Run: r}
	}
	alone := func(c SuiteCell) SuiteCell { c.Alone = true; return c }
	s := Suite{Name: "compare", Rows: []SuiteRow{
		{Scenario: "cad × none", Cells: []SuiteCell{alone(cell("valid", nil, run("cad-none-1", 100, 1))), alone(cell("valid", nil, run("cad-none-2", 300, 3)))}},
		{Scenario: "cad × kill-node", Cells: []SuiteCell{cell("invalid", map[string]int{checker.DoubleGrant: 2}, "k1"), cell("valid", nil, "k2")}},
		{Scenario: "redlock × none", Cells: []SuiteCell{cell("valid", nil, run("redlock-none-1", 50, 4))}},
	}}
	c := CompareOf(suiteDir, s)
	if len(c.Rows) != 2 || strings.Join(c.Columns, ",") != "none,kill-node" {
		t.Fatalf("rows %+v columns %v", c.Rows, c.Columns)
	}
	cad := c.Rows[0]
	if got := cad.Cells[1]; got.Rate() != "1/2" || got.Found() != "double-grant 1" || got.Links[0] != "k1/index.html" {
		t.Errorf("cad under kill-node: %s %q %v", got.Rate(), got.Found(), got.Links)
	}
	if cad.Cost == nil || cad.Cost.AcquireP50Ms != 2 || cad.Cost.HandoffsPerSec != 20 {
		t.Errorf("cad's cost %+v, want p50 2 ms (the median of 1 and 3) and 400 grants in 20 s", cad.Cost)
	}
	broken := CompareOf(suiteDir, Suite{Rows: []SuiteRow{{Scenario: "cad × none", Cells: []SuiteCell{
		cell("valid", nil, ""), {Verdict: "error", Error: "redis-server did not start"}, cell("interrupted", nil, "")}}}})
	if got := broken.Rows[0].Cells[0]; got.Rate() != "0/1" || got.Class() != "unsure" || got.Found() != "harness error 2" {
		t.Errorf("a cell with failed runs: %s %s %q, want 0/1, unsure, harness error 2", got.Rate(), got.Class(), got.Found())
	}
	if c.Rows[1].Cells[1].Rate() != "–" {
		t.Errorf("redlock did not run under kill-node, yet its cell says %s", c.Rows[1].Cells[1].Rate())
	}
	md := c.Markdown()
	// A cost measured beside other runs says so; one measured alone
	// needs no word.
	if !strings.Contains(md, "| cad | [0/2](../../cad-none-1/index.html) | [1/2](k1/index.html) double-grant 1 | 2.0 / 4.0 ms | 20.0 |") ||
		!strings.Contains(md, "| redlock | [0/1](../../redlock-none-1/index.html) | – | 4.0 / 8.0 ms (beside other runs) | 5.0 |") {
		t.Errorf("markdown:\n%s", md)
	}
	if err := WriteCompare(suiteDir, c); err != nil {
		t.Fatal(err)
	}
	if page, _ := os.ReadFile(filepath.Join(suiteDir, "compare.html")); !strings.Contains(string(page), "4.0 / 8.0 ms (beside other runs)") ||
		strings.Contains(string(page), "2.0 / 4.0 ms (beside") {
		t.Errorf("compare.html does not qualify redlock's cost alone:\n%s", page)
	}
	if !s.Comparable() || (Suite{Rows: []SuiteRow{{Scenario: "clean-cad"}}}).Comparable() {
		t.Error("Comparable is wrong")
	}
}
