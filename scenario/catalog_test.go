package scenario

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/faults"
	"github.com/lockharness/lockharness/history"
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

func runEntry(t *testing.T, name string, seed int64) reports.Results {
	t.Helper()
	return runEntryOutcome(t, name, seed).Results
}

func runEntryOutcome(t *testing.T, name string, seed int64) Outcome {
	t.Helper()
	needSentinel(t)
	e, err := Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	e.Spec.Seed = seed
	out := runOutcome(t, e.Spec)
	if ok, why := e.Expect.Met(out.Results); !ok {
		t.Errorf("%s seed %d: expectation %q not met: %s; anomalies %v, notes %v", name, seed, e.Expect, why, out.Results.Anomalies, out.Results.Checker.Notes)
	}
	return out
}

// The headline case: a lock granted on a primary whose replication is held
// back is lost in the failover, and granted again; the report says so, from
// where the harness found each grant.
func TestFailoverDoubleGrant(t *testing.T) {
	out := runEntryOutcome(t, "failover-double-grant", 1)
	r := out.Results
	if r.Faults["switch-master"] != 0 || r.Faults[history.GrantSeen] != 0 {
		t.Errorf("observations counted as fault windows: %v", r.Faults)
	}
	events, err := history.ReadFile(filepath.Join(out.Dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, e := range events {
		if e.F == history.GrantSeen {
			seen++
		}
	}
	if seen == 0 {
		t.Error("no grant-seen observation in the history")
	}
	var causes []string
	for _, f := range r.Checker.Findings {
		if f.Anomaly == checker.DoubleGrant {
			causes = append(causes, reports.Causes(events, f)...)
		}
	}
	told := false
	for _, c := range causes {
		told = told || strings.Contains(c, "was promoted (switch-master") && strings.Contains(c, "had not replicated to it")
	}
	if !told {
		t.Errorf("no double grant's causes name the promotion of an unreplicated grant: %q", causes)
	}
	// The schedule it followed is kept beside the history: the cut, just
	// after a grant.
	b, err := os.ReadFile(filepath.Join(out.Dir, faults.FollowedFile))
	if err != nil {
		t.Fatal(err)
	}
	var followed faults.Followed
	if err := json.Unmarshal(b, &followed); err != nil {
		t.Fatal(err)
	}
	if len(followed.Faults) == 0 || followed.Faults[0].Fault != "partition-primary" || followed.Faults[0].After == nil {
		t.Errorf("%s: %s", faults.FollowedFile, b)
	}
}

func TestSplitBrain(t *testing.T) { runEntry(t, "split-brain", 1) }

// A lease lost in the middle of the work, both ways: a renewing holder cut
// off from the node goes on writing after its lease ended; fenced by the
// database, its late writes are refused once the next holder wrote, and
// no legitimate write is.
func TestPartitionHolder(t *testing.T) {
	r := runEntry(t, "renew-partition-holder", 1)
	if r.Faults["partition-holder"] < 1 {
		t.Errorf("no partition-holder window: %v", r.Faults)
	}
	needPostgres(t)
	r = runEntry(t, "partition-holder-fenced", 1)
	// Writes go through the hold: more than one a grant, where a defect
	// that wrote once a hold would make at most one. How many more depends
	// on where the partitions and the time limit cut the holds (26 to 28
	// accepted for 11 grants, of 5 a hold, with two runs beside it).
	if r.Anomalies[checker.ExpiredWrite] != 0 || r.Stats["write"].OK < 2*r.Stats["acquire"].OK {
		t.Errorf("fenced: %v, %d writes for %d grants", r.Anomalies, r.Stats["write"].OK, r.Stats["acquire"].OK)
	}
}

// Redlock both ways: a node that restarts empty hands a second client a
// majority; one that stays down past the TTL does not.
func TestRedlockRestart(t *testing.T)        { runEntry(t, "redlock-restart", 1) }
func TestRedlockDelayedRestart(t *testing.T) { runEntry(t, "redlock-delayed-restart", 1) }

// The clock shim moves a node's expiry clock: a forward jump frees a held
// lock at once.
func TestClockJumpSingle(t *testing.T) { runEntry(t, "clock-jump-single", 1) }

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
