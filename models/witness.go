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
func LeaseLockCheck(slack time.Duration) Check {
	m := leaseModel{slack: max(int64(slack), 0)}
	return Check{
		Porcupine: LeaseLock(slack),
		sg:        segmenter{slack: m.slack},
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

// legal reports whether seq, taken in order, is a legal sequence of the
// model that starts in init and steps by step, following every state the
// model may be in, as porcupine's power-set form of it would.
func legal[S comparable](init S, step func(S, Input, Output) ([2]S, int), seg Segment, order []int32) bool {
	states, next := []S{init}, []S(nil)
	for _, i := range order {
		o := seg.at(int(i))
		next = next[:0]
		for _, st := range states {
			out, n := step(st, o.Input, o.Output)
			for _, s := range out[:n] {
				if !slices.Contains(next, s) {
					next = append(next, s)
				}
			}
		}
		if len(next) == 0 || len(next) > maxWitnessStates {
			return false
		}
		states, next = next, states
	}
	return true
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
