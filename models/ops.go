package models

import (
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/anishathalye/porcupine"

	"github.com/lockharness/lockharness/history"
)

// Forever is the completion time of an operation whose outcome is unknown
// (it may take effect at any later instant), and the ttl of a lease without
// expiry.
const Forever = history.Forever

// Kind is a lock operation.
type Kind uint8

// Lock operations. Resource writes and reads are not lock operations; the
// resource audits judge them.
const (
	Acquire Kind = iota + 1
	Extend
	Release
	// Read observes the lock's holder (Output.Holder, "" for none). The
	// harness records no lock reads today; history "read" events are reads
	// of the protected resource and Operations leaves them out.
	Read
	// seed starts a fenced-mutex segment at the highest fence granted before
	// it; internal to segmentation.
	seed
)

func (k Kind) String() string {
	switch k {
	case Acquire:
		return history.Acquire
	case Extend:
		return history.Extend
	case Release:
		return history.Release
	case Read:
		return history.Read
	case seed:
		return "seed"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Outcome is an operation's completion: OK (it happened), Fail (it did
// not) or Info (unknown; it may still take effect).
type Outcome uint8

// Outcomes.
const (
	OK Outcome = iota + 1
	Fail
	Info
)

func (o Outcome) String() string {
	switch o {
	case OK:
		return history.OK
	case Fail:
		return history.Fail
	case Info:
		return history.Info
	}
	return fmt.Sprintf("outcome(%d)", uint8(o))
}

// Input is what a client asked, with the times the harness stamped.
//
// Input and Output hold only what the models step on and the page
// describes, with the small fields side by side: a soak's longest key is
// hundreds of thousands of them at once (LockOp).
type Input struct {
	Kind Kind
	// Anonymous marks an acquire whose token no other operation on its key
	// uses. If its outcome is unknown, all that matters is that some lease
	// may appear at any later time (see Lease.Lost).
	Anonymous bool
	Key       string
	Token     string
	// Invoke and Return bound the instant the operation took effect, in
	// nanoseconds on the harness's clock. Return is Forever when the
	// outcome is unknown.
	Invoke, Return int64
	// TTL is the lease an acquire or extend asked for, in nanoseconds;
	// Forever means no expiry. Releases carry none (0).
	TTL int64
}

// Output is what the client was told.
type Output struct {
	Outcome Outcome
	// Rejected marks a failure that says nothing about the lock's state
	// (reason "rejected": READONLY, LOADING, NOAUTH, a lost quorum...): the
	// command certainly had no effect, and neither "busy" nor "not held"
	// may be read into it. A failure without a reason is the lock's answer.
	Rejected bool
	// Fence is the fencing token an acquire was granted, 0 if none.
	Fence int64
	// Holder is what a Read observed ("" for a free lock).
	Holder string
	Error  string
}

// Operations turns a history into porcupine operations: one per lock
// operation (acquire, extend, release; see history.Ops). Nemesis events and
// the protected resource's writes and reads are left out. An operation that
// completed as info, or never completed, returns to porcupine just after the
// last event of the history, which within the history is as good as never,
// and its Input says Return: Forever. ClientId numbers processes densely in
// order of appearance, so porcupine's visualization draws one lane per
// process. Operations come out in invoke order.
func Operations(events []history.Event) ([]porcupine.Operation, error) {
	all, err := history.Ops(events)
	if err != nil {
		return nil, err
	}
	var end int64
	for i := range events {
		end = max(end, events[i].Time)
	}
	return fromOps(all, end), nil
}

// LockOp is a lock operation in the models' own form: porcupine's
// Operation with its input and output unboxed, and its token numbered
// among its key's. The checker segments and witnesses these directly
// (Check), and boxes for porcupine only the segments it must search.
type LockOp struct {
	ClientId     int
	Input        Input
	Output       Output
	Call, Return int64
	// token numbers the operation's key and token among the operations
	// built together (0, 1, ... in order of appearance); -1 for a
	// segment's stand-ins.
	token int32
}

// LockOps is Operations for lock operations already paired (see
// history.Ops) and picked out (of one key, say), in invoke order, of a
// history that validates, in the models' own form, written over dst's
// array when it is large enough; end is the time of the history's last
// event. The operations must come from a history.OpsBuilder (history.Ops,
// history.BuildOps), which numbers their tokens (history.Op.TokenID).
// tokens, if not nil, numbers each operation's key and token densely from
// 0 among lockOps (the caller has them at hand; otherwise they are
// numbered here).
func LockOps(dst []LockOp, lockOps []*history.Op, tokens []int32, end int64) []LockOp {
	return fromLockOps(dst, lockOps, tokens, end)
}

// Box turns operations into porcupine's form.
func Box(ops []LockOp) []porcupine.Operation {
	out := make([]porcupine.Operation, len(ops))
	for i, o := range ops {
		out[i] = porcupine.Operation{ClientId: o.ClientId, Input: o.Input, Call: o.Call, Output: o.Output, Return: o.Return}
	}
	return out
}

// unbox is Box undone, for operations of one key; tokens are numbered anew.
func unbox(ops []porcupine.Operation) []LockOp {
	ids := make(map[string]int32)
	out := make([]LockOp, len(ops))
	for i, o := range ops {
		in := o.Input.(Input)
		id, seen := ids[in.Token]
		if !seen {
			id = int32(len(ids))
			ids[in.Token] = id
		}
		out[i] = LockOp{ClientId: o.ClientId, Input: in, Output: o.Output.(Output), Call: o.Call, Return: o.Return, token: id}
	}
	return out
}

func fromOps(all []history.Op, end int64) []porcupine.Operation {
	lockOps := make([]*history.Op, 0, len(all))
	for i := range all {
		if all[i].Lease() {
			lockOps = append(lockOps, &all[i])
		}
	}
	return Box(fromLockOps(nil, lockOps, nil, end))
}

// fromLockOps builds the operations, in the order given.
func fromLockOps(dst []LockOp, lockOps []*history.Op, ids []int32, end int64) []LockOp {
	if ids == nil {
		local := make(map[int32]int32, len(lockOps)/2)
		ids = make([]int32, len(lockOps))
		for i, o := range lockOps {
			id, seen := local[o.TokenID]
			if !seen {
				id = int32(len(local))
				local[o.TokenID] = id
			}
			ids[i] = id
		}
	}
	k := scanKey(len(lockOps), func(i int) (*history.Op, int32) { return lockOps[i], ids[i] })
	ops := slices.Grow(dst[:0], len(lockOps))[:len(lockOps)]
	for i, o := range lockOps {
		ops[i] = k.lockOp(o, ids[i], end)
	}
	return ops
}

// keyScan is what building a key's operations, and cutting them into
// segments as they come, needs to know before the first: each token's
// (by its number among the key's) uses, the lanes of the key's processes,
// and whether the operations come in invoke order with no token acquired
// twice.
type keyScan struct {
	infos  []tokenInfo
	uses   tokenUses
	lanes  lanes
	reused bool
	sorted bool
}

// tokenInfo is how many of a key's operations use a token, and its
// acquire's ttl, for extends that name none.
type tokenInfo struct {
	uses   int
	ttl    int64
	hasTTL bool
}

// scanKey reads a key's n operations, op(i) being the i-th in the order
// they will be built, with its token's number among the key's.
func scanKey(n int, op func(int) (*history.Op, int32)) *keyScan {
	k := &keyScan{sorted: true}
	last := int64(math.MinInt64)
	for i := range n {
		o, id := op(i)
		if int(id) >= len(k.infos) {
			k.infos = append(k.infos, make([]tokenInfo, int(id)+1-len(k.infos))...)
			for len(k.uses) < len(k.infos) {
				k.uses = append(k.uses, unused)
			}
		}
		info, u := &k.infos[id], &k.uses[id]
		info.uses++
		k.lanes.of(o.Process)
		k.sorted = k.sorted && o.InvT >= last
		last = o.InvT
		kind, _ := lockKind(o.F)
		if kind == Acquire {
			info.ttl, info.hasTTL = o.TTLNs(), true
		}
		if u.take(i, kind, outcome(o)) {
			k.reused = true
		}
	}
	return k
}

// outcome is what a lock operation's client was told.
func outcome(o *history.Op) Outcome {
	switch {
	case !o.Finished() || o.Type == history.Info:
		return Info
	case o.Type == history.Fail:
		return Fail
	}
	return OK
}

// lockOp builds one of the key's operations; id is its token's number
// among the key's, end the time of the history's last event.
func (k *keyScan) lockOp(o *history.Op, id int32, end int64) LockOp {
	end++ // after the last event: unknown outcomes land no later than "never"
	kind, _ := lockKind(o.F)
	info := k.infos[id]
	in := Input{Kind: kind, Key: o.Key, Token: o.Token, Invoke: o.InvT, Return: Forever}
	switch {
	case kind == Acquire || kind == Extend && o.TTLMs > 0:
		in.TTL = o.TTLNs()
	case kind == Extend:
		in.TTL = history.Forever
		if info.hasTTL {
			in.TTL = info.ttl
		}
	}
	out := Output{Outcome: outcome(o)}
	ret := end
	if out.Outcome != Info {
		out.Error, out.Fence = o.Error, o.Fence
		out.Rejected = out.Outcome == Fail && !o.AboutTheLock()
		in.Return, ret = o.DoneT, o.DoneT
	}
	in.Anonymous = kind == Acquire && info.uses == 1
	return LockOp{ClientId: k.lanes.of(o.Process), Input: in, Call: o.InvT, Output: out, Return: ret, token: id}
}

// lanes numbers processes densely in order of appearance: porcupine draws
// one lane per ClientId. Processes are small numbers in every history the
// harness writes, so a slice serves them; a map any others.
type lanes struct {
	dense  []int32 // lane+1 by process; 0 for none yet
	sparse map[history.Process]int
	n      int
}

func (l *lanes) of(p history.Process) int {
	if p >= 0 && p < 1<<16 {
		if int(p) >= len(l.dense) {
			l.dense = append(l.dense, make([]int32, int(p)+1-len(l.dense))...)
		}
		if l.dense[p] == 0 {
			l.n++
			l.dense[p] = int32(l.n)
		}
		return int(l.dense[p]) - 1
	}
	if l.sparse == nil {
		l.sparse = make(map[history.Process]int)
	}
	lane, seen := l.sparse[p]
	if !seen {
		lane = l.n
		l.n++
		l.sparse[p] = lane
	}
	return lane
}

// lockKind maps a history operation to a lock operation; resource writes
// and reads are not.
func lockKind(f string) (Kind, bool) {
	switch f {
	case history.Acquire:
		return Acquire, true
	case history.Extend:
		return Extend, true
	case history.Release:
		return Release, true
	}
	return 0, false
}

// ByKey splits operations by lock key, keeping their order; keys come out
// sorted.
func ByKey(ops []porcupine.Operation) (keys []string, parts [][]porcupine.Operation) {
	index := make(map[string]int)
	for _, o := range ops {
		k := o.Input.(Input).Key
		i, seen := index[k]
		if !seen {
			i = len(keys)
			index[k] = i
			keys = append(keys, k)
			parts = append(parts, nil)
		}
		parts[i] = append(parts[i], o)
	}
	order := make([]int, len(keys))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return keys[order[a]] < keys[order[b]] })
	sortedKeys := make([]string, len(keys))
	sortedParts := make([][]porcupine.Operation, len(keys))
	for i, j := range order {
		sortedKeys[i], sortedParts[i] = keys[j], parts[j]
	}
	return sortedKeys, sortedParts
}
