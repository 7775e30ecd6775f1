package checker

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/lockharness/lockharness/history"
)

// marginOf is the run's margin of prop, failing the test when it has none.
func marginOf(t *testing.T, r Result, prop string) Margin {
	t.Helper()
	for _, m := range r.Margins {
		if m.Property == prop {
			return m
		}
	}
	t.Fatalf("no %s margin in %+v", prop, r.Margins)
	return Margin{}
}

func noMargin(t *testing.T, r Result, prop string) {
	t.Helper()
	for _, m := range r.Margins {
		if m.Property == prop {
			t.Fatalf("a %s margin where none was measured: %+v", prop, m)
		}
	}
}

func wantMs(t *testing.T, m Margin, ms float64, says ...string) {
	t.Helper()
	if math.Abs(m.Ms-ms) > 0.0005 {
		t.Errorf("%s margin %.3f ms, want %.3f: %s", m.Property, m.Ms, ms, m.Says)
	}
	for _, s := range says {
		if !strings.Contains(m.Says, s) {
			t.Errorf("%s margin says %q, want it to say %q", m.Property, m.Says, s)
		}
	}
}

// A grant after a lease ran out is a close call by how long after; one
// after a release is none; one before the end is the double grant.
func TestExclusivityMargin(t *testing.T) {
	t.Run("after expiry", func(t *testing.T) {
		h := newHist()
		h.acquire(0, "k", "a", 0, 2, ok)
		h.acquire(1, "k", "b", 1010, 1015, ok)
		r := h.check(t, Options{})
		expect(t, r, nil)
		wantMs(t, marginOf(t, r, Exclusivity), 15, "15.0 ms after client 0", "not released")
		if MarginsDisagree(r.Margins, r.Anomalies) != "" {
			t.Error(MarginsDisagree(r.Margins, r.Anomalies))
		}
	})
	t.Run("after a release", func(t *testing.T) {
		h := newHist()
		h.acquire(0, "k", "a", 0, 2, ok)
		h.release(0, "k", "a", 100, 101, ok)
		h.acquire(1, "k", "b", 101, 102, ok)
		noMargin(t, h.check(t, Options{}), Exclusivity)
	})
	t.Run("slack counts", func(t *testing.T) {
		h := newHist()
		h.acquire(0, "k", "a", 0, 2, ok)
		h.acquire(1, "k", "b", 1010, 1015, ok)
		wantMs(t, marginOf(t, h.check(t, Options{Slack: 10e6}), Exclusivity), 25)
	})
	t.Run("double grant", func(t *testing.T) {
		h := newHist()
		h.acquire(0, "k", "a", 0, 2, ok)
		h.acquire(1, "k", "b", 500, 505, ok)
		r := h.check(t, Options{})
		expect(t, r, map[string]int{DoubleGrant: 1})
		wantMs(t, marginOf(t, r, Exclusivity), -495, "495.0 ms before client 0")
		if MarginsDisagree(r.Margins, r.Anomalies) != "" {
			t.Error(MarginsDisagree(r.Margins, r.Anomalies))
		}
	})
}

// A write is measured against when its lease had certainly expired; the
// writes of a holder superseded without a release against the next
// holder's.
func TestWriteMargins(t *testing.T) {
	h := newHist()
	h.acquire(0, "k", "a", 0, 2, ok)
	h.write(0, "k", "a", 100, 101, ok, 0, 1)
	h.acquire(1, "k", "b", 1010, 1012, ok)
	h.write(1, "k", "b", 1020, 1021, ok, 1, 2)
	r := h.check(t, Options{})
	expect(t, r, nil)
	// hi is the grant's answer plus its ttl: 1002 ms for a, 2012 for b.
	wantMs(t, marginOf(t, r, WriteValidity), 901, "before its lease had certainly expired")
	wantMs(t, marginOf(t, r, FenceOrder), 920, "client 0 (process 0)'s last write", "first of client 1")

	// The first holder writes again after the second: stale, and expired.
	h.write(0, "k", "a", 1030, 1031, ok, 2, 3)
	r = h.check(t, Options{})
	expect(t, r, map[string]int{StaleWrite: 1, ExpiredWrite: 1})
	wantMs(t, marginOf(t, r, FenceOrder), -10, "accepted client 0 (process 0)'s write at 1.031 s, 10.0 ms after")
	wantMs(t, marginOf(t, r, WriteValidity), -29, "after its lease had certainly expired")
	if d := MarginsDisagree(r.Margins, r.Anomalies); d != "" {
		t.Error(d)
	}
}

// A release or extend sent after its lease had expired is measured
// against the lease another client certainly held on the key: room while
// it was held, none where the key may have been free.
func TestOwnershipMargin(t *testing.T) {
	t.Run("in time", func(t *testing.T) {
		h := newHist()
		h.acquire(0, "k", "a", 0, 2, ok)
		h.release(0, "k", "a", 100, 101, ok)
		noMargin(t, h.check(t, Options{}), Ownership)
	})
	t.Run("while another held", func(t *testing.T) {
		h := newHist()
		h.acquire(0, "k", "a", 0, 2, ok)
		h.acquire(1, "k", "b", 1010, 1012, ok)
		h.release(0, "k", "a", 1200, 1201, fail)
		h.release(1, "k", "b", 1500, 1501, ok)
		r := h.check(t, Options{})
		expect(t, r, nil)
		wantMs(t, marginOf(t, r, Ownership), 299, "client 0 (process 0)'s release of k, sent at 1.200 s after its lease had certainly expired by 1.002 s",
			"was answered (fail) at 1.201 s, 299.0 ms before client 1 (process 1)'s lease on it was certainly over")
	})
	t.Run("after the other released", func(t *testing.T) {
		h := newHist()
		h.acquire(0, "k", "a", 0, 2, ok)
		h.acquire(1, "k", "b", 1010, 1012, ok)
		h.release(1, "k", "b", 1500, 1501, ok)
		h.extend(0, "k", "a", 1600, 1601, ok, 1000)
		r := h.check(t, Options{})
		expect(t, r, map[string]int{ForeignRelease: 1})
		wantMs(t, marginOf(t, r, Ownership), -101, "extend of k", "101.0 ms after the last moment client 1 (process 1)'s lease on it was certainly held", "the key may have been free")
		if d := MarginsDisagree(r.Margins, r.Anomalies); d != "" {
			t.Error(d)
		}
	})
	t.Run("no other grant", func(t *testing.T) {
		h := newHist()
		h.acquire(0, "k", "a", 0, 2, ok)
		h.release(0, "k", "a", 1500, 1501, fail)
		wantMs(t, marginOf(t, h.check(t, Options{}), Ownership), -499, "with no other grant of the key before it: the key may have been free for 499.0 ms")
	})
}

// promotion builds a history in which client 0's grant was probed on n1
// (and on n2 when replicated) and n2 then replaced n1 at 500 ms.
func promotion(replicated bool) []history.Event {
	h := newHist()
	h.acquire(0, "k", "a", 0, 2, ok)
	n2 := history.Copy{Node: "n2", Role: "replica", Holds: history.HoldsAbsent}
	if replicated {
		n2.Holds = history.HoldsToken
	}
	h.events = append(h.events,
		&history.Event{Time: 3e6, Type: history.Info, Process: history.Nemesis, F: history.GrantSeen, Phase: history.Instant, Key: "k", Token: "a",
			Facts: &history.Facts{Grant: &history.ProbedGrant{Client: 0}, Copies: []history.Copy{{Node: "n1", Role: "primary", Holds: history.HoldsToken}, n2}}},
		&history.Event{Time: 500e6, Type: history.Info, Process: history.Nemesis, F: "switch-master", Phase: history.Instant,
			Facts: &history.Facts{Nodes: []string{"n2"}, Replaced: "n1"}})
	events := h.build()
	for i := range events {
		if f := events[i].Facts; f != nil && f.Grant != nil {
			f.Grant.Event = 1 // the acquire's answer
		}
	}
	return events
}

func TestReplicationMargin(t *testing.T) {
	r, err := Check(promotion(true), Options{})
	if err != nil {
		t.Fatal(err)
	}
	wantMs(t, marginOf(t, r, Replication), 497, "n2 was promoted at 0.500 s", "found on it 497.0 ms before")
	r, err = Check(promotion(false), Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Certainly live until 1000 ms: 500 ms past the promotion.
	wantMs(t, marginOf(t, r, Replication), -500, "did not find on it", "500.0 ms longer")
}

func TestClockMargin(t *testing.T) {
	for _, tc := range []struct {
		by   int64
		want float64
		says string
	}{
		{4e9, -3600, "the move ate the rest of it, 3600.0 ms more"},
		{200e6, 200, "200.0 ms to spare"},
		{-4e9, math.NaN(), ""},
	} {
		h := newHist()
		h.acquire(0, "k", "a", 0, 2, ok)
		facts := &history.Facts{Nodes: []string{"n1"}, Clock: &history.ClockMove{ByNs: tc.by}}
		h.events = append(h.events,
			&history.Event{Time: 600e6, Type: history.Info, Process: history.Nemesis, F: "clock-jump", Phase: history.Start, Facts: facts},
			&history.Event{Time: 700e6, Type: history.Info, Process: history.Nemesis, F: "clock-jump", Phase: history.End, Facts: facts})
		r := h.check(t, Options{})
		if math.IsNaN(tc.want) {
			noMargin(t, r, Clock)
			continue
		}
		wantMs(t, marginOf(t, r, Clock), tc.want, "400.0 ms certainly left", "n1's clock moved", tc.says)
	}
}

// A margin is never rounded to zero from below: negative stays broken.
func TestMarginMsKeepsTheSign(t *testing.T) {
	for ns, want := range map[int64]float64{-1: -0.001, -499: -0.001, 0: 0, 499: 0, 1_500_000: 1.5, -2_000_400: -2} {
		if got := marginMs(ns); got != want {
			t.Errorf("marginMs(%d) = %v, want %v", ns, got, want)
		}
	}
}

// The sweep that finds each late use's longest-held other lease agrees with
// scanning every lease of the key, ties and a use's own token's leases
// included, on random leases of few tokens and few distinct ends.
func TestHeldLongestBeforeIsTheScan(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for round := range 300 {
		c := &checker{leases: map[string][]*lease{}}
		tokens := []string{"", "a", "b", "c", "d"}
		for _, key := range []string{"k1", "k2"} {
			var start int64
			for range rng.IntN(12) {
				start += int64(rng.IntN(3))
				tok := tokens[rng.IntN(len(tokens))]
				acq := &history.Op{OpKind: &history.OpKind{Key: key}, Token: tok}
				c.leases[key] = append(c.leases[key], &lease{acq: acq, start: start, certEnd: start + int64(rng.IntN(4))})
			}
		}
		for range rng.IntN(10) {
			key := []string{"k1", "k2"}[rng.IntN(2)]
			ls := c.leases[key]
			if len(ls) == 0 {
				continue
			}
			own := ls[rng.IntN(len(ls))].acq
			if own.Token == "" {
				continue
			}
			u := &history.Op{OpKind: &history.OpKind{Key: key}, Token: own.Token, InvT: int64(rng.IntN(30))}
			c.lateUses = append(c.lateUses, foreignUse{use: u, acq: own})
		}
		got := c.heldLongestBefore()
		for i, f := range c.lateUses {
			var want *lease
			for _, l := range c.leases[f.use.Key] {
				if l.acq == f.acq || l.start > f.use.InvT || (l.acq.Token != "" && l.acq.Token == f.use.Token) {
					continue
				}
				if want == nil || l.certEnd > want.certEnd {
					want = l
				}
			}
			if got[i] != want {
				t.Fatalf("round %d, use %d (%s at %d): the sweep found %+v, the scan %+v", round, i, f.use.Token, f.use.InvT, got[i], want)
			}
		}
	}
}
