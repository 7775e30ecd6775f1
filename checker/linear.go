package checker

import (
	"cmp"
	"fmt"
	"maps"
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
	byKey := map[string][]*history.Op{}
	fenced := false
	for i := range c.ops {
		o := &c.ops[i]
		if !o.Lease() {
			continue
		}
		byKey[o.Key] = append(byKey[o.Key], o)
		fenced = fenced || o.F == history.Acquire && o.Finished() && o.Type != history.Info && o.Fence != 0
	}
	keys := slices.Sorted(maps.Keys(byKey))
	type named struct {
		name  string
		model porcupine.Model
	}
	checks := []named{{LeaseLockModel, models.LeaseLock(c.res.opts.Slack)}}
	if fenced {
		checks = append(checks, named{FencedMutexModel, models.FencedMutex()})
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
			for k := range next {
				ops := models.FromLockOps(byKey[keys[k]], c.end)
				r := keyResult{ops: len(ops)}
				for _, m := range checks {
					start := time.Now()
					segs := m.model.Partition(ops)
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
				mc.Failed = append(mc.Failed, key)
			case porcupine.Unknown:
				if mc.Result == LinearOK {
					mc.Result = LinearUnknown
				}
				mc.Unknown = append(mc.Unknown, key)
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

// checkSegments checks one key whose partition into segments is already
// known. A segment with a witness (witnessed) is linearizable, and that is
// most segments of a working lock; porcupine searches only the others.
func checkSegments(model porcupine.Model, segments [][]porcupine.Operation, deadline time.Time) porcupine.CheckResult {
	var hard [][]porcupine.Operation
	for _, seg := range segments {
		if !witnessed(model, seg) {
			hard = append(hard, seg)
		}
	}
	if len(hard) == 0 {
		return porcupine.Ok
	}
	left := time.Until(deadline)
	if left <= 0 {
		return porcupine.Unknown
	}
	var rest []porcupine.Operation
	for _, seg := range hard {
		rest = append(rest, seg...)
	}
	model.Partition = func([]porcupine.Operation) [][]porcupine.Operation { return hard }
	return porcupine.CheckOperationsTimeout(model, rest, left)
}

// witnessed reports whether the segment's operations, in one of a few
// orders consistent with real time, are a legal sequence of the model: a
// witness that it is linearizable. False says nothing; porcupine then
// searches. The orders: by return; answers other than ok at their invoke
// (a busy acquire saw the lock held when it arrived) and ok ones at their
// return; by invoke. Each places an operation at an instant within its
// [call, return], so one that returned before another was invoked comes
// first.
func witnessed(model porcupine.Model, seg []porcupine.Operation) bool {
	at := []func(o porcupine.Operation) int64{
		func(o porcupine.Operation) int64 { return o.Return },
		func(o porcupine.Operation) int64 {
			if out, ok := o.Output.(models.Output); ok && out.Outcome != models.OK {
				return o.Call
			}
			return o.Return
		},
		func(o porcupine.Operation) int64 { return o.Call },
	}
	order := slices.Clone(seg)
	for _, point := range at {
		slices.SortStableFunc(order, func(a, b porcupine.Operation) int {
			if pa, pb := point(a), point(b); pa != pb {
				return cmp.Compare(pa, pb)
			}
			return cmp.Compare(a.Call, b.Call)
		})
		if legalSequence(model, order) {
			return true
		}
	}
	return false
}

func legalSequence(model porcupine.Model, order []porcupine.Operation) bool {
	state := model.Init()
	for _, o := range order {
		ok, next := model.Step(state, o.Input, o.Output)
		if !ok {
			return false
		}
		state = next
	}
	return true
}

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
