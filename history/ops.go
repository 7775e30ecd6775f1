package history

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/lockharness/lockharness/internal/hugepages"
)

// Op is one client operation: its invoke and, if it finished, its
// completion, with the fields either event may carry merged. The invoke's
// fields win, except where the completion is the authority: an acquire's
// fence and validity, a write's stored value, the error and the reason.
type Op struct {
	// *OpKind is what the operation shares with many others: its
	// function, key, client and outcome are a pointer to one copy, which
	// OpsBuilder keeps, so that a soak's millions of operations cost 104
	// bytes each instead of 208. It is shared: an operation's
	// kind is never written through, only replaced (kindTable.of).
	*OpKind
	// Process is not part of the kind: a client takes a new one after
	// every operation of unknown outcome, and the kinds would multiply.
	Process Process
	Token   string
	Fence   int64
	// TTLMs is not part of the kind either: a client may ask for a lease
	// of another length each time, and the bench's histories do.
	TTLMs int64
	// Read is the counter value a write read (invoke); Stored the value
	// the resource kept (ok completion).
	Read, Stored *int64
	// ValidMs: see Event.ValidMs (the acquire's completion says).
	ValidMs int64
	// Inv and Done are positions in the events slice; Done is -1 while
	// the operation is unfinished.
	Inv, Done int32
	// KeyID and TokenID number the operation's key and its (key, token)
	// pair densely, in order of first appearance (OpsBuilder.Keys,
	// OpsBuilder.Tokens), so that a checker can index by them instead of
	// hashing the strings again at every stage.
	KeyID, TokenID int32
	// InvT and DoneT are the invoke's and completion's times (DoneT is 0
	// while unfinished).
	InvT, DoneT int64
}

// OpKind is the part of an operation that few values cover across a
// whole history: what was done, on which key, by which client, and how it
// ended.
type OpKind struct {
	F      string
	Client int
	Key    string
	Final  bool
	// FenceChecked: see Event.FenceChecked (a write's completion says).
	FenceChecked bool
	// Background: see Event.Background (the invoke says).
	Background bool
	// UnseenRenewals: see Event.UnseenRenewals.
	UnseenRenewals bool
	// Type is the outcome: ok, fail or info. An invoke that never
	// completed is info, because it may still have taken effect.
	Type string
	// Reason says why a fail failed (see the Reason constants); empty
	// otherwise, and in histories that do not say.
	Reason string
	Error  string
}

// TTLNs is the lease TTLMs asks for, in nanoseconds (LeaseNs): Forever
// for one without expiry.
func (o *Op) TTLNs() int64 { return LeaseNs(o.TTLMs) }

// Finished reports whether the operation completed.
func (o *Op) Finished() bool { return o.Done >= 0 }

// InvokedAt is the invoke's time as a duration since the run started.
func (o *Op) InvokedAt() time.Duration { return time.Duration(o.InvT) }

// DoneAt is the completion's time as a duration since the run started; 0
// while unfinished.
func (o *Op) DoneAt() time.Duration { return time.Duration(o.DoneT) }

// Latency is the time from invoke to completion; 0 while unfinished.
func (o *Op) Latency() int64 {
	if !o.Finished() {
		return 0
	}
	return o.DoneT - o.InvT
}

// Lease reports whether the operation is about the lock itself (acquire,
// extend, release), rather than the protected resource or a library's
// belief.
func (o *Op) Lease() bool { return IsLockOp(o.F) }

// IsLockOp reports whether f names an operation on the lock itself.
func IsLockOp(f string) bool { return f == Acquire || f == Extend || f == Release }

// AboutTheLock reports whether a fail is the lock's own answer ("busy",
// "not held"), as opposed to a rejection that says nothing about the
// lock's state (READONLY, a lost quorum, fencing). A fail without a reason
// is the lock's answer: that is the history format's default.
func (o *Op) AboutTheLock() bool { return o.Reason != ReasonRejected }

// pairing is the one place invokes are matched with their completions: it
// follows which operation each process has outstanding, in a slice for
// the small process numbers every history uses, a map beyond.
type pairing struct {
	dense  []pending
	sparse map[Process]pending
}

// pending is a process's outstanding invoke.
type pending struct {
	busy  bool
	op    int // the caller's number for the operation
	f     string
	index int // the invoke's history index
}

const denseProcesses = 1 << 16

func newPairing() pairing { return pairing{sparse: make(map[Process]pending)} }

func (p *pairing) get(proc Process) pending {
	if proc >= 0 && proc < denseProcesses {
		if int(proc) < len(p.dense) {
			return p.dense[proc]
		}
		return pending{}
	}
	return p.sparse[proc]
}

func (p *pairing) set(proc Process, q pending) {
	if proc >= 0 && proc < denseProcesses {
		if int(proc) >= len(p.dense) {
			p.dense = append(p.dense, make([]pending, int(proc)+1-len(p.dense))...)
		}
		p.dense[proc] = q
		return
	}
	if q.busy {
		p.sparse[proc] = q
	} else {
		delete(p.sparse, proc)
	}
}

// invoke opens operation op for e's process, or says why it cannot: the
// process has another outstanding.
func (p *pairing) invoke(e *Event, op int) error {
	if q := p.get(e.Process); q.busy {
		return fmt.Errorf("process %s invokes %s while its %s invoked at event %d is still outstanding",
			e.Process, e.F, q.f, q.index)
	}
	p.set(e.Process, pending{busy: true, op: op, f: e.F, index: e.Index})
	return nil
}

// complete closes e's process's outstanding operation and returns it, or
// says why e completes nothing.
func (p *pairing) complete(e *Event) (int, error) {
	q := p.get(e.Process)
	if !q.busy {
		return -1, fmt.Errorf("%s completion of %s by process %s has no outstanding invoke", e.Type, e.F, e.Process)
	}
	if e.F != q.f {
		return -1, fmt.Errorf("%s completion of %s by process %s does not match its outstanding %s invoked at event %d",
			e.Type, e.F, e.Process, q.f, q.index)
	}
	p.set(e.Process, pending{})
	return q.op, nil
}

// Ops pairs every completion with its process's outstanding invoke and
// returns the client operations in invoke order; nemesis events are
// skipped. It pairs what it can: a completion without an outstanding
// invoke, one of another kind, and a second invoke while one is
// outstanding are left out (the older invoke stays unfinished), and the
// first of them is returned as the error, naming the event's index. The
// checker refuses such a history; reports draw what could be paired.
func Ops(events []Event) ([]Op, error) {
	b := BuildOps(events)
	return b.Ops(), b.Err()
}

// BuildOps is an OpsBuilder that has taken every event of events.
func BuildOps(events []Event) *OpsBuilder {
	b := NewOpsBuilder(len(events)/2 + 1)
	for i := range events {
		b.Add(&events[i])
	}
	return b
}

// OpsBuilder pairs a history's events into operations as they come (Ops,
// one event at a time), so that a stream of events need not be kept: what
// it keeps is the operations, the nemesis events and the last time.
type OpsBuilder struct {
	ops     []Op
	keys    map[string]int32
	keyName []string
	// tokens numbers the (key, token) pairs; tokenCount is their number
	// once Done has dropped it.
	tokens     tokenTable
	tokenCount int
	// lastKey is the key numbered last: most operations share it with
	// their neighbours, and comparing it is cheaper than hashing.
	lastKey   string
	lastKeyID int32
	p         pairing
	first     error
	// pairErr is first as a Validator says it; order checks the events'
	// order for addChecked.
	pairErr error
	order   *Validator
	// recent is each client's (by Client, below 1<<16) last pair
	// numbered: its extends and releases are nearly always of it, and a
	// comparison costs less than the table.
	recent  []recentPair
	nemesis []Event
	end     int64
	// n is how many events came: the next one's position.
	n int
	// kinds holds one copy of each OpKind the operations point to.
	kinds kindTable
	// huge: see NewOfflineOpsBuilder.
	huge bool
}

// recentPair is a client's last (key, token) pair and its number plus one
// (0: none yet).
type recentPair struct {
	token   string
	key, id int32
}

// NewOpsBuilder starts pairing; capacity is a guess at the operations.
func NewOpsBuilder(capacity int) *OpsBuilder { return newOpsBuilder(capacity, false) }

// NewOfflineOpsBuilder is NewOpsBuilder for a process whose one job is
// this check (harness check, harness report): its largest arrays, and the
// checker's (HugePages), are asked for on huge pages (internal/hugepages).
// A process that runs clients must not ask: the kernel may compact memory
// to fill a huge page at a fault, a stall its clients' timings would
// show, and the mark stays on the memory after the array is freed.
func NewOfflineOpsBuilder(capacity int) *OpsBuilder { return newOpsBuilder(capacity, true) }

func newOpsBuilder(capacity int, huge bool) *OpsBuilder {
	ops := make([]Op, 0, capacity)
	if huge {
		hugepages.Advise(ops)
	}
	return &OpsBuilder{ops: ops, p: newPairing(), keys: make(map[string]int32), lastKeyID: -1,
		tokens: newTokenTable(capacity*3/4, huge), kinds: newKindTable(), huge: huge}
}

// HugePages reports whether the builder's arrays are on huge pages
// (NewOfflineOpsBuilder), and so may a checker's be.
func (b *OpsBuilder) HugePages() bool { return b.huge }

// keyID numbers a key.
func (b *OpsBuilder) keyID(key string) int32 {
	if b.lastKeyID >= 0 && key == b.lastKey {
		return b.lastKeyID
	}
	k, seen := b.keys[key]
	if !seen {
		k = int32(len(b.keyName))
		b.keys[key] = k
		b.keyName = append(b.keyName, key)
	}
	b.lastKey, b.lastKeyID = key, k
	return k
}

// number gives o its KeyID and TokenID.
func (b *OpsBuilder) number(o *Op) {
	k := b.keyID(o.Key)
	var t int32
	if c := o.Client; c >= 0 && c < 1<<16 {
		if c >= len(b.recent) {
			b.recent = append(b.recent, make([]recentPair, c+1-len(b.recent))...)
		}
		r := &b.recent[c]
		if r.id > 0 && r.key == k && r.token == o.Token {
			t = r.id - 1
		} else {
			t = b.tokens.number(k, o.Token)
			*r = recentPair{token: o.Token, key: k, id: t + 1}
		}
	} else {
		t = b.tokens.number(k, o.Token)
	}
	o.KeyID, o.TokenID = k, t
}

// Add takes the history's next event. Operations name their events by
// position in the history (their index, in a history that validates).
func (b *OpsBuilder) Add(e *Event) {
	pos := b.n
	b.n++
	b.end = max(b.end, e.Time)
	fail := func(err error) {
		if b.first == nil {
			b.first, b.pairErr = fmt.Errorf("event %d: %w", e.Index, err), err
		}
	}
	if e.IsNemesis() {
		b.nemesis = append(b.nemesis, *e)
		return
	}
	if pos > math.MaxInt32 {
		fail(fmt.Errorf("the history has more than %d events, and operations name their events by 32-bit positions", math.MaxInt32))
		return
	}
	switch e.Type {
	case Invoke:
		if err := b.p.invoke(e, len(b.ops)); err != nil {
			fail(err)
			// The older one stays unfinished.
			b.p.set(e.Process, pending{busy: true, op: len(b.ops), f: e.F, index: e.Index})
		}
		kind := b.kinds.of(&OpKind{F: e.F, Client: e.Client, Key: e.Key,
			Final: e.Final, UnseenRenewals: e.UnseenRenewals, Background: e.Background, Type: Info})
		if len(b.ops) == cap(b.ops) {
			// Grown here rather than by append, so that the new array
			// has huge pages too where the first had.
			b.ops = slices.Grow(b.ops, len(b.ops)/2+1024)
			if b.huge {
				hugepages.Advise(b.ops)
			}
		}
		b.ops = append(b.ops, Op{OpKind: kind, Process: e.Process, Token: e.Token, Fence: e.Fence, TTLMs: e.TTLMs, ValidMs: e.ValidMs,
			Read: e.Value, Inv: int32(pos), Done: -1, InvT: e.Time})
		b.number(&b.ops[len(b.ops)-1])
	case OK, Fail, Info:
		j, err := b.p.complete(e)
		if err != nil {
			fail(err)
			return
		}
		o := &b.ops[j]
		key, token := o.Key, o.Token
		o.complete(int32(pos), e, &b.kinds)
		if o.Key != key || o.Token != token {
			// The completion named what the invoke did not.
			b.number(o)
		}
	default:
		fail(fmt.Errorf("type %q is not one of invoke, ok, fail, info", e.Type))
	}
}

// addChecked takes the next event as a Validator would check it, pairing
// it once, for both: the first event a Validator refuses is the error, as
// the Validator says it.
func (b *OpsBuilder) addChecked(e *Event) error {
	if b.order == nil {
		b.order = new(Validator)
	}
	if err := b.order.order(e); err != nil {
		return err
	}
	before := b.first
	b.Add(e)
	if b.first != before {
		return b.pairErr
	}
	return nil
}

// Ops are the client operations so far, in invoke order.
func (b *OpsBuilder) Ops() []Op { return b.ops }

// Err is the first event Ops would have left out, as Ops says it.
func (b *OpsBuilder) Err() error { return b.first }

// Nemesis are the nemesis events so far, in order.
func (b *OpsBuilder) Nemesis() []Event { return b.nemesis }

// Done drops what numbering needs, once every event has come: Ops, Keys,
// Nemesis and End stay.
func (b *OpsBuilder) Done() {
	b.tokenCount = b.tokens.len()
	b.keys, b.tokens, b.kinds = nil, tokenTable{}, kindTable{}
}

// Keys names the keys by KeyID.
func (b *OpsBuilder) Keys() []string { return b.keyName }

// Tokens is how many (key, token) pairs there are: every TokenID is below.
func (b *OpsBuilder) Tokens() int {
	if b.tokens.slots == nil {
		return b.tokenCount // Done
	}
	return b.tokens.len()
}

// End is the latest event time so far.
func (b *OpsBuilder) End() int64 { return b.end }

// complete merges the completion at position i into the operation, its
// kind from kinds.
func (o *Op) complete(i int32, c *Event, kinds *kindTable) {
	o.Done, o.DoneT = i, c.Time
	k := *o.OpKind
	k.Type = c.Type
	k.Final = k.Final || c.Final
	k.Error, k.Reason = c.Error, c.Reason
	k.FenceChecked = c.FenceChecked
	if k.Key == "" {
		k.Key = c.Key
	}
	o.OpKind = kinds.of(&k)
	if o.Token == "" {
		o.Token = c.Token
	}
	if c.Fence != 0 && (o.F == Acquire || o.Fence == 0) {
		o.Fence = c.Fence
	}
	if c.ValidMs != 0 {
		o.ValidMs = c.ValidMs
	}
	if c.Value != nil {
		o.Stored = c.Value
	}
}
