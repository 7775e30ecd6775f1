package mutants

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/lockharness/lockharness/history"
)

const ms = int64(1e6)

// plantGrantInLease moves a grant into the lease before it: B's acquire is
// answered in the middle of A's certain window, as a server that forgot A's
// key would answer it. B's own failed attempts the move jumps over are
// dropped; nothing else of B's moves.
func plantGrantInLease(h *hist) []planted {
	cands := h.successive(func(a, b *history.Op) bool {
		return h.simple(a) && a.Token != b.Token && h.certEnd(a)-a.DoneT >= 10*ms
	})
	var out []planted
	for _, c := range spread(cands) {
		lat := min(c.b.DoneT-c.b.InvT, ms)
		inv := c.a.DoneT + (h.certEnd(c.a)-c.a.DoneT)/2
		if inv >= c.b.InvT {
			continue
		}
		e := h.edit()
		ok := true
		// What B's process did between its new and old acquire: only
		// failed attempts may go.
		for i := range h.ops {
			o := &h.ops[i]
			if o.Process != c.b.Process || o == c.b || (o.Finished() && o.DoneT < inv) || o.InvT >= c.b.InvT {
				continue
			}
			if o.F != history.Acquire || o.Type != history.Fail {
				ok = false
				break
			}
			e.drop[int(o.Inv)], e.drop[int(o.Done)] = true, true
		}
		if !ok {
			continue
		}
		e.events[c.b.Inv].Time, e.events[c.b.Done].Time = inv, inv+lat
		out = append(out, e.done(fmt.Sprintf("%s's grant of %s moved from %s to %s, inside %s's lease (certain from %s to %s)",
			c.b.Token, c.b.Key, secs(c.b.DoneT), secs(inv+lat), c.a.Token, secs(c.a.DoneT), secs(h.certEnd(c.a)))))
	}
	return out
}

// pair is two successive grants of a key.
type pair struct{ a, b *history.Op }

// successive are the pairs of successive grants of a key that ok takes.
func (h *hist) successive(ok func(a, b *history.Op) bool) []pair {
	var out []pair
	for _, key := range h.keys() {
		gs := h.grants[key]
		for i := 0; i+1 < len(gs); i++ {
			if ok(gs[i], gs[i+1]) {
				out = append(out, pair{gs[i], gs[i+1]})
			}
		}
	}
	return out
}

// holderAt is a grant of key other than not, certainly held over [from,
// to], or nil.
func (h *hist) holderAt(key string, not *history.Op, from, to int64) *history.Op {
	for _, g := range h.grants[key] {
		if g != not && g.Token != not.Token && h.simple(g) && g.DoneT <= from && h.certEnd(g) > to {
			return g
		}
	}
	return nil
}

// plantReleaseOfNewer adds a release of A's token that succeeds after A's
// lease expired, while a newer holder certainly held the key: a release
// that deletes someone else's key (a plain DEL).
func plantReleaseOfNewer(h *hist) []planted {
	type cand struct {
		a, newer *history.Op
		at       int64
	}
	var cands []cand
	for _, key := range h.keys() {
		for _, a := range h.grants[key] {
			if !h.simple(a) {
				continue
			}
			at := expired(a) + 5*ms
			if n := h.holderAt(key, a, at-ms, at+2*ms); n != nil {
				cands = append(cands, cand{a, n, at})
			}
		}
	}
	var out []planted
	for _, c := range spread(cands) {
		e := h.edit()
		e.op(c.a.Client, history.Release, c.a.Key, c.a.Token, c.at, c.at+ms/2, history.OK, nil)
		out = append(out, e.done(fmt.Sprintf("a release of %s (expired by %s) answered ok at %s, while %s held %s",
			c.a.Token, secs(expired(c.a)), secs(c.at), c.newer.Token, c.a.Key)))
	}
	return out
}

// plantExtendAfterExpiry adds an extend of A's token that succeeds after
// A's lease certainly expired (redsync's setnx-on-extend).
func plantExtendAfterExpiry(h *hist) []planted {
	var cands []*history.Op
	for _, key := range h.keys() {
		for _, a := range h.grants[key] {
			if h.simple(a) {
				cands = append(cands, a)
			}
		}
	}
	var out []planted
	for _, a := range spread(cands) {
		at := expired(a) + 5*ms
		e := h.edit()
		e.op(a.Client, history.Extend, a.Key, a.Token, at, at+ms/2, history.OK, func(in, _ *history.Event) { in.TTLMs = a.TTLMs })
		out = append(out, e.done(fmt.Sprintf("an extend of %s answered ok at %s, after its lease expired by %s", a.Token, secs(at), secs(expired(a)))))
	}
	return out
}

// plantExpiredWrite adds a write of A's token that the resource accepts
// after A's lease certainly expired, without checking its fence.
func plantExpiredWrite(h *hist) []planted {
	if !h.countersOK() {
		return nil
	}
	var cands []*history.Op
	for _, key := range h.keys() {
		for _, a := range h.grants[key] {
			if h.simple(a) && h.writesIdle(key, expired(a)+5*ms) && h.writesIdle(key, expired(a)+6*ms) {
				cands = append(cands, a)
			}
		}
	}
	var out []planted
	for _, a := range spread(cands) {
		at := expired(a) + 5*ms
		e := h.edit()
		// The value the counter (or stock) held at the planted write.
		var last *history.Op
		for _, w := range h.writes {
			if w.Key == a.Key && w.Type == history.OK && w.DoneT < at && (last == nil || w.Done > last.Done) {
				last = w
			}
		}
		var read int64
		if last != nil && last.Stored != nil {
			read = *last.Stored
		}
		stored := read + 1
		if e.tables != nil {
			// The ledger row goes after the rows of writes answered before.
			i := 0
			if last != nil {
				if i = e.rowOf(last) + 1; i == 0 {
					continue
				}
			}
			before := e.tables.Initial
			if i > 0 {
				before = e.tables.Ledger[i-1].QuantityAfter
			}
			read, stored = before, before-1
			row := history.LedgerRow{SKU: "abc", Client: a.Client, Token: a.Token, Fence: a.Fence, QuantityBefore: before, QuantityAfter: before - 1}
			e.shiftLedger(i, -1)
			e.tables.Ledger = slices.Insert(e.tables.Ledger, i, row)
			renumber(e.tables.Ledger)
		} else {
			pos := len(h.run.Events)
			for _, w := range h.writes {
				if w.InvT > at {
					pos = min(pos, int(w.Inv)-1)
				}
			}
			e.shiftCounter(a.Key, pos, 1)
		}
		e.op(a.Client, history.Write, a.Key, a.Token, at, at+ms/2, history.OK, func(in, done *history.Event) {
			in.Value, in.Fence = history.Int64(read), a.Fence
			done.Value, done.Fence = history.Int64(stored), a.Fence
		})
		out = append(out, e.done(fmt.Sprintf("a write of %s accepted at %s, after its lease expired by %s", a.Token, secs(at), secs(expired(a)))))
	}
	return out
}

// renumber gives ledger rows the sequence numbers of their order.
func renumber(rows []history.LedgerRow) {
	for i := range rows {
		rows[i].Seq = int64(i + 1)
	}
}

// plantFencesReordered swaps the fences of two successive grants of a key,
// and of everything written under them: the lock handed the later holder
// the lower fence.
func plantFencesReordered(h *hist) []planted {
	cands := h.successive(func(a, b *history.Op) bool { return a.Fence > 0 && b.Fence > a.Fence && a.DoneT < b.InvT })
	var out []planted
	for _, c := range spread(cands) {
		e := h.edit()
		swap := map[string]int64{c.a.Token: c.b.Fence, c.b.Token: c.a.Fence}
		for i := range e.events {
			ev := &e.events[i]
			if f, ok := swap[ev.Token]; ok && ev.Key == c.a.Key && ev.Fence != 0 {
				ev.Fence = f
			}
		}
		if e.tables != nil {
			for i := range e.tables.Ledger {
				if f, ok := swap[e.tables.Ledger[i].Token]; ok {
					e.tables.Ledger[i].Fence = f
				}
			}
		}
		out = append(out, e.done(fmt.Sprintf("fences of %s (%d) and %s (%d) swapped", c.a.Token, c.a.Fence, c.b.Token, c.b.Fence)))
	}
	return out
}

// plantRefusal turns an accepted write of the one legitimate holder (its
// lease certainly live from invoke to answer, every other grant of the key
// certainly over or not yet asked for) into a refusal.
func plantRefusal(h *hist) []planted {
	if !h.countersOK() {
		return nil
	}
	var cands []*history.Op
	for _, w := range h.writes {
		if w.Type != history.OK || w.Token == "" {
			continue
		}
		g := h.grantOf(w)
		if g == nil || !h.simple(g) || g.DoneT > w.InvT || w.DoneT >= h.certEnd(g) || !h.writesIdle(w.Key, w.DoneT+1) {
			continue
		}
		alone := true
		for _, o := range h.grants[w.Key] {
			if o != g && o.InvT < w.DoneT && h.mayEnd(o) > w.InvT {
				alone = false
			}
		}
		if alone {
			cands = append(cands, w)
		}
	}
	var out []planted
	for _, w := range spread(cands) {
		e := h.edit()
		if e.tables != nil {
			i := e.rowOf(w)
			if i < 0 {
				continue
			}
			e.shiftLedger(i+1, 1)
			e.tables.Ledger = slices.Delete(e.tables.Ledger, i, i+1)
			renumber(e.tables.Ledger)
		} else {
			e.shiftCounter(w.Key, int(w.Done), -1)
		}
		d := &e.events[w.Done]
		d.Type, d.Reason, d.Error, d.Value = history.Fail, history.ReasonRejected, "a planted refusal", nil
		out = append(out, e.done(fmt.Sprintf("%s's write at %s refused, its lease certainly live and no other grant possibly so", w.Token, secs(w.InvT))))
	}
	return out
}

// grantOf is the grant a write claims.
func (h *hist) grantOf(w *history.Op) *history.Op {
	for _, g := range h.grants[w.Key] {
		if g.Token == w.Token {
			return g
		}
	}
	return nil
}

// plantLostIncrement makes a write start from the value before the
// previous write, which it then overwrites: that write's increment (or
// sale) is lost.
func plantLostIncrement(h *hist) []planted {
	if !h.countersOK() {
		return nil
	}
	if h.run.Tables != nil {
		var out []planted
		n := len(h.run.Tables.Ledger)
		for _, i := range spread(seq(1, n)) {
			e := h.edit()
			e.shiftLedger(i, 1)
			out = append(out, e.done(fmt.Sprintf("ledger row %d starts from the stock before row %d", i+1, i)))
		}
		return out
	}
	type cand struct{ prev, w *history.Op }
	var cands []cand
	last := map[string]*history.Op{}
	accepted := slices.Clone(h.writes)
	slices.SortFunc(accepted, func(a, b *history.Op) int { return cmp.Compare(a.Done, b.Done) })
	for _, w := range accepted {
		if w.Type != history.OK || w.Read == nil || w.Stored == nil {
			continue
		}
		if p := last[w.Key]; p != nil && p.Read != nil && p.Stored != nil && p.DoneT < w.InvT {
			cands = append(cands, cand{p, w})
		}
		last[w.Key] = w
	}
	var out []planted
	for _, c := range spread(cands) {
		e := h.edit()
		e.shiftCounter(c.w.Key, int(c.w.Inv), -1)
		e.events[c.w.Inv].Value = history.Int64(*c.prev.Read)
		e.events[c.w.Done].Value = history.Int64(*c.prev.Stored)
		out = append(out, e.done(fmt.Sprintf("%s's write at %s read %d, the value before %s's write, and stored %d over it",
			c.w.Token, secs(c.w.InvT), *c.prev.Read, c.prev.Token, *c.prev.Stored)))
	}
	return out
}

func seq(from, to int) []int {
	var s []int
	for i := from; i < to; i++ {
		s = append(s, i)
	}
	return s
}

// plantGrantWhileDown adds a grant, and its release, answered while the
// history says every node of the lock was down (history.Outage).
func plantGrantWhileDown(h *hist) []planted {
	type span struct{ from, until int64 }
	var cands []span
	for _, ev := range h.run.Events {
		for _, d := range ev.Down {
			if d.Of == 1 && d.Until-d.From >= 3*ms {
				cands = append(cands, span{d.From, d.Until})
			}
		}
	}
	ks := h.keys()
	if len(ks) == 0 {
		return nil
	}
	key := ks[0]
	var out []planted
	for _, s := range spread(cands) {
		at := s.from + (s.until-s.from)/3
		e := h.edit()
		token := fmt.Sprintf("planted-%d", at)
		e.op(0, history.Acquire, key, token, at, at+ms/4, history.OK, func(in, _ *history.Event) { in.TTLMs = 1000 })
		e.op(0, history.Release, key, token, at+ms/2, at+3*ms/4, history.OK, nil)
		out = append(out, e.done(fmt.Sprintf("a grant of %s answered at %s, while the one node was down from %s until %s", key, secs(at+ms/4), secs(s.from), secs(s.until))))
	}
	return out
}

// widen moves the invoke of operations of kind f (every kind: "") earlier
// and their completion later, each halfway to the event next to it, so
// that every instant they could have taken effect at stays possible and
// no two events change order: a checker must find the same.
func widen(f string) func(h *hist) []planted {
	return func(h *hist) []planted {
		var cands []*history.Op
		for i := range h.ops {
			if o := &h.ops[i]; (f == "" || o.F == f) && o.Finished() && o.Type != history.Info {
				cands = append(cands, o)
			}
		}
		if len(cands) == 0 {
			return nil
		}
		if f == "" {
			e := h.edit()
			for _, o := range cands {
				e.widen(o)
			}
			return []planted{e.done(fmt.Sprintf("all %d completed operations widened", len(cands)))}
		}
		var out []planted
		for _, o := range spread(cands) {
			e := h.edit()
			e.widen(o)
			out = append(out, e.done(fmt.Sprintf("%s %s widened from [%s, %s]", o.F, o.Token, secs(o.InvT), secs(o.DoneT))))
		}
		return out
	}
}

// widen moves o's invoke halfway to the event before it and its
// completion halfway to the event after it, in the run as recorded.
func (e *edit) widen(o *history.Op) {
	ev := e.h.run.Events
	if o.Inv > 0 {
		e.events[o.Inv].Time = ev[o.Inv].Time - (ev[o.Inv].Time-ev[o.Inv-1].Time)/2
	}
	if int(o.Done)+1 < len(ev) {
		e.events[o.Done].Time = ev[o.Done].Time + (ev[o.Done+1].Time-ev[o.Done].Time)/2
	}
}

// plantStaleRefusal adds a write of A's token, sent after A's lease
// certainly expired, that the resource refuses: a fence doing its job,
// which must not count against the run.
func plantStaleRefusal(h *hist) []planted {
	var cands []*history.Op
	for _, key := range h.keys() {
		for _, a := range h.grants[key] {
			if h.simple(a) && a.Fence > 0 {
				cands = append(cands, a)
			}
		}
	}
	var out []planted
	for _, a := range spread(cands) {
		at := expired(a) + 5*ms
		e := h.edit()
		e.op(a.Client, history.Write, a.Key, a.Token, at, at+ms/2, history.Fail, func(in, done *history.Event) {
			in.Fence, done.Fence = a.Fence, a.Fence
			done.Reason, done.Error, done.FenceChecked = history.ReasonRejected, "a planted refusal of an expired lease", true
		})
		out = append(out, e.done(fmt.Sprintf("a write of %s sent at %s, after its lease expired by %s, refused", a.Token, secs(at), secs(expired(a)))))
	}
	return out
}
