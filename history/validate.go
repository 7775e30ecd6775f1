package history

import "fmt"

// Reasons a fail completion gives (the "reason" field).
const (
	// ReasonBusy: an acquire found the lock held by someone else.
	ReasonBusy = "busy"
	// ReasonNotHeld: a release or extend found the lease gone or someone
	// else's.
	ReasonNotHeld = "not-held"
	// ReasonRejected: the command was refused for a reason that says
	// nothing about the lock's state (READONLY, NOAUTH, LOADING, a lost
	// quorum), or, for a write, the resource refused it (fencing).
	ReasonRejected = "rejected"
)

// Reasons lists the valid reasons.
var Reasons = []string{ReasonBusy, ReasonNotHeld, ReasonRejected}

// Validator checks a history one event at a time against what
// docs/history.md promises: each event well formed, indices counting up
// from 0, time never going backwards, and every completion closing its
// process's one outstanding invoke of the same kind.
type Validator struct {
	n       int
	last    int64
	pairing pairing
}

// NewValidator starts checking a history from its first event.
func NewValidator() *Validator { return &Validator{pairing: newPairing()} }

// Next checks the next event.
func (v *Validator) Next(e Event) error { return v.next(&e) }

func (v *Validator) next(e *Event) error {
	pos := v.n
	if err := v.order(e); err != nil {
		return err
	}
	if e.IsNemesis() {
		return nil
	}
	if e.Type == Invoke {
		return v.pairing.invoke(e, pos)
	}
	_, err := v.pairing.complete(e)
	return err
}

// order checks e on its own and against the event before it: all but
// the pairing.
func (v *Validator) order(e *Event) error {
	pos := v.n
	v.n++
	if err := e.validate(); err != nil {
		return err
	}
	if e.Index != pos {
		return fmt.Errorf("index %d out of order: event %d of the history must have index %d", e.Index, pos+1, pos)
	}
	if e.Time < v.last {
		return fmt.Errorf("time %d goes backwards: the event before was at %d", e.Time, v.last)
	}
	v.last = e.Time
	return nil
}

// Validate checks a whole history; an error names the event's index.
func Validate(events []Event) error {
	v := NewValidator()
	for i := range events {
		if err := v.next(&events[i]); err != nil {
			return fmt.Errorf("event %d: %w", events[i].Index, err)
		}
	}
	return nil
}

// Bounds that keep every sum of times and lease lengths far from
// overflowing: about 146 years of history, leases of about 139 years.
const (
	MaxTime    int64 = 1 << 62
	MaxLeaseMs int64 = 1 << 42
)

// validate checks what one event must be on its own.
func (e *Event) validate() error {
	if e.Time < 0 {
		return fmt.Errorf("time %d is negative", e.Time)
	}
	if e.Time >= MaxTime {
		return fmt.Errorf("time %d is beyond %d ns (146 years)", e.Time, MaxTime)
	}
	if e.Process == Nemesis {
		if e.Phase != Start && e.Phase != End && e.Phase != Instant {
			return fmt.Errorf("nemesis event has phase %q, want %q, %q or %q", e.Phase, Start, End, Instant)
		}
		if e.F == "" {
			return fmt.Errorf("nemesis event has no fault name in \"f\"")
		}
		for _, o := range e.Down {
			switch {
			case e.Phase != End:
				return fmt.Errorf("down belongs to a fault's end, not to its %s", e.Phase)
			case o.Node == "" || o.Of < 1:
				return fmt.Errorf("down: an outage needs a node and of >= 1, got %+v", o)
			case o.From < 0 || o.From > o.Until || o.Until > e.Time:
				return fmt.Errorf("down: outage of %s from %d until %d is not a span before its fault's end at %d", o.Node, o.From, o.Until, e.Time)
			}
		}
		return nil
	}
	switch e.Type {
	case Invoke, OK, Fail, Info:
	default:
		return fmt.Errorf("type %q is not one of invoke, ok, fail, info", e.Type)
	}
	switch e.F {
	case Acquire, Extend, Release, Write, Read, Lost:
	default:
		return fmt.Errorf("f %q is not one of acquire, extend, release, write, read, lost", e.F)
	}
	if e.Phase != "" || e.Target != "" {
		return fmt.Errorf("phase and target belong to nemesis events, not to process %s's %s", e.Process, e.F)
	}
	if e.TTLMs < 0 {
		return fmt.Errorf("ttl_ms %d is negative", e.TTLMs)
	}
	if e.ValidMs < 0 {
		return fmt.Errorf("valid_ms %d is negative", e.ValidMs)
	}
	if e.TTLMs >= MaxLeaseMs || e.ValidMs >= MaxLeaseMs {
		return fmt.Errorf("ttl_ms %d or valid_ms %d is beyond %d ms (139 years)", e.TTLMs, e.ValidMs, MaxLeaseMs)
	}
	if e.Type == Invoke && IsLockOp(e.F) {
		switch {
		case e.Key == "":
			return fmt.Errorf("%s invoke has no key", e.F)
		case e.Token == "":
			return fmt.Errorf("%s invoke has no token", e.F)
		}
	}
	if e.Reason != "" {
		if e.Type != Fail {
			return fmt.Errorf("reason %q on a %s event: only fail completions carry a reason", e.Reason, e.Type)
		}
		switch e.Reason {
		case ReasonBusy, ReasonNotHeld, ReasonRejected:
		default:
			return fmt.Errorf("reason %q is not one of busy, not-held, rejected", e.Reason)
		}
	}
	return nil
}
