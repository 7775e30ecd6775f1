// Package models holds porcupine models of the locks under test: the
// lease-lock model, a lock with expiry (DESIGN.md, "The lease-lock model"),
// and the fenced-mutex model, which checks that fencing tokens grow with
// every grant and that only the holder releases. Operations turns a
// history into porcupine operations; both models partition them by key
// (see Partitioning).
//
// # The lease-lock model
//
// Every Input carries its operation's invoke and completion times (Return
// is Forever for an unknown outcome). The state holds the holder's token and
// bounds on its lease: the lease started (or was last extended) at some
// instant in [lo, hi], the invoke and completion of the operation that
// started it, so it ends in [From, Until] = [lo + ttl, hi + ttl]; the state
// keeps the end bounds because an extend may change the ttl. For an
// operation o and slack s:
//
//   - the lease may have expired by o when the key is free or
//     From − s ≤ o.Return (lo + ttl − slack ≤ op.return);
//   - the lease may still be live at o when there is a holder and
//     Until + s > o.Invoke (hi + ttl + slack > op.invoke).
//
// A granted acquire needs a lease that may have expired and starts one in
// its own [invoke, return]; "busy" needs one that may still be live. A
// release or extend that succeeds must be the holder's while its lease may
// be live: a release frees the lock, an extend restarts the lease in its own
// [invoke, return] with its own ttl, shorter or longer. One that fails
// definitely is legal when it is not the holder's or the lease may have
// expired: a failed compare-and-delete says the key was not ours at that
// instant. A failure that says nothing about the lock (Output.Rejected:
// READONLY, LOADING, ...) is always legal and changes nothing.
//
// An operation of unknown outcome (info) took effect at some instant after
// its invoke, or never; its completion is +∞. Porcupine would try every
// later position for it, which is exponential when the search backtracks,
// so the state stands for its landing later instead, and the partition pins
// such an operation at its invoke:
//
//   - a release by the holder sets Releasing: it may land at any later
//     instant, which excuses the next grant (and the holder's own failures)
//     while the lease is live; exact;
//   - an extend by the holder sets Extending: the lease may last
//     indefinitely, and may end as early as the extend's invoke plus its
//     ttl, even after a later extend; exact up to that union;
//   - an acquire whose token nothing else uses (Input.Anonymous) sets Lost:
//     from then on an unseen holder may explain a "busy" answer. It never
//     excuses a grant, a release or an extend, so it hides no double grant
//     and no foreign release; it only lets a later wrong "busy" pass.
//
// Any other acquire of unknown outcome forks: it never landed, or it landed
// once the lease it found may have expired, and not before (NotBefore).
//
// Before each step, a lease that certainly expired before the operation was
// invoked (Until + s ≤ o.Invoke) becomes the free state, and a bound already
// passed is forgotten, so that branches meet again in equal states, which
// porcupine merges.
//
// # Why a correct lease server is never rejected
//
// Let every operation take effect at its true instant t ∈ [invoke, return]
// (at some t ≥ invoke, or never, for info), and let the server's TTL clock
// run within s of the harness's over a lease. Replay the operations in the
// order of their instants, a linearization porcupine will try. Invariant:
// the state holds the server's key, or a lease that expired before the
// current instant, with From ≤ its true end + s and Until ≥ its true end − s.
// A grant at t finds the key absent, so the old lease ended by t: From − s ≤
// t ≤ return. "Busy", or a holder's success, at t finds the lease live:
// invoke ≤ t < true end ≤ Until + s. The rewrites before a step only use
// invoke ≤ t, and t only grows. The blind spot is the uncertainty [invoke,
// return] of each instant: keep the ttl much longer than an operation's
// latency.
package models

import (
	"context"
	"math"
	"time"

	"github.com/anishathalye/porcupine"
)

// expirable marks a lease lower bound that is known to be past for every
// later operation: the lease may have expired whenever anything happens.
const expirable int64 = math.MinInt64

// GhostToken is the token of the stand-in that begins a segment when
// acquires of unknown outcome whose tokens nothing else uses came before it
// (see Partitioning): it sets Lease.Lost, as they would have.
const GhostToken = "\x00earlier unknown acquire"

// Lease is the lease-lock model's state. The zero value is the free lock.
type Lease struct {
	Held   bool
	Holder string
	// From and Until bound when the lease ends, before slack: its start
	// lies in [Lo, Hi], so it ends in [Lo + ttl, Hi + ttl]. From is
	// math.MinInt64 once every later operation may find it over; Until is
	// Forever when it may last indefinitely (no expiry, or an operation of
	// unknown outcome). A lease without expiry has both Forever.
	From, Until int64
	// Extending: the holder's extend of unknown outcome may still land,
	// and the lease may then end as early as ExtendFrom.
	Extending  bool
	ExtendFrom int64
	// Releasing: the holder's release of unknown outcome may still land.
	Releasing bool
	// Lost: an acquire of unknown outcome, whose token nothing else uses,
	// may still land; its lease may be why the lock is busy.
	Lost bool
	// NotBefore: this lease, from an acquire of unknown outcome that
	// landed once the lease before it may have expired, cannot have begun
	// earlier, so no operation that returned earlier can follow it.
	NotBefore int64
}

// leaseModel is the lease-lock model with its slack, and how long past its
// TTL the lock service may keep a lease (outlive: etcd revokes expired
// leases in a loop, and a new leader gives every lease its TTL again),
// which only the bound on when a lease may still be live takes.
type leaseModel struct{ slack, outlive int64 }

// LeaseLock is the lease-lock model, slack absorbing clock-rate differences
// between the harness and the servers. It partitions a history by key and
// cuts each key's operations into segments that porcupine can check
// independently (see Partitioning).
func LeaseLock(slack time.Duration) porcupine.Model {
	return LeaseLockPartitioned(slack, Partitioning{})
}

// LeaseLockPartitioned is LeaseLock with a chosen partitioning.
func LeaseLockPartitioned(slack time.Duration, p Partitioning) porcupine.Model {
	return LeaseLockOutliving(slack, 0, p)
}

// LeaseLockOutliving is LeaseLockPartitioned for a lock service that may
// keep a lease up to outlive past its TTL: a lease may still be live until
// its bound plus outlive, and is certainly live no longer than before.
func LeaseLockOutliving(slack, outlive time.Duration, p Partitioning) porcupine.Model {
	m := leaseModel{slack: max(int64(slack), 0), outlive: max(int64(outlive), 0)}
	nm := porcupine.NondeterministicModel{
		Partition: segmenter{slack: m.slack + m.outlive, p: p}.partition,
		Init:      func() []interface{} { return []interface{}{Lease{}} },
		Step: func(state, input, output interface{}) []interface{} {
			next, n := m.step(state.(Lease), input.(Input), output.(Output))
			return boxLease(state, next[:n])
		},
		StepContext: func(_ context.Context, state, input, output interface{}) []interface{} {
			next, n := m.step(state.(Lease), input.(Input), output.(Output))
			return boxLease(state, next[:n])
		},
		Equal:             func(a, b interface{}) bool { return a.(Lease) == b.(Lease) },
		Hash:              func(s interface{}) uint64 { return s.(Lease).hash() },
		DescribeOperation: describeOperation,
		DescribeState:     func(s interface{}) string { return s.(Lease).String() },
	}
	return nm.ToModel()
}

// end is when a lease started at t with ttl ends; Forever without expiry.
func end(t, ttl int64) int64 {
	if ttl == Forever || t == Forever {
		return Forever
	}
	return t + ttl
}

// step returns every state the lock can be in after the operation, none if
// the operation is illegal in state st. It never modifies anything.
func (m leaseModel) step(st Lease, in Input, out Output) ([2]Lease, int) {
	st = m.normalize(st, in.Invoke)
	if st.NotBefore > in.Return {
		return [2]Lease{}, 0
	}
	free := Lease{Lost: st.Lost}
	switch in.Kind {
	case Acquire:
		switch out.Outcome {
		case OK:
			if !m.mayHaveExpired(st, in.Return) && !st.Releasing {
				return [2]Lease{}, 0
			}
			return [2]Lease{{Held: true, Holder: in.Token, From: end(in.Invoke, in.TTL), Until: end(in.Return, in.TTL), Lost: st.Lost}}, 1
		case Fail:
			if out.Rejected || st.Lost || m.mayBeLive(st, in.Invoke) {
				return [2]Lease{st}, 1
			}
			return [2]Lease{}, 0
		default:
			if in.Anonymous {
				st.Lost = true
				return [2]Lease{st}, 1
			}
			// It lands at some instant after its invoke, once the lease
			// it finds may have expired, or never.
			if !m.mayHaveExpired(st, Forever) && !st.Releasing {
				return [2]Lease{st}, 1
			}
			start := in.Invoke
			if st.Held && !st.Releasing && st.From != expirable {
				start = max(start, st.From-m.slack)
			}
			landed := Lease{Held: true, Holder: in.Token, From: end(start, in.TTL), Until: Forever, Lost: st.Lost}
			if start > in.Invoke {
				landed.NotBefore = start
			}
			return pairOf(st, m.normalize(landed, in.Invoke))
		}
	case Extend, Release:
		mine := st.Held && st.Holder == in.Token && m.mayBeLive(st, in.Invoke)
		switch out.Outcome {
		case OK:
			switch {
			case !mine:
				return [2]Lease{}, 0
			case in.Kind == Release:
				return [2]Lease{free}, 1
			}
			next := st
			next.From, next.Until = end(in.Invoke, in.TTL), end(in.Return, in.TTL)
			if st.Extending {
				// The earlier extend may yet land after this one.
				next.From, next.Until = min(next.From, st.ExtendFrom), Forever
			}
			return [2]Lease{next}, 1
		case Fail:
			switch {
			case out.Rejected || !mine || m.mayHaveExpired(st, in.Return):
				return [2]Lease{st}, 1
			case st.Releasing:
				// The holder's own release landed first.
				return [2]Lease{free}, 1
			}
			return [2]Lease{}, 0
		default:
			switch {
			case !mine:
				return [2]Lease{st}, 1
			case in.Kind == Release:
				st.Releasing = true
				return [2]Lease{st}, 1
			}
			from := end(in.Invoke, in.TTL)
			if st.Extending {
				from = min(from, st.ExtendFrom)
			}
			st.Extending, st.ExtendFrom = true, from
			st.From, st.Until = min(st.From, from), Forever
			return [2]Lease{m.normalize(st, in.Invoke)}, 1
		}
	case Read:
		if out.Outcome != OK {
			return [2]Lease{st}, 1
		}
		if out.Holder == "" && (st.Releasing || m.mayHaveExpired(st, in.Return)) ||
			out.Holder != "" && st.Held && st.Holder == out.Holder && m.mayBeLive(st, in.Invoke) {
			return [2]Lease{st}, 1
		}
		return [2]Lease{}, 0
	}
	return [2]Lease{st}, 1
}

// mayHaveExpired: the key is free, or its lease may have ended by ret.
func (m leaseModel) mayHaveExpired(st Lease, ret int64) bool {
	switch {
	case !st.Held || st.From == expirable:
		return true
	case st.From == Forever:
		return false
	}
	return ret == Forever || st.From-m.slack <= ret
}

// mayBeLive: there is a holder whose lease may not have ended by inv.
func (m leaseModel) mayBeLive(st Lease, inv int64) bool {
	return st.Held && (st.Until == Forever || st.Until+m.slack+m.outlive > inv)
}

// normalize rewrites a state as seen by an operation invoked at inv, and by
// every operation after it in a linearization: their instants are all at or
// after inv. A lease certainly over by then is the free lock; a bound on
// its end already passed is forgotten.
func (m leaseModel) normalize(st Lease, inv int64) Lease {
	if st.NotBefore != 0 && st.NotBefore <= inv {
		st.NotBefore = 0
	}
	if !st.Held {
		return st
	}
	if st.Until != Forever && st.Until+m.slack+m.outlive <= inv {
		return Lease{Lost: st.Lost}
	}
	if st.From != expirable && st.From != Forever && st.From-m.slack <= inv {
		st.From = expirable
	}
	if st.Extending && st.ExtendFrom != expirable && st.ExtendFrom != Forever && st.ExtendFrom-m.slack <= inv {
		st.ExtendFrom = expirable
	}
	return st
}

func (st Lease) hash() uint64 {
	h := fnvString(fnvOffset, st.Holder)
	var flags uint64
	for i, f := range []bool{st.Held, st.Extending, st.Releasing, st.Lost} {
		if f {
			flags |= 1 << i
		}
	}
	h = fnvUint(h, flags)
	h = fnvUint(h, uint64(st.From))
	h = fnvUint(h, uint64(st.Until))
	h = fnvUint(h, uint64(st.NotBefore))
	return fnvUint(h, uint64(st.ExtendFrom))
}

// String describes the state for porcupine's visualization.
func (st Lease) String() string {
	s := "free"
	if st.Held {
		s = "held by " + tokenName(st.Holder)
		switch {
		case st.From == Forever:
			s += ", no expiry"
		case st.From == expirable:
			s += ", may have expired"
		default:
			s += ", may expire from " + secs(st.From)
		}
		switch {
		case st.Until == Forever && st.From != Forever:
			s += ", may last indefinitely"
		case st.Until != Forever:
			s += ", certainly over by " + secs(st.Until)
		}
		if st.Extending {
			s += "; an extend may still land"
		}
		if st.Releasing {
			s += "; its release may still land"
		}
		if st.NotBefore != 0 {
			s += ", begun after " + secs(st.NotBefore)
		}
	}
	if st.Lost {
		s += "; a lost acquire may hold it"
	}
	return s
}

// pairOf is the two states an operation of unknown outcome may leave.
func pairOf[S comparable](a, b S) ([2]S, int) {
	if a == b {
		return [2]S{a}, 1
	}
	return [2]S{a, b}, 2
}

// box wraps next states for porcupine, reusing the boxed state when a step
// left it unchanged.
func box[S comparable](state interface{}, next []S) []interface{} {
	out := make([]interface{}, len(next))
	for i, s := range next {
		if s == state.(S) {
			out[i] = state
		} else {
			out[i] = s
		}
	}
	return out
}

func boxLease(state interface{}, next []Lease) []interface{}   { return box(state, next) }
func boxFenced(state interface{}, next []Fenced) []interface{} { return box(state, next) }

const (
	fnvOffset uint64 = 14695981039346656037
	fnvPrime  uint64 = 1099511628211
)

func fnvString(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= fnvPrime
	}
	return h
}

func fnvUint(h, v uint64) uint64 {
	for i := 0; i < 8; i++ {
		h ^= v & 0xff
		h *= fnvPrime
		v >>= 8
	}
	return h
}
