package checker

import (
	"fmt"

	"github.com/lockharness/lockharness/history"
)

// op is one client operation: its invoke and, if it finished, its
// completion. Fields that either event may carry are merged, the invoke's
// winning except where the completion is the authority (an acquire's fence
// and validity, a write's stored value).
type op struct {
	kind    string
	process history.Process
	client  int
	key     string
	token   string
	fence   int64
	ttlMs   int64
	validMs int64
	final   bool
	// outcome is ok, fail or info; an invoke that never completed is info,
	// because it may still have taken effect.
	outcome string
	// inv and done are positions in the events slice; done is -1 while the
	// operation is unfinished.
	inv, done   int
	invT, doneT int64
	// read is the counter value a write read (invoke), stored the value the
	// resource kept (ok completion).
	read, stored *int64
}

func (o *op) finished() bool { return o.done >= 0 }

// pairOps matches every completion to its process's outstanding invoke.
// Nemesis events are skipped. The result is in invoke order.
func pairOps(events []history.Event) ([]op, error) {
	ops := make([]op, 0, len(events)/2+1)
	open := make(map[history.Process]int) // process -> its outstanding op
	for i := range events {
		e := &events[i]
		if e.IsNemesis() {
			continue
		}
		switch e.Type {
		case history.Invoke:
			if j, busy := open[e.Process]; busy {
				prev := &ops[j]
				return nil, fmt.Errorf("event %d: process %s invokes %s while its %s invoked at event %d is still outstanding",
					e.Index, e.Process, e.F, prev.kind, events[prev.inv].Index)
			}
			open[e.Process] = len(ops)
			ops = append(ops, op{
				kind:    e.F,
				process: e.Process,
				client:  e.Client,
				key:     e.Key,
				token:   e.Token,
				fence:   e.Fence,
				ttlMs:   e.TTLMs,
				validMs: e.ValidMs,
				final:   e.Final,
				outcome: history.Info,
				inv:     i,
				done:    -1,
				invT:    e.Time,
				read:    e.Value,
			})
		case history.OK, history.Fail, history.Info:
			j, busy := open[e.Process]
			if !busy {
				return nil, fmt.Errorf("event %d: %s completion of %s by process %s has no outstanding invoke",
					e.Index, e.Type, e.F, e.Process)
			}
			o := &ops[j]
			if e.F != o.kind {
				return nil, fmt.Errorf("event %d: %s completion of %s by process %s does not match its outstanding %s invoked at event %d",
					e.Index, e.Type, e.F, e.Process, o.kind, events[o.inv].Index)
			}
			delete(open, e.Process)
			o.done, o.doneT, o.outcome = i, e.Time, e.Type
			o.final = o.final || e.Final
			if o.key == "" {
				o.key = e.Key
			}
			if o.token == "" {
				o.token = e.Token
			}
			if e.Fence != 0 && (o.kind == history.Acquire || o.fence == 0) {
				o.fence = e.Fence
			}
			if e.ValidMs != 0 {
				o.validMs = e.ValidMs
			}
			if e.Value != nil {
				o.stored = e.Value
			}
		default:
			return nil, fmt.Errorf("event %d: type %q is not one of invoke, ok, fail, info", e.Index, e.Type)
		}
	}
	return ops, nil
}
