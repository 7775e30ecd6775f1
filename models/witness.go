package models

import (
	"cmp"
	"slices"
	"time"

	"github.com/anishathalye/porcupine"
)

// Check is a model in the two forms a checker needs: porcupine's, and its
// own segments and witnesses over LockOp, so that porcupine, whose form
// boxes every input, output and state, searches only the segments no
// witness settles.
type Check struct {
	Porcupine porcupine.Model
	sg        segmenter
	legal     func(seg Segment, order []int32) bool
}

// LeaseLockCheck is LeaseLock as a Check.
func LeaseLockCheck(slack time.Duration) Check { return LeaseLockCheckOutliving(slack, 0) }

// LeaseLockCheckOutliving is LeaseLockOutliving as a Check.
func LeaseLockCheckOutliving(slack, outlive time.Duration) Check {
	m := leaseModel{slack: max(int64(slack), 0), outlive: max(int64(outlive), 0)}
	return Check{
		Porcupine: LeaseLockOutliving(slack, outlive, Partitioning{}),
		sg:        segmenter{slack: m.slack + m.outlive},
		legal: func(seg Segment, order []int32) bool {
			return legal(Lease{}, m.step, seg, order)
		},
	}
}

// FencedMutexCheck is FencedMutex as a Check.
func FencedMutexCheck() Check {
	return Check{
		Porcupine: FencedMutex(),
		sg:        segmenter{fenced: true},
		legal: func(seg Segment, order []int32) bool {
			return legal(Fenced{}, fencedStep, seg, order)
		},
	}
}

// Partitioned is the Check cutting its segments as p says.
func (c Check) Partitioned(p Partitioning) Check {
	c.sg.p = p
	return c
}

// Segments pins and cuts one key's operations as the porcupine model's
// Partition does (see Partitioning). It sorts and pins ops in place, as
// every model does alike; the segments may share ops' array.
func (c Check) Segments(ops []LockOp) []Segment {
	lane := 0
	for i := range ops {
		lane = max(lane, ops[i].ClientId+1)
	}
	return c.sg.segments(ops, lane)
}

// Witnessed reports whether the segment's operations, in one of a few
// orders consistent with real time, are a legal sequence of the model: a
// witness that it is linearizable. False says nothing; porcupine must
// search. The orders: by return; answers other than ok at their invoke (a
// busy acquire saw the lock held when it arrived) and ok ones at their
// return; by invoke. Each places an operation at an instant within its
// [call, return], so one that returned before another was invoked comes
// first. A witness follows at most maxWitnessStates states at once, and
// gives up past them.
func (c Check) Witnessed(seg Segment) bool {
	at := []func(o *LockOp) int64{
		func(o *LockOp) int64 { return o.Return },
		func(o *LockOp) int64 {
			if o.Output.Outcome != OK {
				return o.Call
			}
			return o.Return
		},
		func(o *LockOp) int64 { return o.Call },
	}
	order := make([]int32, seg.Len())
	for _, point := range at {
		for i := range order {
			order[i] = int32(i)
		}
		// Ties go by invoke, then by position: the order a stable sort
		// gives, at the cost of an unstable one.
		slices.SortFunc(order, func(a, b int32) int {
			oa, ob := seg.at(int(a)), seg.at(int(b))
			if pa, pb := point(oa), point(ob); pa != pb {
				return cmp.Compare(pa, pb)
			}
			if oa.Call != ob.Call {
				return cmp.Compare(oa.Call, ob.Call)
			}
			return cmp.Compare(a, b)
		})
		if c.legal(seg, order) {
			return true
		}
	}
	return false
}

// maxWitnessStates bounds the states a witness follows at once; past it,
// the witness gives up and porcupine searches.
const maxWitnessStates = 64

// pullWindow is how far ahead of an operation that cannot go next a
// witness looks for one to take first.
const pullWindow = 16

// legal reports whether the operations, taken in order, are a legal
// sequence of the model that starts in init and steps by step, following
// every state the model may be in, as porcupine's power-set form of it
// would. Where the next operation x is illegal, it tries two local
// repairs, each only where real time allows it (an operation may go
// before another unless that one returned before it was invoked):
//
//   - take first one of the next pullWindow operations, y, if that makes x
//     legal: a release that returned just after the acquire it made room
//     for, when the order is by return;
//   - take x before the operation just taken: a release invoked just after
//     the acquire that followed it, when the order is by invoke.
//
// Every sequence it accepts is consistent with real time, so acceptance is
// a witness. It reorders order.
func legal[S comparable](init S, step func(S, Input, Output) ([2]S, int), seg Segment, order []int32) bool {
	w := walker[S]{step: step, states: []S{init}}
	for i := 0; i < len(order); i++ {
		x := seg.at(int(order[i]))
		if w.advance(&w.next, w.states, x) {
			w.prev, w.states, w.next = w.states, w.next, w.prev
			continue
		}
		if j := w.pull(seg, order, i); j > 0 {
			// y, x, then what lay between them.
			xi, yi := order[i], order[j]
			copy(order[i+2:j+1], order[i+1:j])
			order[i], order[i+1] = yi, xi
			i++
			continue
		}
		if i > 0 {
			if p := seg.at(int(order[i-1])); x.Call < p.Return && w.advance(&w.via, w.prev, x) && w.advance(&w.next, w.via, p) {
				order[i-1], order[i] = order[i], order[i-1]
				w.prev, w.states, w.via, w.next = w.via, w.next, w.prev, w.states
				continue
			}
		}
		return false
	}
	return true
}

// walker steps a set of model states, in buffers reused from step to step:
// states, where the sequence stands; prev, where it stood before its last
// operation; via and next, trials.
type walker[S comparable] struct {
	step                    func(S, Input, Output) ([2]S, int)
	states, prev, via, next []S
}

// pull finds the first of the pullWindow operations after order[i], y, that
// real time lets go before order[i] and those between, and after which
// order[i] is legal, and steps past both; 0 if there is none.
func (w *walker[S]) pull(seg Segment, order []int32, i int) int {
	x := seg.at(int(order[i]))
	passed := x.Return // the earliest return y would go before
	for j := i + 1; j < min(len(order), i+1+pullWindow); j++ {
		y := seg.at(int(order[j]))
		if y.Call < passed && w.advance(&w.via, w.states, y) && w.advance(&w.next, w.via, x) {
			w.prev, w.states, w.via, w.next = w.via, w.next, w.prev, w.states
			return j
		}
		passed = min(passed, y.Return)
	}
	return 0
}

// advance sets *dst to every state o may lead to from one of from, and
// reports whether there are some, and no more than maxWitnessStates.
func (w *walker[S]) advance(dst *[]S, from []S, o *LockOp) bool {
	next := (*dst)[:0]
	for _, st := range from {
		out, n := w.step(st, o.Input, o.Output)
		for _, s := range out[:n] {
			if !slices.Contains(next, s) {
				next = append(next, s)
			}
		}
	}
	*dst = next
	return len(next) > 0 && len(next) <= maxWitnessStates
}

// Boxed turns segments into porcupine's form, for porcupine to check with
// a Partition that returns them.
func Boxed(segs []Segment) (all []porcupine.Operation, parts [][]porcupine.Operation) {
	for _, seg := range segs {
		b := seg.box()
		parts = append(parts, b)
		all = append(all, b...)
	}
	return all, parts
}
