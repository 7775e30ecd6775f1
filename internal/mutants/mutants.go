// Package mutants tests the checker by planting, in recorded runs it found
// valid, the defects a broken lock or resource leaves in a history — a grant
// inside another's lease, a release of a newer holder's key, a write of an
// expired lease, fences out of order, a legitimate write refused, an extend
// after expiry, a lost increment, a grant while every node was down — and
// asking whether the checker names each one. Equivalent mutants, which
// widen operations inside their own uncertainty (every real instant stays
// possible), must stay valid: a checker that cries wolf fails as surely as
// a blind one.
package mutants

import (
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/history"
)

// Slack is the checker's slack the runs were judged with.
const Slack = 2 * time.Millisecond

// FencedMutex is what a mutant wants when porcupine's fenced-mutex model,
// not an audit, is the judge (fences handed out of order).
const FencedMutex = "fenced-mutex"

// Run is a recorded run: its history and, with a database, its final rows.
type Run struct {
	Name   string
	Events []history.Event
	Tables *history.Tables
}

// Mutant is a run with one defect planted (or, Equivalent, one change
// that must not matter).
type Mutant struct {
	Run  string
	Kind string
	// Want is the anomaly the checker must count, or FencedMutex; empty
	// for an equivalent mutant, which must stay valid.
	Want       string
	Equivalent bool
	// Where says what was planted, for a miss's report.
	Where  string
	Events []history.Event
	Tables *history.Tables
}

// Kind is one defect and how to plant it.
type Kind struct {
	Name string
	// Want is the anomaly that names the defect; empty for an equivalent
	// change.
	Want string
	// Plant returns the mutants of run it can make: a few candidates
	// spread over the history, none when it has nowhere to plant.
	Plant func(h *hist) []planted
}

// planted is what Plant makes: the changed history and where.
type planted struct {
	where  string
	events []history.Event
	tables *history.Tables
}

// Kinds are every defect and every equivalent change.
var Kinds = []Kind{
	{"grant-in-lease", checker.DoubleGrant, plantGrantInLease},
	{"release-of-newer", checker.ForeignRelease, plantReleaseOfNewer},
	{"expired-write", checker.ExpiredWrite, plantExpiredWrite},
	{"fences-reordered", FencedMutex, plantFencesReordered},
	{"legit-write-refused", checker.RefusedWrite, plantRefusal},
	{"extend-after-expiry", checker.ForeignRelease, plantExtendAfterExpiry},
	{"lost-increment", checker.LostUpdate, plantLostIncrement},
	{"grant-while-down", checker.PhantomGrant, plantGrantWhileDown},
	{"stale-refused", "", plantStaleRefusal},
	{"widen-acquire", "", widen(history.Acquire)},
	{"widen-release", "", widen(history.Release)},
	{"widen-write", "", widen(history.Write)},
	{"widen-extend", "", widen(history.Extend)},
	{"widen-all", "", widen("")},
}

// perKind bounds the mutants of one kind in one run.
const perKind = 3

// Plant makes every mutant of run, in Kinds order.
func Plant(r Run) []Mutant {
	var out []Mutant
	for _, k := range Kinds {
		for _, p := range k.Plant(newHist(r)) {
			if history.Validate(p.events) != nil {
				continue // not a history at all: no test of the checker
			}
			out = append(out, Mutant{Run: r.Name, Kind: k.Name, Want: k.Want, Equivalent: k.Want == "", Where: p.where, Events: p.events, Tables: p.tables})
		}
	}
	return out
}

// Outcome is how the checker judged a mutant.
type Outcome struct {
	Mutant
	Caught, Missed, FalseAlarm bool
	// Got is the verdict and counts the checker reached.
	Got string
	// MarginsDisagree is where the checker's margins and its counts tell
	// different stories (checker.MarginsDisagree), "" if nowhere.
	MarginsDisagree string
}

// Judge checks a mutant as the runs are checked.
func Judge(m Mutant) Outcome {
	r, err := checker.Check(m.Events, checker.Options{Slack: Slack, Tables: m.Tables, Database: m.Tables != nil, Timeout: time.Minute})
	o := Outcome{Mutant: m}
	if err != nil {
		o.Got = "refused: " + err.Error()
		o.Missed, o.FalseAlarm = !m.Equivalent, m.Equivalent
		return o
	}
	o.Got = r.String()
	o.MarginsDisagree = checker.MarginsDisagree(r.Margins, r.Anomalies)
	switch {
	case m.Equivalent:
		o.FalseAlarm = r.Valid != checker.Valid
	case m.Want == FencedMutex:
		o.Caught = r.Valid == checker.Invalid && fencedIllegal(r)
	default:
		o.Caught = r.Valid == checker.Invalid && r.Anomalies[m.Want] > 0
	}
	o.Missed = !m.Equivalent && !o.Caught
	return o
}

func fencedIllegal(r checker.Result) bool {
	for _, m := range r.Linearizability.Models {
		if m.Model == checker.FencedMutexModel && m.Result == checker.LinearIllegal {
			return true
		}
	}
	return false
}

// Report sums up outcomes.
type Report struct {
	Mutants, Caught, Missed, FalseAlarms int
	Equivalent                           int
	// Disagreeing counts the mutants whose margins and counts disagree.
	Disagreeing int
	// Bad lists the misses, false alarms and disagreements.
	Bad []Outcome
}

// Summarise counts outcomes.
func Summarise(os []Outcome) Report {
	var r Report
	for _, o := range os {
		r.Mutants++
		if o.MarginsDisagree != "" {
			r.Disagreeing++
			if o.Caught || (o.Equivalent && !o.FalseAlarm) {
				r.Bad = append(r.Bad, o)
			}
		}
		switch {
		case o.Equivalent:
			r.Equivalent++
			if o.FalseAlarm {
				r.FalseAlarms++
				r.Bad = append(r.Bad, o)
			}
		case o.Caught:
			r.Caught++
		default:
			r.Missed++
			r.Bad = append(r.Bad, o)
		}
	}
	return r
}

// Line is the report's one line.
func (r Report) Line() string {
	return fmt.Sprintf("mutants %d · caught %d · missed %d · false alarms %d · margins disagree %d", r.Mutants, r.Caught, r.Missed, r.FalseAlarms, r.Disagreeing)
}

// hist is a run being mutated: its events, operations and tables, read
// only; each plant copies what it changes. Its bounds on leases (certEnd,
// expired, mayEnd) are derived here from the history's semantics, not
// taken from the checker, so that a wrong rule there shows as a miss or
// a false alarm here.
type hist struct {
	run    Run
	ops    []history.Op
	grants map[string][]*history.Op // OK acquires by key, by completion
	uses   map[string][]*history.Op // extends and releases by token
	writes []*history.Op            // every write, by invoke
	procs  int                      // a process number none uses
}

func newHist(r Run) *hist {
	h := &hist{run: r, ops: history.BuildOps(r.Events).Ops(), grants: map[string][]*history.Op{}, uses: map[string][]*history.Op{}}
	for i := range h.ops {
		o := &h.ops[i]
		h.procs = max(h.procs, int(o.Process)+1)
		switch o.F {
		case history.Acquire:
			if o.Type == history.OK && o.Token != "" {
				h.grants[o.Key] = append(h.grants[o.Key], o)
			}
		case history.Extend, history.Release:
			h.uses[o.Token] = append(h.uses[o.Token], o)
		case history.Write:
			h.writes = append(h.writes, o)
		}
	}
	for _, gs := range h.grants {
		sort.SliceStable(gs, func(i, j int) bool { return gs[i].DoneT < gs[j].DoneT })
	}
	return h
}

// keys are the keys with grants, sorted.
func (h *hist) keys() []string {
	var ks []string
	for k := range h.grants {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// simple reports whether g's lease has no extends and no renewals the
// harness cannot see: its bounds follow from its acquire and release.
func (h *hist) simple(g *history.Op) bool {
	if g.UnseenRenewals {
		return false
	}
	for _, u := range h.uses[g.Token] {
		if u.F == history.Extend {
			return false
		}
	}
	return true
}

// release is g's first release, or nil.
func (h *hist) release(g *history.Op) *history.Op {
	for _, u := range h.uses[g.Token] {
		if u.F == history.Release && u.InvT >= g.DoneT {
			return u
		}
	}
	return nil
}

var slack = int64(Slack)

// certEnd is when a simple lease was certainly over at the earliest: its
// ttl from its invoke, less slack, or its release's invoke.
func (h *hist) certEnd(g *history.Op) int64 {
	end := g.InvT + g.TTLNs() - slack
	if r := h.release(g); r != nil {
		end = min(end, r.InvT)
	}
	return end
}

// expired is when a simple lease had certainly expired on the server.
func expired(g *history.Op) int64 { return g.DoneT + g.TTLNs() + slack }

// mayEnd is when a lease was certainly over, by its ttl or a release
// that landed; forever for one that is not simple.
func (h *hist) mayEnd(g *history.Op) int64 {
	if !h.simple(g) {
		return history.Forever
	}
	end := expired(g)
	if r := h.release(g); r != nil && r.Type == history.OK {
		end = min(end, r.DoneT)
	}
	return end
}

// spread picks at most perKind of n candidates: the first, the middle,
// the last.
func spread[T any](cands []T) []T {
	if len(cands) <= perKind {
		return cands
	}
	return []T{cands[0], cands[len(cands)/2], cands[len(cands)-1]}
}

// writesIdle reports whether no write of key is in flight at t.
func (h *hist) writesIdle(key string, t int64) bool {
	for _, w := range h.writes {
		if w.Key == key && w.InvT <= t && (!w.Finished() || w.DoneT >= t) {
			return false
		}
	}
	return true
}

// edit is a copy of a history under change.
type edit struct {
	h      *hist
	events []history.Event
	drop   map[int]bool
	tables *history.Tables
}

func (h *hist) edit() *edit {
	e := &edit{h: h, events: slices.Clone(h.run.Events), drop: map[int]bool{}}
	if t := h.run.Tables; t != nil {
		c := *t
		c.Ledger, c.Inventory, c.Done = slices.Clone(t.Ledger), slices.Clone(t.Inventory), slices.Clone(t.Done)
		e.tables = &c
	}
	return e
}

// op adds an operation of a fresh process of client slot, invoked at inv
// and completed (type outcome) at done.
func (e *edit) op(client int, f, key, token string, inv, done int64, outcome string, set func(inv, done *history.Event)) {
	p := history.Process(e.h.procs)
	e.h.procs++
	in := history.Event{Time: inv, Type: history.Invoke, Process: p, Client: client, F: f, Key: key, Token: token}
	out := in
	out.Time, out.Type = done, outcome
	if set != nil {
		set(&in, &out)
	}
	e.events = append(e.events, in, out)
}

// done is the history, sorted by time (ties in the order they came) and
// numbered, without the dropped events.
func (e *edit) done(where string) planted {
	var out []history.Event
	for i, ev := range e.events {
		if !e.drop[i] {
			out = append(out, ev)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time < out[j].Time })
	for i := range out {
		out[i].Index = i
	}
	return planted{where: where, events: out, tables: e.tables}
}

// shiftCounter adds d to the value read and stored by every write of key
// whose invoke comes after position pos (the counter's later state).
func (e *edit) shiftCounter(key string, pos int, d int64) {
	for _, w := range e.h.writes {
		if w.Key != key || int(w.Inv) <= pos {
			continue
		}
		if v := e.events[w.Inv].Value; v != nil {
			e.events[w.Inv].Value = history.Int64(*v + d)
		}
		if w.Finished() {
			if v := e.events[w.Done].Value; v != nil {
				e.events[w.Done].Value = history.Int64(*v + d)
			}
		}
	}
}

// shiftLedger moves the quantities of every ledger row from index i on by
// d, and the final stock with them.
func (e *edit) shiftLedger(i int, d int64) {
	for k := i; k < len(e.tables.Ledger); k++ {
		e.tables.Ledger[k].QuantityBefore += d
		e.tables.Ledger[k].QuantityAfter += d
	}
	if len(e.tables.Inventory) > 0 {
		e.tables.Inventory[0].Quantity += d
	}
}

// rowOf is the ledger index of write w: the database's rows of a token are
// its writes that were not refused, in order.
func (e *edit) rowOf(w *history.Op) int {
	n := 0
	for _, o := range e.h.writes {
		if o == w {
			break
		}
		if o.Token == w.Token && o.Type != history.Fail {
			n++
		}
	}
	for i, r := range e.tables.Ledger {
		if r.Token == w.Token {
			if n == 0 {
				return i
			}
			n--
		}
	}
	return -1
}

// inventory reports whether the run's database is the inventory (the
// plants that touch rows know only its ledger).
func (h *hist) inventory() bool {
	return h.run.Tables != nil && h.run.Tables.Audited(history.AuditLedger)
}

// countersOK reports whether the resource is one the plants can keep
// consistent: the in-memory counter or the inventory.
func (h *hist) countersOK() bool { return h.run.Tables == nil || h.inventory() }

func secs(t int64) string { return checker.Secs(t) }
