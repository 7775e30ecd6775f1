package models

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/anishathalye/porcupine"

	"github.com/lockharness/lockharness/history"
)

// Forever is the completion time of an operation whose outcome is unknown:
// it may take effect at any later instant.
const Forever int64 = math.MaxInt64

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
type Input struct {
	Kind  Kind
	Key   string
	Token string
	// Invoke and Return bound the instant the operation took effect, in
	// nanoseconds on the harness's clock. Return is Forever when the
	// outcome is unknown.
	Invoke, Return int64
	// TTL is the lease an acquire or extend asked for, in nanoseconds; 0
	// means no expiry.
	TTL int64
	// Anonymous marks an acquire whose token no other operation on its key
	// uses. If its outcome is unknown, all that matters is that some lease
	// may appear at any later time (see Lease.Lost).
	Anonymous bool
	// Client and Process say who asked; Index is the history index of the
	// invoke event. They only serve descriptions.
	Client  int
	Process history.Process
	Index   int
}

// Output is what the client was told.
type Output struct {
	Outcome Outcome
	// Rejected marks a failure that says nothing about the lock's state
	// (READONLY, LOADING, NOAUTH, a lost quorum...): the command certainly
	// had no effect, and neither "busy" nor "not held" may be read into it.
	// A failure whose error is empty or says "busy" or "not held" is an
	// answer about the lock and is not rejected.
	Rejected bool
	// Fence is the fencing token an acquire was granted, 0 if none.
	Fence int64
	// Holder is what a Read observed ("" for a free lock).
	Holder string
	Error  string
	// Index is the history index of the completion event, -1 if none.
	Index int
}

// Operations turns a history into porcupine operations: one per lock
// operation (acquire, extend, release), pairing each completion with its
// process's outstanding invoke. Nemesis events and the protected resource's
// writes and reads are left out. An operation that completed as info, or
// never completed, returns to porcupine just after the last event of the
// history, which within the history is as good as never, and its Input
// says Return: Forever. ClientId numbers processes densely in order of
// appearance, so porcupine's visualization draws one lane per process.
// Operations come out in invoke order.
func Operations(events []history.Event) ([]porcupine.Operation, error) {
	var end int64
	for i := range events {
		end = max(end, events[i].Time)
	}
	end++ // after the last event: unknown outcomes land no later than "never"

	all, err := history.Pairs(events)
	if err != nil {
		return nil, err
	}
	// Only lock operations; the resource's writes and reads are left out.
	type pair struct{ inv, done int } // positions in events; done -1 if none
	pairs := make([]pair, 0, len(all))
	needTTLs := false
	for _, p := range all {
		inv := &events[p.Inv]
		if _, lock := lockKind(inv.F); !lock {
			continue
		}
		needTTLs = needTTLs || inv.F == history.Extend && inv.TTLMs <= 0
		pairs = append(pairs, pair{inv: p.Inv, done: p.Done})
	}

	// What the operation's completion says, if it says anything: an info
	// completion changes nothing, as the operation may still take effect.
	completion := func(p pair) *history.Event {
		if p.done < 0 || events[p.done].Type == history.Info {
			return nil
		}
		return &events[p.done]
	}
	keyToken := func(p pair) [2]string {
		inv := &events[p.inv]
		key, token := inv.Key, inv.Token
		if c := completion(p); c != nil {
			if key == "" {
				key = c.Key
			}
			if token == "" {
				token = c.Token
			}
		}
		return [2]string{key, token}
	}
	uses := make(map[[2]string]int, len(pairs)/2)
	var ttls map[[2]string]int64 // each acquire's ttl, for extends that name none
	if needTTLs {
		ttls = make(map[[2]string]int64)
	}
	for _, p := range pairs {
		kt := keyToken(p)
		uses[kt]++
		if inv := &events[p.inv]; ttls != nil && inv.F == history.Acquire {
			ttls[kt] = ttlNs(inv.TTLMs)
		}
	}

	lanes := make(map[history.Process]int)
	ops := make([]porcupine.Operation, len(pairs))
	for i, p := range pairs {
		inv := &events[p.inv]
		kind, _ := lockKind(inv.F)
		kt := keyToken(p)
		lane, seen := lanes[inv.Process]
		if !seen {
			lane = len(lanes)
			lanes[inv.Process] = lane
		}
		in := &Input{Kind: kind, Key: kt[0], Token: kt[1], Invoke: inv.Time, Return: Forever,
			Client: inv.Client, Process: inv.Process, Index: inv.Index}
		switch {
		case kind == Acquire:
			in.TTL = ttlNs(inv.TTLMs)
		case kind == Extend && inv.TTLMs > 0:
			in.TTL = ttlNs(inv.TTLMs)
		case kind == Extend:
			in.TTL = ttls[kt]
		}
		out := &Output{Outcome: Info, Index: -1}
		ret := end
		if p.done >= 0 {
			out.Index = events[p.done].Index
		}
		if c := completion(p); c != nil {
			out.Outcome, out.Error, out.Fence = OK, c.Error, c.Fence
			if c.Type == history.Fail {
				out.Outcome = Fail
				out.Rejected = !aboutTheLock(c.Error)
			}
			if out.Fence == 0 && kind == Acquire {
				out.Fence = inv.Fence
			}
			in.Return, ret = c.Time, c.Time
		}
		in.Anonymous = kind == Acquire && uses[kt] == 1
		ops[i] = porcupine.Operation{ClientId: lane, Input: *in, Call: inv.Time, Output: *out, Return: ret}
	}
	return ops, nil
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

// aboutTheLock reports whether a failure's error is an answer about the
// lock's state ("lock busy", "lock not held", or no error at all) rather
// than a rejection of the command.
func aboutTheLock(err string) bool {
	if err == "" {
		return true
	}
	e := strings.ToLower(err)
	return strings.Contains(e, "busy") || strings.Contains(e, "not held")
}

// maxTTLMs bounds ttls so that time arithmetic cannot overflow: longer is
// no expiry at all (a century).
const maxTTLMs = 100 * 365 * 24 * 3600 * 1000

func ttlNs(ms int64) int64 {
	if ms <= 0 || ms > maxTTLMs {
		return 0
	}
	return ms * 1e6
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
