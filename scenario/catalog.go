package scenario

import (
	"fmt"
	"sort"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/reports"

	"github.com/lockharness/lockharness/internal/suggest"
)

// Entry is a named, seeded scenario of the catalog (docs/scenarios.md):
// a spec and what a correct harness must report for it.
type Entry struct {
	Name   string
	Source string
	// Story is the fault and sequence in a sentence.
	Story  string
	Spec   Spec
	Expect Expect
	// Compare names a scenario whose rates this one's report shows beside
	// its own (failover-wait against failover-double-grant).
	Compare string
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
