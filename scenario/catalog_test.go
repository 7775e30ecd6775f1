package scenario

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/reports"
)

func TestCatalogSpecsAreValid(t *testing.T) {
	seen := map[string]bool{}
	for _, e := range Catalog {
		if seen[e.Name] {
			t.Errorf("%s is in the catalog twice", e.Name)
		}
		seen[e.Name] = true
		if err := e.Spec.Validate(); err != nil {
			t.Errorf("%s: %v", e.Name, err)
		}
		if e.Compare != "" {
			if _, err := Lookup(e.Compare); err != nil {
				t.Errorf("%s compares with %v", e.Name, err)
			}
		}
	}
	if _, err := Lookup("nosuch"); err == nil || !strings.Contains(err.Error(), "failover-double-grant") {
		t.Errorf("Lookup(nosuch) = %v, want the valid names", err)
	}
}

// The pages a user reads first name every row the binary carries, and the
// README's count is the catalog's: a row added without its line, or a
// count left behind, states a wrong fact.
func TestDocsNameEveryCatalogRow(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	catalog, err := os.ReadFile("../docs/scenarios.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range Catalog {
		if !strings.Contains(string(catalog), "| `"+e.Name+"` |") {
			t.Errorf("docs/scenarios.md has no row for %s", e.Name)
		}
		if !strings.Contains(string(readme), "| `"+e.Name+"` |") {
			t.Errorf("README.md's catalog table has no row for %s", e.Name)
		}
	}
	if count := fmt.Sprintf("\n%d named, seeded scenarios", len(Catalog)); !strings.Contains(string(readme), count) {
		t.Errorf("README.md does not say %q", strings.TrimSpace(count))
	}
}

func TestExpectations(t *testing.T) {
	invalid := reports.Results{Valid: checker.Invalid, Anomalies: map[string]int{checker.DoubleGrant: 2}}
	valid := reports.Results{Valid: checker.Valid, Anomalies: map[string]int{}}
	fenced := reports.Results{Valid: checker.Valid, Anomalies: map[string]int{}, Fencing: checker.Fencing{Rejected: 1}}
	cases := []struct {
		e    Expect
		r    reports.Results
		want bool
	}{
		{Expect{Unsafe: true, Anomaly: checker.DoubleGrant}, invalid, true},
		{Expect{Unsafe: true, Anomaly: checker.StaleWrite}, invalid, false},
		{Expect{Unsafe: true}, valid, false},
		{Expect{}, valid, true},
		{Expect{}, invalid, false},
		{Expect{Fenced: true}, valid, false},
		{Expect{Fenced: true}, fenced, true},
		// A refused legitimate write makes a run invalid; Met says so
		// even of results that claim valid.
		{Expect{Fenced: true}, reports.Results{Valid: checker.Valid, Anomalies: map[string]int{checker.RefusedWrite: 1}, Fencing: checker.Fencing{Rejected: 3}}, false},
	}
	for _, c := range cases {
		if got, why := c.e.Met(c.r); got != c.want {
			t.Errorf("%s on %v: met=%v (%s), want %v", c.e, c.r.Valid, got, why, c.want)
		}
	}
}

// The catalog's remedies, as the pages name them: a row shows a remedy of
// a cause only where a safe row does what the unsafe one did not. No row
// shows a remedy for a failover that lost an unreplicated grant, nor for a
// clock that moved: failover-wait and redlock-clock-jump are unsafe too.
func TestCatalogRemedies(t *testing.T) {
	for _, c := range []struct{ cause, anomaly, row string }{
		{reports.CauseFrozenClient, checker.StaleWrite, "gc-pause-fenced"},
		{reports.CauseFrozenClient, checker.ExpiredWrite, "gc-pause-fenced"},
		{reports.CauseEmptyRestart, checker.DoubleGrant, "restart-aof-always"},
		{reports.CauseUnreplicated, checker.DoubleGrant, ""},
		{reports.CauseClockMoved, checker.DoubleGrant, ""},
	} {
		r, ok := reports.Remedies(c.cause, c.anomaly)
		if r.Row != c.row || ok != (c.row != "") {
			t.Errorf("remedy of %s for %s: %+v, %v; want row %q", c.cause, c.anomaly, r, ok, c.row)
			continue
		}
		if ok {
			e, err := Lookup(r.Row)
			if err != nil || e.Expect.Unsafe {
				t.Errorf("row %s: %v, unsafe %v: a remedy's row must be safe", r.Row, err, e.Expect.Unsafe)
			}
		}
	}
	bad := "name = \"x\"\nexpect = \"unsafe\"\n[remedy]\ncause = \"frozen-client\"\nanomalies = [\"stale-write\"]\nsays = \"y\"\n[spec]\nlock = \"cad\"\n"
	if _, err := ParseScenario("x.toml", ".", []byte(bad)); err == nil || !strings.Contains(err.Error(), "an unsafe row shows no remedy") {
		t.Errorf("an unsafe row's remedy: %v", err)
	}
	typo := strings.Replace(strings.Replace(bad, "unsafe", "safe", 1), "frozen-client", "frozen-clients", 1)
	if _, err := ParseScenario("x.toml", ".", []byte(typo)); err == nil || !strings.Contains(err.Error(), `unknown cause "frozen-clients" (did you mean frozen-client?`) {
		t.Errorf("a remedy of an unknown cause: %v", err)
	}
}
