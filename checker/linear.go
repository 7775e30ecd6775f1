package checker

import (
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
	ops := models.FromOps(c.events, c.ops)
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

// checkSegments runs porcupine on one key whose partition into segments is
// already known.
func checkSegments(model porcupine.Model, ops []porcupine.Operation, segments [][]porcupine.Operation, deadline time.Time) porcupine.CheckResult {
	left := time.Until(deadline)
	if left <= 0 {
		return porcupine.Unknown
	}
	model.Partition = func([]porcupine.Operation) [][]porcupine.Operation { return segments }
	return porcupine.CheckOperationsTimeout(model, ops, left)
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
