package checker

import (
	"cmp"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/lockharness/lockharness/models"
)

// checkLinearizability runs porcupine over the lock operations, key by key
// and all keys at once: the lease-lock model always, the fenced-mutex model
// when some grant carries a fence. It must finish by deadline; a key whose
// check does not is unknown.
func (c *checker) checkLinearizability(deadline time.Time) {
	ops := models.FromOps(c.ops, c.end)
	keys, parts := models.ByKey(ops)
	lin := &c.res.Linearizability
	lin.Models = append(lin.Models, checkModel(LeaseLockModel, models.LeaseLock(c.res.opts.Slack), keys, parts, deadline))
	if hasFences(ops) {
		lin.Models = append(lin.Models, checkModel(FencedMutexModel, models.FencedMutex(), keys, parts, deadline))
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

func hasFences(ops []porcupine.Operation) bool {
	for _, o := range ops {
		if o.Input.(models.Input).Kind == models.Acquire && o.Output.(models.Output).Fence != 0 {
			return true
		}
	}
	return false
}

// checkModel checks every key's operations against the model at once, each
// in its own porcupine call so that the verdict names the keys that fail.
func checkModel(name string, model porcupine.Model, keys []string, parts [][]porcupine.Operation, deadline time.Time) ModelCheck {
	start := time.Now()
	m := ModelCheck{Model: name, Result: LinearOK, Keys: len(keys)}
	results := make([]porcupine.CheckResult, len(keys))
	segments := make([]int, len(keys))
	var wg sync.WaitGroup
	for i := range keys {
		m.Operations += len(parts[i])
		wg.Add(1)
		go func() {
			defer wg.Done()
			segs := model.Partition(parts[i])
			segments[i] = len(segs)
			results[i] = checkSegments(model, parts[i], segs, deadline)
		}()
	}
	wg.Wait()
	for i, r := range results {
		m.Segments += segments[i]
		switch r {
		case porcupine.Illegal:
			m.Result = LinearIllegal
			m.Failed = append(m.Failed, keys[i])
		case porcupine.Unknown:
			if m.Result == LinearOK {
				m.Result = LinearUnknown
			}
			m.Unknown = append(m.Unknown, keys[i])
		}
	}
	m.ElapsedMs = float64(time.Since(start).Microseconds()) / 1e3
	return m
}

// checkSegments checks one key whose partition into segments is already
// known. A segment whose operations, taken in the order they returned, are
// a legal sequence of the model is linearizable (that order is consistent
// with real time: an operation that returned before another was invoked
// comes first), and that is most segments of a working lock; porcupine
// searches only the others.
func checkSegments(model porcupine.Model, ops []porcupine.Operation, segments [][]porcupine.Operation, deadline time.Time) porcupine.CheckResult {
	var hard [][]porcupine.Operation
	for _, seg := range segments {
		if !inReturnOrder(model, seg) {
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

// inReturnOrder reports whether the segment's operations, in one of a few
// orders consistent with real time, are a legal sequence of the model: a
// witness that it is linearizable. False says nothing; porcupine then
// searches. The orders: by return; answers other than ok at their invoke
// (a busy acquire saw the lock held when it arrived) and ok ones at their
// return; by invoke. Each places an operation at an instant within its
// [call, return], so one that returned before another was invoked comes
// first.
func inReturnOrder(model porcupine.Model, seg []porcupine.Operation) bool {
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
