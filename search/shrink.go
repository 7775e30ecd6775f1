package search

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lockharness/lockharness/faults"
	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/internal/options"
	"github.com/lockharness/lockharness/reports"
	"github.com/lockharness/lockharness/runner"
	"github.com/lockharness/lockharness/scenario"
)

// Shrinking searches, from a run that found an anomaly, for a smaller
// scenario that still finds it in every one of k tries: fewer faults,
// shorter fault windows, fewer clients, a shorter time limit. Each
// candidate follows a schedule (Spec.Schedule), the recorded one with a
// cut made, and is kept only when all k tries find the anomaly; the first
// try that misses rejects it. The cuts are tried largest first:
//
//  1. stop the time limit a little after the anomaly was evident, and
//     drop the faults that start after it;
//  2. drop each fault, the last first;
//  3. move the faults earlier, the first a second after the clients
//     start, and the time limit with them;
//  4. fewer clients: half, then one fewer at a time;
//  5. halve each fault window (its for option), down to a tenth of a
//     second;
//  6. stop the time limit a little after the last fault's window.
//
// Each pass runs until no cut of its kind is kept; the search stops when
// the budget would be passed by another try.

// ShrinkOptions bound and carry out a shrink.
type ShrinkOptions struct {
	// Anomaly is the kind the scenario must keep finding.
	Anomaly string
	// Tries is k: how many runs of a candidate must all find it.
	Tries int
	// Budget bounds the whole search; a try is not started when the
	// last one's length would pass it.
	Budget time.Duration
	// Try runs a candidate once.
	Try func(ctx context.Context, spec scenario.Spec) (runner.Outcome, error)
	// Log reports progress.
	Log func(format string, args ...any)
}

// ShrinkStep is one candidate tried: the cut it made and how it went.
type ShrinkStep struct {
	Cut string `json:"cut"`
	// Kept: every try found the anomaly.
	Kept bool `json:"kept"`
	// Found is what each try found, in order ("invalid: double-grant 1").
	Found   []string `json:"found"`
	Seconds float64  `json:"seconds"`
}

// Shrunk is a shrink's result: the minimal spec found, the runs of it that
// found the anomaly, and every candidate tried.
type Shrunk struct {
	From    scenario.Spec `json:"from"`
	Minimal scenario.Spec `json:"minimal"`
	Runs    []string      `json:"runs"`
	Steps   []ShrinkStep  `json:"steps"`
	Seconds float64       `json:"seconds"`
	// OutOfBudget: the search stopped at its budget, not because no cut
	// was left.
	OutOfBudget bool `json:"out_of_budget,omitempty"`
	// HarnessError stopped the search: a try the harness could not make
	// says nothing of the candidate, and the next would likely fail too.
	HarnessError string `json:"harness_error,omitempty"`
}

// ShrinkFrom is the spec a shrink of a recorded run starts from: the
// replay's (ReplaySpec). It refuses a run that found nothing, saying why,
// and one that did not find the kind asked for.
func (r Recorded) ShrinkFrom(kind string) (scenario.Spec, string, error) {
	kinds := r.Kinds()
	switch {
	case len(kinds) == 0:
		return scenario.Spec{}, "", fmt.Errorf("%s found no anomaly (verdict %s), so there is nothing to shrink: shrink starts from an invalid run", r.Dir, r.Results.Valid)
	case kind == "":
		kind = kinds[0]
	case !slices.Contains(kinds, kind):
		return scenario.Spec{}, "", fmt.Errorf("%s found %s, not %s (valid: %s)", r.Dir, strings.Join(kinds, ", "), kind, strings.Join(kinds, ", "))
	}
	if len(r.Followed.Faults) == 0 {
		return scenario.Spec{}, "", fmt.Errorf("%s found %s without a fault, so there is no schedule to shrink", r.Dir, kind)
	}
	s, err := r.ReplaySpec()
	s.Name = strings.TrimSuffix(s.Name, ReplaySuffix) + ShrinkSuffix
	return s, kind, err
}

// ShrinkSuffix ends the names of a shrink's runs.
const ShrinkSuffix = "-shrink"

// Shrink searches from spec (which follows a schedule) for the smallest
// scenario whose every try finds opt.Anomaly; evident is when the
// anomaly was evident in the run spec came from, from the start of its
// schedule.
func Shrink(ctx context.Context, spec scenario.Spec, evident time.Duration, opt ShrinkOptions) Shrunk {
	s := &shrinker{opt: opt, start: time.Now(), best: spec, out: Shrunk{From: spec}}
	ttl := spec.TTL.D()
	// 1. The time limit just past the anomaly, without the faults after it.
	if cut := evident + max(ttl, time.Second); cut < spec.TimeLimit.D() {
		c := spec
		c.TimeLimit = scenario.Duration(cut.Round(100 * time.Millisecond))
		c.Schedule = slices.DeleteFunc(slices.Clone(spec.Schedule), func(st scenario.Step) bool { return st.At.D() > evident })
		if len(c.Schedule) == 0 {
			c.Nemesis = faults.None // evident before any fault: try none
		}
		s.try(ctx, c, fmt.Sprintf("time limit %v, the faults after %.1fs dropped (%d of %d left)", c.TimeLimit, evident.Seconds(), len(c.Schedule), len(spec.Schedule)))
	}
	// 2. Fewer faults, the last first: a later fault is more often one
	// the anomaly did not need.
	for i := len(s.best.Schedule) - 1; i >= 0 && len(s.best.Schedule) > 1; i-- {
		c := s.best
		c.Schedule = slices.Delete(slices.Clone(c.Schedule), i, i+1)
		s.try(ctx, c, fmt.Sprintf("without fault %d (%s)", i+1, s.best.Schedule[i].Fault))
	}
	// 3. The faults earlier, a second after the clients start: every
	// later try is that much shorter.
	if first := firstStart(s.best.Schedule); first > 2*time.Second {
		shift := (first - time.Second).Round(100 * time.Millisecond)
		c := s.best
		c.Schedule = slices.Clone(c.Schedule)
		for i := range c.Schedule {
			c.Schedule[i].At -= scenario.Duration(shift)
		}
		c.TimeLimit -= scenario.Duration(shift)
		s.try(ctx, c, fmt.Sprintf("the faults %v earlier (time limit %v)", shift, c.TimeLimit))
	}
	// 4. Fewer clients: half at once, then one fewer at a time.
	if n := s.best.Clients; n > 2 {
		s.tryClients(ctx, max(2, n/2))
	}
	for n := s.best.Clients - 1; n >= 2; n-- {
		if !s.tryClients(ctx, n) {
			break
		}
	}
	// 5. Shorter windows.
	for i := range s.best.Schedule {
		for {
			st := s.best.Schedule[i]
			shorter, ok := withOption(st.Fault, "for", func(v string) (string, bool) {
				d, err := time.ParseDuration(v)
				if err != nil || d/2 < 100*time.Millisecond {
					return "", false
				}
				return (d / 2).Round(time.Millisecond).String(), true
			})
			if !ok {
				break
			}
			c := s.best
			c.Schedule = slices.Clone(c.Schedule)
			c.Schedule[i].Fault = shorter
			if !s.try(ctx, c, fmt.Sprintf("fault %d for half as long (%s)", i+1, shorter)) {
				break
			}
		}
	}
	// 6. The time limit just past the last fault.
	if end := scheduleEnd(s.best.Schedule) + max(ttl, time.Second); end < s.best.TimeLimit.D() {
		c := s.best
		c.TimeLimit = scenario.Duration(end.Round(100 * time.Millisecond))
		s.try(ctx, c, fmt.Sprintf("time limit %v", c.TimeLimit))
	}
	s.out.Minimal, s.out.Seconds = s.best, time.Since(s.start).Seconds()
	return s.out
}

type shrinker struct {
	opt   ShrinkOptions
	start time.Time
	best  scenario.Spec
	// last is how long the last try took: the next is not started if it
	// would pass the budget.
	last time.Duration
	out  Shrunk
}

// try runs a candidate up to k times and keeps it when every try found
// the anomaly.
func (s *shrinker) try(ctx context.Context, c scenario.Spec, cut string) bool {
	if s.out.OutOfBudget || s.out.HarnessError != "" || ctx.Err() != nil {
		return false
	}
	step := ShrinkStep{Cut: cut}
	began := time.Now()
	var runs []string
	kept := true
	for i := range s.opt.Tries {
		if time.Since(s.start)+s.last > s.opt.Budget {
			s.out.OutOfBudget = true
			s.opt.Log("  budget %v reached after %.0fs: stopping the search", s.opt.Budget, time.Since(s.start).Seconds())
			return false
		}
		t := time.Now()
		out, err := s.opt.Try(ctx, c)
		s.last = time.Since(t)
		if ctx.Err() != nil {
			return false
		}
		found := "harness error: " + fmt.Sprint(err)
		if err == nil {
			found = Found(out.Results)
		}
		step.Found = append(step.Found, found)
		if err != nil {
			s.out.HarnessError = err.Error()
			s.opt.Log("  %-60s try %d of %d: %s: stopping the search", cut, i+1, s.opt.Tries, found)
			kept = false
			break
		}
		if !Reproduces(out.Results, []string{s.opt.Anomaly}) {
			kept = false
			s.opt.Log("  %-60s try %d of %d: %s: rejected", cut, i+1, s.opt.Tries, found)
			break
		}
		runs = append(runs, out.Dir)
	}
	step.Kept, step.Seconds = kept, time.Since(began).Seconds()
	s.out.Steps = append(s.out.Steps, step)
	if kept {
		s.best, s.out.Runs = c, runs
		s.opt.Log("  %-60s %d of %d found %s: kept (%d faults, %d clients, %v)", cut, s.opt.Tries, s.opt.Tries, s.opt.Anomaly, len(c.Schedule), c.Clients, c.TimeLimit)
	}
	return kept
}

// tryClients tries the best spec with n clients, its faults' client
// slots kept to those n.
func (s *shrinker) tryClients(ctx context.Context, n int) bool {
	c := s.best
	c.Clients = n
	c.Schedule = slices.Clone(c.Schedule)
	for i, st := range c.Schedule {
		c.Schedule[i].Fault, _ = withOption(st.Fault, "clients", func(v string) (string, bool) {
			var kept []int
			for _, item := range strings.Split(v, "/") {
				if slot, err := strconv.Atoi(item); err == nil && slot < n {
					kept = append(kept, slot)
				}
			}
			if len(kept) == 0 {
				kept = []int{n - 1}
			}
			if len(kept) >= n && n > 1 {
				kept = kept[:n-1] // never every client: someClients' rule
			}
			return options.JoinSlots(kept), true
		})
	}
	return s.try(ctx, c, fmt.Sprintf("%d clients", n))
}

// withOption is a step's fault with option name's value changed by
// change; false when the fault has no such option or change declines.
func withOption(fault, name string, change func(string) (string, bool)) (string, bool) {
	in, err := faults.ParseOne(fault)
	if err != nil {
		return fault, false
	}
	v, ok := in.Options[name]
	if !ok {
		return fault, false
	}
	nv, ok := change(v)
	if !ok {
		return fault, false
	}
	return faults.Nemesis{{in}}.WithOption(in.Name, name, nv).String(), true
}

// firstStart is when a schedule's first fault starts (0 for none).
func firstStart(steps []scenario.Step) time.Duration {
	if len(steps) == 0 {
		return 0
	}
	return slices.MinFunc(steps, func(a, b scenario.Step) int { return cmp.Compare(a.At, b.At) }).At.D()
}

// scheduleEnd is when the last fault window of a schedule ends, as far as
// its for options tell (a fault without one counts from its start).
func scheduleEnd(steps []scenario.Step) time.Duration {
	var end time.Duration
	for _, st := range steps {
		at := st.At.D()
		if st.AfterGrant != nil {
			at += st.AfterGrant.D()
		}
		if st.AfterPromotion != nil {
			at += st.AfterPromotion.D()
		}
		if in, err := faults.ParseOne(st.Fault); err == nil {
			at += in.Options.Duration("for", func() time.Duration { return 0 })
		}
		end = max(end, at)
	}
	return end
}

// Evident is when a run's first finding of kind was evident, its last
// event, from the start of the run's schedule; false when the run has no
// such finding.
func (r Recorded) Evident(kind string) (time.Duration, bool) {
	events, err := history.ReadFile(history.InDir(r.Dir))
	if err != nil {
		return 0, false
	}
	return evidentIn(events, r.Results, kind, r.Followed.From)
}

func evidentIn(events []history.Event, res reports.Results, kind string, from float64) (time.Duration, bool) {
	for _, f := range res.Checker.Findings {
		if f.Anomaly != kind || len(f.Events) == 0 {
			continue
		}
		var last int64
		for _, i := range f.Events {
			if i >= 0 && i < len(events) {
				last = max(last, events[i].Time)
			}
		}
		return max(time.Duration(last)-time.Duration(from*1e9), 0), true
	}
	return 0, false
}
