package checker

import (
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

// pairOps builds the operations of a history (see history.Pairs), in
// invoke order.
func pairOps(events []history.Event) ([]op, error) {
	pairs, err := history.Pairs(events)
	if err != nil {
		return nil, err
	}
	ops := make([]op, len(pairs))
	for n, p := range pairs {
		e := &events[p.Inv]
		o := &ops[n]
		*o = op{kind: e.F, process: e.Process, client: e.Client, key: e.Key, token: e.Token,
			fence: e.Fence, ttlMs: e.TTLMs, validMs: e.ValidMs, final: e.Final,
			outcome: history.Info, inv: p.Inv, done: -1, invT: e.Time, read: e.Value}
		if p.Done < 0 {
			continue
		}
		c := &events[p.Done]
		o.done, o.doneT, o.outcome = p.Done, c.Time, c.Type
		o.final = o.final || c.Final
		if o.key == "" {
			o.key = c.Key
		}
		if o.token == "" {
			o.token = c.Token
		}
		if c.Fence != 0 && (o.kind == history.Acquire || o.fence == 0) {
			o.fence = c.Fence
		}
		if c.ValidMs != 0 {
			o.validMs = c.ValidMs
		}
		if c.Value != nil {
			o.stored = c.Value
		}
	}
	return ops, nil
}
