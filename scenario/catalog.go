package scenario

import (
	"fmt"
	"slices"
	"sort"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/cluster"
	"github.com/lockharness/lockharness/reports"

	"github.com/lockharness/lockharness/internal/suggest"
)

// Entry is a named, seeded scenario of the catalog (docs/scenarios.md):
// a spec and what a correct harness must report for it.
type Entry struct {
	Name   string
	Source string
	// SourceURL links the public report the row reproduces, if one does
	// (an issue, a pull request, an analysis); docs/regressions.md keeps
	// when it last reproduced it.
	SourceURL string
	// Story is the fault and sequence in a sentence.
	Story  string
	Spec   Spec
	Expect Expect
	// Compare names a scenario whose rates this one's report shows beside
	// its own (failover-wait against failover-double-grant).
	Compare string
	// Remedy is the cause this row shows remedied, if it shows one.
	Remedy *RemedyOf
}

// RemedyOf is what a safe row shows: that a cause of an anomaly (a kind of
// reports.Cause) is remedied by what the row does differently, in words.
type RemedyOf struct {
	Cause     string   `toml:"cause"`
	Anomalies []string `toml:"anomalies"`
	Says      string   `toml:"says"`
}

// check refuses a remedy a row cannot show: only a safe row shows one,
// of a cause and anomaly the reports know.
func (r RemedyOf) check(expect Expect) error {
	if expect.Unsafe {
		return fmt.Errorf("an unsafe row shows no remedy")
	}
	if err := cluster.OneOf("cause", r.Cause, reports.CauseKinds); err != nil {
		return err
	}
	if len(r.Anomalies) == 0 {
		return fmt.Errorf("anomalies: which of the unsafe row's anomalies the remedy prevents")
	}
	for _, a := range r.Anomalies {
		if err := cluster.OneOf("anomaly", a, checker.AnomalyNames); err != nil {
			return err
		}
	}
	if r.Says == "" {
		return fmt.Errorf("says: what the row does that the unsafe one does not, in words")
	}
	return nil
}

// The pages name a catalog row's remedy beside the cause it remedies: the
// reports know no catalog, so it tells them.
func init() {
	reports.Remedies = func(cause, anomaly string) (reports.Remedy, bool) {
		for _, e := range Catalog {
			if r := e.Remedy; r != nil && r.Cause == cause && slices.Contains(r.Anomalies, anomaly) {
				return reports.Remedy{Row: e.Name, Says: r.Says, Expect: e.Expect.String()}, true
			}
		}
		return reports.Remedy{}, false
	}
}

// Expect is a catalog row's expectation. Unsafe scenarios must be caught
// (verdict invalid, and the named anomaly counted when one is named); safe
// ones must pass. A harness that is blind fails the first kind, one that
// cries wolf the second.
type Expect struct {
	Unsafe  bool
	Anomaly string
	// Fenced safe scenarios must also show the stale write being refused,
	// and no write of a legitimate holder refused: a fence that refuses
	// everything is not safe, only useless.
	Fenced bool
}

func (e Expect) String() string {
	switch {
	case e.Unsafe && e.Anomaly != "":
		return "unsafe: " + e.Anomaly
	case e.Unsafe:
		return "unsafe"
	case e.Fenced:
		return "safe: fencing.rejected >= 1, " + checker.RefusedWrite + " 0"
	}
	return "safe"
}

// fencedBefore is how scenario files of the second wave spelled a fenced
// expectation; ParseExpect still reads it.
const fencedBefore = "safe: fencing.rejected >= 1"

// Met reports whether a run's results meet the expectation, and why not.
func (e Expect) Met(r reports.Results) (bool, string) {
	if e.Unsafe {
		if r.Valid != checker.Invalid {
			return false, fmt.Sprintf("verdict %s, want invalid", r.Valid)
		}
		if e.Anomaly != "" && r.Anomalies[e.Anomaly] < 1 {
			return false, fmt.Sprintf("no %s found", e.Anomaly)
		}
		return true, ""
	}
	if r.Valid != checker.Valid {
		return false, fmt.Sprintf("verdict %s, want valid", r.Valid)
	}
	if e.Fenced && r.Fencing.Rejected < 1 {
		return false, "no stale write was refused by fencing"
	}
	if e.Fenced && r.Anomalies[checker.RefusedWrite] > 0 {
		return false, fmt.Sprintf("%d writes of a legitimate holder were refused (%s)", r.Anomalies[checker.RefusedWrite], checker.RefusedWrite)
	}
	return true, ""
}

// StopOn is what a run meeting the expectation can stop early on: an
// unsafe scenario's anomaly (every online one when it names none, or when
// it names one only the whole history shows); nothing for a safe one,
// which must run its course to pass.
func (e Expect) StopOn() []string {
	if !e.Unsafe {
		return nil
	}
	if e.Anomaly == "" {
		return checker.OnlineAnomalies
	}
	for _, a := range checker.OnlineAnomalies {
		if a == e.Anomaly {
			return []string{a}
		}
	}
	return nil
}

// Catalog is every named scenario, read from the scenario files in
// catalog/ (see ParseScenario). It is what must never regress.
var Catalog = loadCatalog()

// Lookup finds a catalog entry by name, or lists the valid names.
func Lookup(name string) (Entry, error) {
	var names []string
	for _, e := range Catalog {
		if e.Name == name {
			e.Spec.Name = e.Name
			return e, nil
		}
		names = append(names, e.Name)
	}
	sort.Strings(names)
	return Entry{}, suggest.Unknown("scenario", name, names, "")
}
