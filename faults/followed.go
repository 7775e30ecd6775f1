package faults

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/lockharness/lockharness/history"
)

// FollowedFile is where a run keeps the schedule it followed.
const FollowedFile = "schedule.json"

// Followed is the fault schedule a run actually followed, as its history
// recorded it: every fault window, with its target and its times relative
// to the run, and for a fault that waited for a grant (just after a grant,
// at=grant) the grant it followed and how long after it the fault began;
// then what the harness observed (promotions). It is the record of the
// schedule a replay sets out to repeat.
type Followed struct {
	Nemesis string `json:"nemesis"`
	Seed    int64  `json:"seed"`
	// From is when the schedule began, in seconds from the start of the
	// run: a replay counts its faults' times from there.
	From     float64         `json:"from_s"`
	Faults   []FollowedFault `json:"faults"`
	Observed []Observed      `json:"observed,omitempty"`
}

// FollowedFault is one fault window. End is nil for one never healed.
type FollowedFault struct {
	Fault  string   `json:"fault"`
	Target string   `json:"target,omitempty"`
	Start  float64  `json:"start_s"`
	End    *float64 `json:"end_s"`
	// Options are the fault's options as it ran, those it drew included.
	Options    string `json:"options,omitempty"`
	StartEvent int    `json:"start_event"`
	EndEvent   *int   `json:"end_event"`
	After      *Grant `json:"after,omitempty"`
	// AfterPromotion is the promotion the fault waited for.
	AfterPromotion *Promotion `json:"after_promotion,omitempty"`
}

// Promotion is the promotion a fault waited for: the node, when it came,
// how long after it the fault began, and from when the fault waited.
type Promotion struct {
	Node   string  `json:"node"`
	At     float64 `json:"at_s"`
	Delay  float64 `json:"delay_s"`
	Waited float64 `json:"waited_s"`
}

// Grant is the grant a fault waited for: whose, its completion event and
// time, and how long after it the fault began.
type Grant struct {
	Client int     `json:"client"`
	Event  int     `json:"event"`
	At     float64 `json:"at_s"`
	Delay  float64 `json:"delay_s"`
}

// Observed is something the harness saw happen rather than caused.
type Observed struct {
	What   string  `json:"f"`
	Target string  `json:"target,omitempty"`
	At     float64 `json:"at_s"`
	Event  int     `json:"event"`
}

// FollowedOf reads the schedule a run followed out of its history; from is
// when the schedule began.
func FollowedOf(events []history.Event, nemesis string, seed int64, from time.Duration) Followed {
	f := Followed{Nemesis: nemesis, Seed: seed, From: secs(int64(from)), Faults: []FollowedFault{}}
	for _, w := range history.FaultWindows(events) {
		e := &events[w.Start]
		ff := FollowedFault{Fault: e.F, Target: e.Subject(), Start: secs(e.Time), Options: e.Options, StartEvent: e.Index}
		if w.End >= 0 {
			end := &events[w.End]
			at, idx := secs(end.Time), end.Index
			ff.End, ff.EndEvent = &at, &idx
		}
		if a := e.Facts.AfterGrant(); a != nil {
			ff.After = lastGrant(events[:w.Start], a.Client, e.Time)
		}
		if p := e.Facts; p != nil && p.AfterPromotion != nil {
			ff.AfterPromotion = promotionBefore(events[:w.Start], p.AfterPromotion)
		}
		f.Faults = append(f.Faults, ff)
	}
	for i := range events {
		if e := &events[i]; e.IsNemesis() && e.Phase == history.Instant && e.F != history.GrantSeen {
			f.Observed = append(f.Observed, Observed{What: e.F, Target: e.Subject(), At: secs(e.Time), Event: e.Index})
		}
	}
	return f
}

// secs is a history time in seconds, to the microsecond.
func secs(t int64) float64 { return math.Round(time.Duration(t).Seconds()*1e6) / 1e6 }

// lastGrant is client's last granted acquire among events, before at.
func lastGrant(events []history.Event, client int, at int64) *Grant {
	for i := len(events) - 1; i >= 0; i-- {
		e := &events[i]
		if !e.IsNemesis() && e.Client == client && e.F == history.Acquire && e.Type == history.OK {
			return &Grant{Client: client, Event: e.Index, At: secs(e.Time), Delay: secs(at - e.Time)}
		}
	}
	return nil
}

// promotionBefore is the promotion a fault waited for, as the last one of
// its node among events.
func promotionBefore(events []history.Event, ap *history.AfterPromotion) *Promotion {
	p := &Promotion{Node: ap.Node, Delay: secs(ap.DelayNs), Waited: secs(ap.WaitedNs)}
	for i := len(events) - 1; i >= 0; i-- {
		if node, ok := events[i].Facts.Promoted(); ok && node == ap.Node {
			p.At = secs(events[i].Time)
			break
		}
	}
	return p
}

// Steps is the schedule as steps to follow again: every fault with the
// options it ran with, at its time from the start of the schedule, or, for
// one that waited for a grant, that long after a grant at the grant's time.
// Faults the harness no longer knows, or options it no longer takes, are
// errors naming the fault.
func (f Followed) Steps() ([]Step, error) {
	var steps []Step
	for i, ff := range f.Faults {
		text := ff.Fault
		if ff.Options != "" {
			text += ":" + ff.Options
		}
		in, err := ParseOne(text)
		if err != nil {
			return nil, fmt.Errorf("fault %d of the schedule: %w", i+1, err)
		}
		if !finiteTime(ff.Start) || ff.After != nil && (!finiteTime(ff.After.At) || !finiteTime(ff.After.Delay)) {
			return nil, fmt.Errorf("fault %d of the schedule (%s): its times are not times of a run: start %v, after %+v", i+1, ff.Fault, ff.Start, ff.After)
		}
		st := Step{Injection: in, At: seconds(ff.Start - f.From)}
		if ff.After != nil {
			st.At, st.AfterGrant, st.Delay = seconds(ff.After.At-f.From), true, seconds(ff.After.Delay)
		}
		if p := ff.AfterPromotion; p != nil {
			if !finiteTime(p.Waited) || !finiteTime(p.Delay) {
				return nil, fmt.Errorf("fault %d of the schedule (%s): its times are not times of a run: after %+v", i+1, ff.Fault, p)
			}
			st.At, st.AfterPromotion, st.Delay = seconds(p.Waited-f.From), true, seconds(p.Delay)
		}
		st.At = max(st.At, 0)
		steps = append(steps, st)
	}
	return steps, nil
}

// finiteTime is a time a run can have: not negative, a day at most.
func finiteTime(s float64) bool { return s >= 0 && s <= 86400 }

func seconds(s float64) time.Duration { return time.Duration(math.Round(s * 1e9)) }

// ParseOne reads one fault with its options (kill-node:delay=4s), as a
// step of a schedule holds it.
func ParseOne(text string) (Injection, error) {
	n, err := Parse(text)
	switch {
	case err != nil:
		return Injection{}, err
	case len(n) == 0:
		return Injection{}, fmt.Errorf("%q: want a fault, not none", text)
	case len(n) != 1 || len(n[0]) != 1:
		return Injection{}, fmt.Errorf("%q: want one fault, not a list", text)
	}
	return n[0][0], nil
}

// ErrOldSchedule is a schedule.json from before schedules could be
// followed again.
var ErrOldSchedule = errors.New("written by a harness that did not yet record where its times count from or what each fault drew, so it cannot be followed again")

// ReadFollowed reads the schedule a run directory keeps.
func ReadFollowed(dir string) (Followed, error) {
	b, err := os.ReadFile(filepath.Join(dir, FollowedFile))
	if err != nil {
		return Followed{}, err
	}
	// From as a pointer, to tell a schedule that has none.
	type plain Followed
	var f struct {
		plain
		From *float64 `json:"from_s"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return Followed{}, fmt.Errorf("%s: %w", filepath.Join(dir, FollowedFile), err)
	}
	if f.From == nil {
		// Written before schedules kept their origin and options: its
		// times would be off by the topology's start and nothing pinned.
		return Followed{}, fmt.Errorf("%s: %w", filepath.Join(dir, FollowedFile), ErrOldSchedule)
	}
	out := Followed(f.plain)
	out.From = *f.From
	return out, nil
}

// WriteFollowed writes the schedule into a run directory.
func WriteFollowed(dir string, f Followed) error {
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, FollowedFile), append(b, '\n'), 0o644)
}
