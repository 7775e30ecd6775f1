package mutants

import (
	"compress/gzip"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/history"
)

// TestMutants plants every kind of defect in every valid recorded run
// (testdata/runs) and wants each caught with the anomaly it planted, and
// every equivalent change judged valid, with margins that agree with the
// counts (a negative margin is its anomaly): `make mutants` prints its
// line.
func TestMutants(t *testing.T) {
	runs := validRuns(t)
	var outcomes []Outcome
	kinds := map[string]int{}
	for _, r := range runs {
		for _, m := range Plant(r) {
			o := Judge(m)
			outcomes = append(outcomes, o)
			kinds[m.Kind]++
		}
	}
	rep := Summarise(outcomes)
	for _, o := range rep.Bad {
		what := "MISSED"
		switch {
		case o.FalseAlarm:
			what = "FALSE ALARM"
		case !o.Missed:
			t.Errorf("MARGINS DISAGREE %s in %s (%s): %s; got %s", o.Kind, o.Run, o.Where, o.MarginsDisagree, o.Got)
			continue
		}
		t.Errorf("%s %s in %s (%s), want %s: got %s", what, o.Kind, o.Run, o.Where, wantText(o.Mutant), o.Got)
	}
	for _, k := range Kinds {
		if kinds[k.Name] == 0 {
			t.Errorf("no recorded run has room for a %s mutant: the kind tests nothing", k.Name)
		}
	}
	if testing.Verbose() {
		fmt.Printf("%d valid recorded runs, %d kinds of mutant (%d equivalent changes among the mutants)\n", len(runs), len(Kinds), rep.Equivalent)
		for _, k := range Kinds {
			want := k.Want
			if want == "" {
				want = "valid"
			}
			fmt.Printf("  %-20s %3d mutants  want %s\n", k.Name, kinds[k.Name], want)
		}
	}
	fmt.Println(rep.Line())
}

func wantText(m Mutant) string {
	if m.Equivalent {
		return "valid"
	}
	return "invalid with " + m.Want
}

// validRuns are the recorded runs the checker found valid.
func validRuns(t *testing.T) []Run {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join("..", "..", "testdata", "runs", "*"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no recorded runs: %v", err)
	}
	var runs []Run
	for _, dir := range dirs {
		var want struct {
			Valid checker.Verdict `json:"valid"`
		}
		b, err := os.ReadFile(filepath.Join(dir, "expect.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatal(err)
		}
		if want.Valid != checker.Valid {
			continue
		}
		f, err := os.Open(filepath.Join(dir, "history.jsonl.gz"))
		if err != nil {
			t.Fatal(err)
		}
		zr, err := gzip.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		events, err := history.Decode(zr)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		tables, err := history.ReadTables(dir)
		if err != nil {
			t.Fatal(err)
		}
		r := Run{Name: filepath.Base(dir), Events: events, Tables: tables}
		if o := Judge(Mutant{Run: r.Name, Equivalent: true, Events: events, Tables: tables}); o.FalseAlarm {
			t.Fatalf("%s as recorded is not valid now: %s", r.Name, o.Got)
		}
		runs = append(runs, r)
	}
	return runs
}

// A lock service that keeps leases past their TTL (checker.Options.Outlive,
// etcd's) loosens only when a lease may still be live: every planted
// double grant is still caught with ten seconds of it, as certainly as
// without.
func TestOutliveHidesNoDoubleGrant(t *testing.T) {
	n := 0
	for _, r := range validRuns(t) {
		for _, m := range Plant(r) {
			if m.Want != checker.DoubleGrant {
				continue
			}
			n++
			res, err := checker.Check(m.Events, checker.Options{Slack: Slack, Outlive: 10 * time.Second, Tables: m.Tables, Database: m.Tables != nil, Timeout: time.Minute})
			if err != nil || res.Valid != checker.Invalid || res.Anomalies[checker.DoubleGrant] == 0 {
				t.Errorf("%s in %s (%s) with 10s outlive: %v %v", m.Kind, m.Run, m.Where, res.String(), err)
			}
		}
	}
	if n == 0 {
		t.Fatal("no double-grant mutant planted")
	}
	t.Logf("%d double-grant mutants caught with 10s outlive", n)
}
