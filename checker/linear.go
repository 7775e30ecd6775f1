package checker

import (
	"cmp"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/models"
)

// checkLinearizability runs porcupine over the lock operations, key by key:
// the lease-lock model always, the fenced-mutex model when some grant
// carries a fence. It must finish by deadline; a key whose check does not
// is unknown. Keys are checked as many at once as there are cores, each
// built into porcupine's operations only while it is checked, so that a
// soak's history is never all in porcupine's form at once.
func (c *checker) checkLinearizability(deadline time.Time) {
	keys, fenced := c.lockOpsByKey()
	type named struct {
		name  string
		model models.Check
	}
	checks := []named{{LeaseLockModel, models.LeaseLockCheckOutliving(c.res.opts.Slack, c.res.opts.Outlive)}}
	if fenced {
		checks = append(checks, named{FencedMutexModel, models.FencedMutexCheck()})
	}
	type keyResult struct {
		ops      int
		segments []int
		results  []porcupine.CheckResult
		elapsed  []time.Duration
	}
	results := make([]keyResult, len(keys))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(runtime.NumCPU(), max(1, len(keys))) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf []models.LockOp // reused: nothing keeps a key's segments
			for k := range next {
				key := models.NewKey(keys[k].len(), keys[k].op)
				r := keyResult{ops: key.Len()}
				for _, m := range checks {
					start := time.Now()
					s := newSearch(m.model, deadline)
					segments := 0
					// Every segment is counted (ModelCheck.Segments), also
					// those after the search stopped, which it skips.
					buf = m.model.EachSegment(key, c.end, buf, func(seg models.Segment) bool {
						segments++
						s.add(seg)
						return true
					})
					r.segments = append(r.segments, segments)
					r.results = append(r.results, s.done())
					r.elapsed = append(r.elapsed, time.Since(start))
				}
				results[k] = r
			}
		}()
	}
	for k := range keys {
		next <- k
	}
	close(next)
	wg.Wait()

	lin := &c.res.Linearizability
	for j, m := range checks {
		mc := ModelCheck{Model: m.name, Result: LinearOK, Keys: len(keys)}
		var elapsed time.Duration
		for k, key := range keys {
			r := results[k]
			mc.Operations += r.ops
			mc.Segments += r.segments[j]
			elapsed += r.elapsed[j]
			switch r.results[j] {
			case porcupine.Illegal:
				mc.Result = LinearIllegal
				mc.Failed = append(mc.Failed, key.name)
			case porcupine.Unknown:
				if mc.Result == LinearOK {
					mc.Result = LinearUnknown
				}
				mc.Unknown = append(mc.Unknown, key.name)
			}
		}
		mc.ElapsedMs = float64(elapsed.Microseconds()) / 1e3
		lin.Models = append(lin.Models, mc)
	}
	lin.Result = LinearOK
	for _, m := range lin.Models {
		switch {
		case m.Result == LinearIllegal:
			lin.Result = LinearIllegal
		case m.Result == LinearUnknown && lin.Result == LinearOK:
			lin.Result = LinearUnknown
		}
	}
}

// keyOps is one key's lock operations, in invoke order: positions in the
// history's operations, and each token's number among its key's (by
// Op.TokenID, which is unique to a key and token), what the models index
// by. Four bytes an operation: a soak's keys hold millions.
type keyOps struct {
	name string
	all  []history.Op
	at   []int32
	// local is one array for every key's tokens: TokenIDs are unique
	// across keys, so no key needs one of its own.
	local []int32
}

func (k keyOps) len() int { return len(k.at) }

// op is the key's i-th operation and its token's number.
func (k keyOps) op(i int) (*history.Op, int32) {
	o := &k.all[k.at[i]]
	return o, k.local[o.TokenID]
}

// lockOps builds the whole key in the models' form into dst, for a page
// that draws it.
func (k keyOps) lockOps(dst []models.LockOp, end int64) []models.LockOp {
	ops, tokens := make([]*history.Op, k.len()), make([]int32, k.len())
	for i := range ops {
		ops[i], tokens[i] = k.op(i)
	}
	return models.LockOps(dst, ops, tokens, end)
}

// lockOpsByKey picks out each key's lock operations, by key name, and
// says whether some grant carries a fence.
func (c *checker) lockOpsByKey() (keys []keyOps, fenced bool) {
	return lockOpsByKey(c.ops, c.keyNames, c.tokens)
}

// lockOpsByKey is the checker's lockOpsByKey for operations from an
// OpsBuilder: keyNames names each KeyID, and tokens bounds every TokenID.
func lockOpsByKey(ops []history.Op, keyNames []string, tokens int) (keys []keyOps, fenced bool) {
	// Counted first, so that each list is allocated once.
	count := make([]int, len(keyNames))
	for i := range ops {
		if o := &ops[i]; o.Lease() {
			count[o.KeyID]++
			fenced = fenced || o.F == history.Acquire && o.Finished() && o.Type != history.Info && o.Fence != 0
		}
	}
	local := make([]int32, tokens)
	byKey := make([]keyOps, len(count))
	for k, n := range count {
		byKey[k] = keyOps{name: keyNames[k], all: ops, at: make([]int32, 0, n), local: local}
	}
	seen := make([]int32, len(count))
	for i := range ops {
		o := &ops[i]
		if !o.Lease() {
			continue
		}
		if local[o.TokenID] == 0 {
			seen[o.KeyID]++
			local[o.TokenID] = seen[o.KeyID]
		}
		k := &byKey[o.KeyID]
		k.at = append(k.at, int32(i))
	}
	for i := range local {
		local[i]-- // numbered from 1 above, so that 0 was "not yet"
	}
	for _, k := range byKey {
		if k.len() > 0 {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b keyOps) int { return cmp.Compare(a.name, b.name) })
	return keys, fenced
}

// search checks one key's segments as they come (models.Check.EachSegment).
// A segment with a witness (models.Check.Witnessed) is linearizable, and
// that is most segments of a working lock; porcupine searches only the
// others, a batch of at most hardBatch operations at a time (or one longer
// segment), each on every core, by the deadline.
type search struct {
	deadline time.Time
	limit    int
	// witnessed and porcupine are the model's; a test's may count instead.
	witnessed func(models.Segment) bool
	porcupine func(batch []models.Segment, timeout time.Duration) porcupine.CheckResult
	batch     []models.Segment
	n         int
	result    porcupine.CheckResult
	stopped   bool
}

func newSearch(m models.Check, deadline time.Time) *search {
	check := func(batch []models.Segment, timeout time.Duration) porcupine.CheckResult {
		ops, parts := models.Boxed(batch)
		model := m.Porcupine
		model.Partition = func([]porcupine.Operation) [][]porcupine.Operation { return parts }
		return porcupine.CheckOperationsTimeout(model, ops, timeout)
	}
	return &search{deadline: deadline, limit: hardBatch, witnessed: m.Witnessed, porcupine: check, result: porcupine.Ok}
}

// add takes the next segment, keeping a copy if porcupine must search it,
// and reports whether more may change the result: once the search has
// stopped (a segment not linearizable, the deadline) it takes no more.
func (s *search) add(seg models.Segment) bool {
	if s.stopped {
		return false
	}
	if s.witnessed(seg) {
		return true
	}
	if s.n > 0 && s.n+seg.Len() > s.limit && !s.flush() {
		return false
	}
	s.batch = append(s.batch, seg.Flat())
	s.n += seg.Len()
	return true
}

// flush checks the batch, and reports whether the search goes on: it
// stops at a segment that is not linearizable, or at the deadline.
func (s *search) flush() bool {
	if len(s.batch) == 0 {
		return true
	}
	batch := s.batch
	s.batch, s.n = nil, 0
	// Taken once: porcupine reads a timeout of 0 or less as none.
	left := time.Until(s.deadline)
	if left <= 0 {
		s.result, s.stopped = porcupine.Unknown, true
		return false
	}
	switch s.porcupine(batch, left) {
	case porcupine.Illegal:
		s.result, s.stopped = porcupine.Illegal, true
		return false
	case porcupine.Unknown:
		s.result = porcupine.Unknown
	}
	return true
}

// done checks what is left and returns the key's result.
func (s *search) done() porcupine.CheckResult {
	if !s.stopped {
		s.flush()
	}
	return s.result
}

// hardBatch bounds the operations porcupine's form holds at once: it
// boxes every input and output (about 200 bytes an operation), and a
// soak under faults leaves a quarter of its key's operations to search
// (75,000 of 270,000 in 25 minutes: 15 MB at once before the batches).
const hardBatch = 16_384

// disagreements says where porcupine's lease-lock verdict and the overlap
// audit disagree about a key: each saw something the other did not, and
// both are reported.
func (c *checker) disagreements() []string {
	var notes []string
	var lease *ModelCheck
	for i := range c.res.Linearizability.Models {
		if c.res.Linearizability.Models[i].Model == LeaseLockModel {
			lease = &c.res.Linearizability.Models[i]
		}
	}
	if lease == nil {
		return nil
	}
	failed := make(map[string]bool)
	for _, key := range lease.Failed {
		failed[key] = true
		if n := c.perKey[anomalyKey{DoubleGrant, key}]; n == 0 {
			note := fmt.Sprintf("porcupine: not linearizable on %s (lease-lock model); overlap audit: 0 double grants on %s", key, key)
			if f := c.perKey[anomalyKey{ForeignRelease, key}]; f > 0 {
				note += fmt.Sprintf(" (foreign-release audit: %d)", f)
			}
			notes = append(notes, note)
		}
	}
	unknown := make(map[string]bool)
	for _, key := range lease.Unknown {
		unknown[key] = true
	}
	var keys []string
	for k := range c.perKey {
		if k.anomaly == DoubleGrant {
			keys = append(keys, k.key)
		}
	}
	slices.Sort(keys)
	for _, key := range keys {
		if !failed[key] && !unknown[key] {
			notes = append(notes, fmt.Sprintf("porcupine: linearizable on %s (lease-lock model); overlap audit: %s on %s",
				key, count(int64(c.perKey[anomalyKey{DoubleGrant, key}]), "double grant"), key))
		}
	}
	return notes
}
