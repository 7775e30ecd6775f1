package models

import (
	"context"
	"fmt"

	"github.com/anishathalye/porcupine"
)

// Fenced is the fenced-mutex model's state: the latest grant's token and
// the highest fence granted so far. The zero value is a lock never granted.
type Fenced struct {
	Held   bool
	Holder string
	Fence  int64
}

// FencedMutex is the fenced-mutex model: every grant carries a fence
// strictly greater than every earlier grant's, and only the latest grant,
// not yet released, may release or extend. It knows nothing of time: that
// a lease expired lets the next acquire in, and the lease-lock model judges
// whether it could have. A grant without a fence (0) is not judged on its
// fence; an acquire of unknown outcome that lands raises no fence, since
// its fence is unknown. Partitioned by key and segmented like LeaseLock.
func FencedMutex() porcupine.Model {
	return FencedMutexPartitioned(Partitioning{})
}

// FencedMutexPartitioned is FencedMutex with a chosen partitioning.
func FencedMutexPartitioned(p Partitioning) porcupine.Model {
	nm := porcupine.NondeterministicModel{
		Partition: segmenter{p: p, fenced: true}.partition,
		Init:      func() []interface{} { return []interface{}{Fenced{}} },
		Step: func(state, input, output interface{}) []interface{} {
			next, n := fencedStep(state.(Fenced), input.(Input), output.(Output))
			return boxFenced(state, next[:n])
		},
		StepContext: func(_ context.Context, state, input, output interface{}) []interface{} {
			next, n := fencedStep(state.(Fenced), input.(Input), output.(Output))
			return boxFenced(state, next[:n])
		},
		Equal:             func(a, b interface{}) bool { return a.(Fenced) == b.(Fenced) },
		Hash:              func(s interface{}) uint64 { return s.(Fenced).hash() },
		DescribeOperation: describeOperation,
		DescribeState:     func(s interface{}) string { return s.(Fenced).String() },
	}
	return nm.ToModel()
}

func fencedStep(st Fenced, in Input, out Output) ([2]Fenced, int) {
	mine := st.Held && st.Holder == in.Token
	switch in.Kind {
	case seed:
		st.Fence = max(st.Fence, out.Fence)
		return [2]Fenced{st}, 1
	case Acquire:
		switch out.Outcome {
		case OK:
			if out.Fence != 0 && out.Fence <= st.Fence {
				return [2]Fenced{}, 0
			}
			return [2]Fenced{Fenced{Held: true, Holder: in.Token, Fence: max(st.Fence, out.Fence)}}, 1
		case Info:
			if in.Anonymous {
				// Whether it landed matters only to its own token's
				// operations, and there are none.
				return [2]Fenced{st}, 1
			}
			return pairOf(st, Fenced{Held: true, Holder: in.Token, Fence: st.Fence})
		}
	case Release:
		free := Fenced{Fence: st.Fence}
		switch out.Outcome {
		case OK:
			if !mine {
				return [2]Fenced{}, 0
			}
			return [2]Fenced{free}, 1
		case Info:
			if mine {
				return pairOf(st, free)
			}
		}
	case Extend:
		if out.Outcome == OK && !mine {
			return [2]Fenced{}, 0
		}
	case Read:
		if out.Outcome == OK && out.Holder != "" && !(st.Held && st.Holder == out.Holder) {
			return [2]Fenced{}, 0
		}
	}
	return [2]Fenced{st}, 1
}

func (st Fenced) hash() uint64 {
	h := fnvString(fnvOffset, st.Holder)
	if st.Held {
		h = fnvUint(h, 1)
	}
	return fnvUint(h, uint64(st.Fence))
}

// String describes the state for porcupine's visualization.
func (st Fenced) String() string {
	s := "free"
	if st.Held {
		s = "last granted to " + tokenName(st.Holder)
	}
	if st.Fence > 0 {
		s += fmt.Sprintf(", highest fence %d", st.Fence)
	}
	return s
}
