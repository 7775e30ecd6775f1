package models

import (
	"cmp"
	"math"
	"slices"

	"github.com/anishathalye/porcupine"

	"github.com/lockharness/lockharness/history"
)

// Partitioning says how a model splits a history for porcupine.
//
// Every partition first pins at its invoke (Return = Call) each operation
// of unknown outcome whose later landing the model's state already stands
// for: an anonymous acquire (Lease.Lost), and a release or extend whose
// token's acquire completed (Lease.Releasing; an extend's fork at its
// invoke, [invoke, +∞), loses nothing). Left to return "never", each would
// be a candidate at every later point of porcupine's search, which is
// exponential in their number when the search has to backtrack. Other
// operations of unknown outcome keep their late return.
//
// Porcupine's search also costs time and memory quadratic in the length of
// a partition (it keeps a bitset of the whole partition per visited
// state), so a long run's key is cut into segments that are checked
// independently. A cut goes between two operations of a key at an instant
// T that no operation of known outcome spans, and only where the lock is
// certainly free at T in every linearization of what came before: every
// lease granted or extended before T was released later (a release invoked
// after the grant returned), or certainly expired by T (Return + ttl +
// slack ≤ T, and no extend of unknown outcome may have renewed it).
// Operations of unknown outcome invoked before T may still land after it,
// so each segment starts with those that matter:
//
//   - if anonymous acquires of unknown outcome came before, one stand-in
//     (GhostToken) that sets Lease.Lost; the fenced-mutex model needs none,
//     as such a holder is invisible to it;
//   - copies of the other acquires of unknown outcome;
//   - copies of the extends and releases of unknown outcome, unless their
//     token's acquire completed before T: that token can never hold the
//     lock again.
//
// The fenced-mutex model's segments begin with a seed carrying the highest
// fence granted before T, and are cut only where every grant was released.
// A key whose acquires reuse a token is not cut.
type Partitioning struct {
	// Whole checks each key's operations as one partition.
	Whole bool
	// MinSegment is the fewest operations a segment holds before it may be
	// cut (0: DefaultMinSegment).
	MinSegment int
}

// DefaultMinSegment keeps segments long enough that the operations copied
// into them cost little, and short enough that porcupine's quadratic cost
// stays small.
const DefaultMinSegment = 256

type segmenter struct {
	// slack is how long past its return plus its TTL a grant may last:
	// the model's slack and outlive.
	slack  int64
	fenced bool
	p      Partitioning
}

// partition is the porcupine model's Partition: by key, then segments.
func (sg segmenter) partition(history []porcupine.Operation) [][]porcupine.Operation {
	parts := [][]porcupine.Operation{history}
	if !oneKey(history) {
		_, parts = ByKey(history)
	}
	lane := 0
	for _, o := range history {
		lane = max(lane, o.ClientId+1)
	}
	var out [][]porcupine.Operation
	for _, ops := range parts {
		for _, seg := range sg.segments(unbox(ops), lane) { // unbox copies
			out = append(out, seg.box())
		}
	}
	return out
}

func oneKey(ops []porcupine.Operation) bool {
	for i := 1; i < len(ops); i++ {
		if ops[i].Input.(Input).Key != ops[0].Input.(Input).Key {
			return false
		}
	}
	return true
}

// Segment is a part of one key's operations that porcupine can check on
// its own: Lead, what it begins with (stand-ins and copies of operations
// of unknown outcome from before its cut), then Ops, a run of the key's
// operations, in place. Kept apart, a segment costs no copy of its
// operations.
type Segment struct {
	Lead, Ops []LockOp
}

// Len is how many operations the segment holds.
func (s Segment) Len() int { return len(s.Lead) + len(s.Ops) }

// at is the segment's i-th operation.
func (s Segment) at(i int) *LockOp {
	if i < len(s.Lead) {
		return &s.Lead[i]
	}
	return &s.Ops[i-len(s.Lead)]
}

// Flat is a copy of the segment that owns its operations, its lead and its
// run in one array: what outlives the walk that handed the segment on
// (Check.EachSegment reuses its arrays).
func (s Segment) Flat() Segment {
	ops := make([]LockOp, 0, s.Len())
	return Segment{Ops: append(append(ops, s.Lead...), s.Ops...)}
}

func (s Segment) box() []porcupine.Operation {
	return append(Box(s.Lead), Box(s.Ops)...)
}

// segments pins and cuts one key's operations, sorting and pinning them in
// place (which every model does alike, so another model may segment them
// again); the segments may share ops' array. lane is the ClientId of
// stand-ins.
func (sg segmenter) segments(ops []LockOp, lane int) []Segment {
	if !slices.IsSortedFunc(ops, byCall) {
		slices.SortStableFunc(ops, byCall)
	}
	var ntokens int32
	for i := range ops {
		ntokens = max(ntokens, ops[i].token+1)
	}
	tokens := make(tokenUses, ntokens)
	for i := range tokens {
		tokens[i] = unused
	}
	reused := false
	for i := range ops {
		if tokens[ops[i].token].take(i, ops[i].Input.Kind, ops[i].Output.Outcome) {
			reused = true
		}
	}
	pin(ops, tokens)

	minSeg := sg.p.MinSegment
	if minSeg <= 0 {
		minSeg = DefaultMinSegment
	}
	if sg.p.Whole || reused || len(ops) <= minSeg {
		return []Segment{{Ops: ops}}
	}
	cuts := sg.cuts(ops, tokens, minSeg)
	if len(cuts) == 0 {
		return []Segment{{Ops: ops}}
	}
	return sg.build(ops, tokens, cuts, lane)
}

func byCall(a, b LockOp) int { return cmp.Compare(a.Call, b.Call) }

// pin pins every operation of ops (pinOne).
func pin(ops []LockOp, tokens tokenUses) {
	for i := range ops {
		pinOne(&ops[i], tokens)
	}
}

// pinOne makes an operation of unknown outcome return at its invoke when
// the model's state stands for its landing later (see Partitioning).
func pinOne(o *LockOp, tokens tokenUses) {
	if o.Output.Outcome != Info {
		return
	}
	in := &o.Input
	u := tokens.at(o)
	acquired := u.acquire >= 0 && u.outcome != Info
	if in.Kind == Acquire && in.Anonymous || (in.Kind == Release || in.Kind == Extend) && acquired {
		o.Return = o.Call
	}
}

// tokenUse is what a key's operations do with one token.
type tokenUse struct {
	acquire       int // position of the token's acquire, -1 if none
	outcome       Outcome
	unknownExtend bool
}

// unused is a token before any of its operations.
var unused = tokenUse{acquire: -1}

// take notes the key's i-th operation, of kind and outcome, on the token,
// and reports whether it acquires the token a second time.
func (u *tokenUse) take(i int, kind Kind, outcome Outcome) (reacquired bool) {
	switch kind {
	case Acquire:
		reacquired = u.acquire >= 0
		u.acquire, u.outcome = i, outcome
	case Extend:
		u.unknownExtend = u.unknownExtend || outcome == Info
	}
	return reacquired
}

// tokenUses holds one key's tokenUse by LockOp.token.
type tokenUses []tokenUse

// at is the tokenUse of o's token.
func (t tokenUses) at(o *LockOp) *tokenUse { return &t[o.token] }

// grant is a lease granted or extended, not yet known to be over.
type grant struct {
	ret   int64 // when the grant returned
	until int64 // the lease is certainly over by then; Forever if never
}

// cuts finds where a key's operations, sorted by invoke, may be cut: before
// position i when nothing of known outcome spans ops[i].Call and the lock
// is certainly free then.
func (sg segmenter) cuts(ops []LockOp, tokens tokenUses, minSeg int) []int {
	var cuts []int
	c := newCutter(sg, tokens, minSeg)
	for i := range ops {
		if c.before(i, &ops[i]) {
			cuts = append(cuts, i)
		}
		c.take(&ops[i])
	}
	return cuts
}

// cutter finds cuts in one pass over a key's operations (cuts): each is
// asked whether a cut goes before it (before), then taken (take).
type cutter struct {
	sg      segmenter
	tokens  tokenUses
	minSeg  int
	open    []grant
	lastRet int64
	start   int
}

func newCutter(sg segmenter, tokens tokenUses, minSeg int) *cutter {
	return &cutter{sg: sg, tokens: tokens, minSeg: minSeg, lastRet: math.MinInt64}
}

// before reports whether a segment may end before o, the key's i-th
// operation, and if so starts the next one there.
func (c *cutter) before(i int, o *LockOp) bool {
	if i-c.start < c.minSeg || c.lastRet >= o.Call || !allOver(c.open, o.Call) {
		return false
	}
	c.start = i
	c.open = c.open[:0]
	return true
}

// take notes what o leaves open: a grant, or one certainly over.
func (c *cutter) take(o *LockOp) {
	in, out := &o.Input, &o.Output
	if out.Outcome == Info {
		return
	}
	c.lastRet = max(c.lastRet, o.Return)
	if out.Outcome != OK {
		return
	}
	switch in.Kind {
	case Acquire, Extend:
		until := Forever
		if !c.sg.fenced && in.TTL != Forever && !c.tokens.at(o).unknownExtend {
			until = in.Return + in.TTL + c.sg.slack
		}
		c.open = append(c.open, grant{ret: in.Return, until: until})
	case Release:
		// The lock is free after this release; every grant that
		// returned before it was invoked was over by then.
		kept := c.open[:0]
		for _, g := range c.open {
			if g.ret >= in.Invoke {
				kept = append(kept, g)
			}
		}
		c.open = kept
	}
}

func allOver(open []grant, t int64) bool {
	for _, g := range open {
		if g.until > t {
			return false
		}
	}
	return true
}

// build assembles the segments, each beginning with the operations of
// unknown outcome from before its cut that may still matter.
func (sg segmenter) build(ops []LockOp, tokens tokenUses, cuts []int, lane int) []Segment {
	bounds := append(append([]int{0}, cuts...), len(ops))
	segs := make([]Segment, 0, len(bounds)-1)
	segs = append(segs, Segment{Ops: ops[:bounds[1]]})
	var c carry
	for k := 1; k < len(bounds)-1; k++ {
		cut, end := bounds[k], bounds[k+1]
		c.pass(ops[bounds[k-1]:cut], cut, tokens)
		lead := c.lead(nil, sg, &ops[cut], lane)
		segs = append(segs, Segment{Lead: lead, Ops: ops[cut:end]})
	}
	return segs
}

// carry is what every segment after a cut begins with from before it.
type carry struct {
	copied []LockOp
	lost   *Input // an anonymous acquire of unknown outcome
	fence  int64
}

// pass takes the operations of the segment that ends at cut (a position
// among the key's operations).
func (c *carry) pass(ops []LockOp, cut int, tokens tokenUses) {
	for j := range ops {
		o := &ops[j]
		in, out := &o.Input, &o.Output
		if in.Kind == Acquire && out.Outcome == OK {
			c.fence = max(c.fence, out.Fence)
		}
		if out.Outcome != Info {
			continue
		}
		u := tokens.at(o)
		switch in.Kind {
		case Acquire:
			switch {
			case !in.Anonymous:
				c.copied = append(c.copied, *o)
			case c.lost == nil:
				c.lost = new(Input)
				*c.lost = *in
			}
		case Extend, Release:
			if u.acquire < 0 || u.acquire >= cut || u.outcome == Info {
				c.copied = append(c.copied, *o)
			}
		}
	}
}

// lead builds, into dst's array, what the segment that begins with first
// begins with; lane is the ClientId of stand-ins.
func (c *carry) lead(dst []LockOp, sg segmenter, first *LockOp, lane int) []LockOp {
	t := first.Call
	from := t
	for _, o := range c.copied {
		from = min(from, o.Call)
	}
	seg := dst[:0]
	if sg.fenced {
		seg = append(seg, LockOp{
			ClientId: lane,
			Input:    Input{Kind: seed, Key: first.Input.Key, Invoke: from - 1, Return: from - 1},
			Call:     from - 1,
			Output:   Output{Outcome: OK, Fence: c.fence},
			Return:   from - 1,
			token:    -1,
		})
	}
	seg = append(seg, c.copied...)
	if c.lost != nil && !sg.fenced {
		in := *c.lost
		in.Token = GhostToken
		seg = append(seg, LockOp{
			ClientId: lane,
			Input:    in,
			Call:     t,
			Output:   Output{Outcome: Info},
			Return:   t,
			token:    -1,
		})
	}
	return seg
}

// Key is one key's lock operations as EachSegment walks them, read once
// for every model that walks them.
type Key struct {
	n    int
	op   func(int) (*history.Op, int32)
	scan *keyScan
}

// NewKey reads a key's n lock operations: op(i) is its i-th, in invoke
// order, from an OpsBuilder, with its token's number among the key's
// (dense from 0). op is called again at every walk.
func NewKey(n int, op func(int) (*history.Op, int32)) *Key {
	return &Key{n: n, op: op, scan: scanKey(n, op)}
}

// Len is how many operations the key has.
func (k *Key) Len() int { return k.n }

// EachSegment pins and cuts one key's operations as Segments does, building
// them into the models' form a segment at a time: what it holds at once is
// the segment at hand and what later segments carry from before their cut,
// not the key, whose operations a soak counts in millions. end is the time
// of the history's last event. yield takes the segments in order, and
// stops the walk by returning false; a segment's arrays (its Ops in buf's)
// are reused once yield returns. EachSegment returns buf's array, grown,
// for the next walk. A key that cannot be cut as it comes (a token acquired twice,
// invokes out of order, Partitioning.Whole) is built whole first.
func (c Check) EachSegment(key *Key, end int64, buf []LockOp, yield func(Segment) bool) []LockOp {
	n, op, k := key.n, key.op, key.scan
	sg := c.sg
	if sg.p.Whole || k.reused || !k.sorted {
		lockOps, ids := make([]*history.Op, n), make([]int32, n)
		for i := range n {
			lockOps[i], ids[i] = op(i)
		}
		buf = fromLockOps(buf, lockOps, ids, end)
		for _, seg := range c.Segments(buf) {
			if !yield(seg) {
				break
			}
		}
		return buf
	}
	minSeg := sg.p.MinSegment
	if minSeg <= 0 {
		minSeg = DefaultMinSegment
	}
	lane := k.lanes.n
	cuts := newCutter(sg, k.uses, minSeg)
	var (
		carried carry
		lead    []LockOp // the segment's; none for the first
		leadBuf []LockOp
	)
	seg := buf[:0]
	for i := range n {
		o, id := op(i)
		lo := k.lockOp(o, id, end)
		pinOne(&lo, k.uses)
		if cuts.before(i, &lo) {
			if !yield(Segment{Lead: lead, Ops: seg}) {
				return seg
			}
			carried.pass(seg, i, k.uses)
			leadBuf = carried.lead(leadBuf, sg, &lo, lane)
			lead, seg = leadBuf, seg[:0]
		}
		seg = append(seg, lo)
		cuts.take(&seg[len(seg)-1])
	}
	yield(Segment{Lead: lead, Ops: seg})
	return seg
}
