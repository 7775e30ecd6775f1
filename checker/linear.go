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
	"github.com/lockharness/lockharness/internal/hugepages"
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
	checks := []named{{LeaseLockModel, models.LeaseLockCheck(c.res.opts.Slack)}}
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
	longest := 0
	for _, k := range keys {
		longest = max(longest, len(k.ops))
	}
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(runtime.NumCPU(), max(1, len(keys))) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ops := make([]models.LockOp, 0, longest) // reused: nothing keeps a key's
			if c.huge {
				hugepages.Advise(ops)
			}
			for k := range next {
				ops = keys[k].lockOps(ops, c.end)
				r := keyResult{ops: len(ops)}
				for _, m := range checks {
					start := time.Now()
					segs := m.model.Segments(ops)
					r.segments = append(r.segments, len(segs))
					r.results = append(r.results, checkSegments(m.model, segs, deadline))
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

// keyOps is one key's lock operations, and their tokens numbered from 0
// (by Op.TokenID, which is unique to a key and token): what the models
// index by.
type keyOps struct {
	name   string
	ops    []*history.Op
	tokens []int32
}

// lockOps builds the key's operations in the models' form into dst.
func (k keyOps) lockOps(dst []models.LockOp, end int64) []models.LockOp {
	return models.LockOps(dst, k.ops, k.tokens, end)
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
	byKey := make([]keyOps, len(count))
	for k, n := range count {
		byKey[k] = keyOps{name: keyNames[k], ops: make([]*history.Op, 0, n), tokens: make([]int32, 0, n)}
	}
	local := make([]int32, tokens)
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
		k.ops = append(k.ops, o)
		k.tokens = append(k.tokens, local[o.TokenID]-1)
	}
	for _, k := range byKey {
		if len(k.ops) > 0 {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b keyOps) int { return cmp.Compare(a.name, b.name) })
	return keys, fenced
}

// checkSegments checks one key whose partition into segments is already
// known. A segment with a witness (models.Check.Witnessed) is
// linearizable, and that is most segments of a working lock; porcupine
// searches only the others, a batch of at most hardBatch operations at a
// time (or one longer segment), each on every core.
func checkSegments(m models.Check, segments []models.Segment, deadline time.Time) porcupine.CheckResult {
	var hard []models.Segment
	for _, seg := range segments {
		if !m.Witnessed(seg) {
			hard = append(hard, seg)
		}
	}
	result := porcupine.Ok
	for _, batch := range batches(hard, hardBatch) {
		left := time.Until(deadline)
		if left <= 0 {
			return porcupine.Unknown
		}
		rest, parts := models.Boxed(batch)
		model := m.Porcupine
		model.Partition = func([]porcupine.Operation) [][]porcupine.Operation { return parts }
		switch porcupine.CheckOperationsTimeout(model, rest, left) {
		case porcupine.Illegal:
			return porcupine.Illegal
		case porcupine.Unknown:
			result = porcupine.Unknown
		}
	}
	return result
}

// batches cuts segments, in order, into runs of at most limit operations,
// or of one longer segment.
func batches(segs []models.Segment, limit int) [][]models.Segment {
	var out [][]models.Segment
	for len(segs) > 0 {
		n, i := segs[0].Len(), 1
		for i < len(segs) && n+segs[i].Len() <= limit {
			n += segs[i].Len()
			i++
		}
		out = append(out, segs[:i])
		segs = segs[i:]
	}
	return out
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
