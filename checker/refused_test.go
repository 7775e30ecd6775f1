package checker

import (
	"testing"
	"time"

	"github.com/lockharness/lockharness/history"
)

const slack2 = 2 * time.Millisecond

func TestRefusedWriteOfTheOneLegitimateHolder(t *testing.T) {
	// A's lease certainly covers [0.005 s, 0.998 s) and nobody else was
	// granted the lock: the resource had no newer fence to refuse it for.
	h := newHist()
	h.acquire(0, key, "A", 0, 5, ok).fence(7)
	h.write(0, key, "A", 100, 110, fail, 0, 0).fence(7).rejected("fence 7 is below the highest accepted fence 9")
	h.release(0, key, "A", 120, 122, ok)
	r := h.check(t, Options{Slack: slack2})
	expect(t, r, map[string]int{RefusedWrite: 1})
	if r.Fencing.Rejected != 1 {
		t.Errorf("fencing.rejected %d, want 1", r.Fencing.Rejected)
	}
	mentions(t, finding(t, r, RefusedWrite).Narrative,
		"0.005 s client 0 (process 0) acquired lock:a token A (fence 7), certainly held until 0.120 s (release asked at 0.120 s)",
		"0.100 s it sent a write with fence 7, which the resource refused at 0.110 s",
		"no other grant of lock:a that could have made it refuse may have been live (none from the write's invoke at 0.100 s to the refusal at 0.110 s)",
		"the resource had accepted no write of lock:a before it",
		"grants of lock:a: 0.005 s client 0 (process 0) token A (fence 7) (the writer's)")
}

func TestRefusalsARightFenceMakes(t *testing.T) {
	t.Run("a stale holder", func(t *testing.T) {
		r := gcPause(true).check(t, Options{Slack: slack2})
		expect(t, r, nil)
	})
	checked := func(e *history.Event) { e.FenceChecked = e.Type == fail }
	t.Run("an earlier lease that may still be live", func(t *testing.T) {
		// A never released: its key may live until 1.007 s on the
		// server; B's write is refused inside that. Where the resource
		// compares versions, not fences (cas), A writing meanwhile
		// could make it refuse: no finding.
		h := newHist()
		h.acquire(0, key, "A", 0, 5, ok).fence(2)
		h.acquire(1, key, "B", 1001, 1003, ok).fence(3)
		h.write(1, key, "B", 1004, 1006, fail, 0, 0).fence(3).rejected("refused")
		expect(t, h.check(t, Options{Slack: slack2}), nil)
		// Where it compares fences, A's lower fence cannot: wrong.
		h = newHist()
		h.acquire(0, key, "A", 0, 5, ok).fence(2)
		h.acquire(1, key, "B", 1001, 1003, ok).fence(3)
		h.write(1, key, "B", 1004, 1006, fail, 0, 0).fence(3).rejected("refused").each(checked)
		expect(t, h.check(t, Options{Slack: slack2}), map[string]int{RefusedWrite: 1})
		// A higher fence still live could.
		h = newHist()
		h.acquire(0, key, "A", 0, 5, ok).fence(9)
		h.acquire(1, key, "B", 1001, 1003, ok).fence(3)
		h.write(1, key, "B", 1004, 1006, fail, 0, 0).fence(3).rejected("refused").each(checked)
		if r := h.check(t, Options{Slack: slack2}); r.Anomalies[RefusedWrite] != 0 {
			t.Errorf("a higher fence possibly live: %s", r)
		}
		// The same refusal once A's lease is certainly over is wrong
		// either way.
		h = newHist()
		h.acquire(0, key, "A", 0, 5, ok).fence(2)
		h.acquire(1, key, "B", 1001, 1003, ok).fence(3)
		h.write(1, key, "B", 1010, 1012, fail, 0, 0).fence(3).rejected("refused")
		expect(t, h.check(t, Options{Slack: slack2}), map[string]int{RefusedWrite: 1})
	})
	t.Run("a release that landed ends the earlier lease", func(t *testing.T) {
		h := newHist()
		h.acquire(0, key, "A", 0, 5, ok).fence(2)
		h.write(0, key, "A", 10, 12, ok, 0, 1).fence(2)
		h.release(0, key, "A", 50, 52, ok)
		h.acquire(1, key, "B", 60, 62, ok).fence(3)
		h.write(1, key, "B", 70, 72, fail, 1, 0).fence(3).rejected("refused")
		r := h.check(t, Options{Slack: slack2})
		expect(t, r, map[string]int{RefusedWrite: 1})
		mentions(t, finding(t, r, RefusedWrite).Narrative,
			"the highest fence the resource had accepted on lock:a before it was 2, client 0 (process 0)'s write at 0.012 s",
			"0.005 s client 0 (process 0) token A (fence 2), certainly over by 0.052 s")
		// A release of unknown outcome may not have landed.
		h = newHist()
		h.acquire(0, key, "A", 0, 5, ok).fence(2)
		h.release(0, key, "A", 50, 52, info)
		h.acquire(1, key, "B", 60, 62, ok).fence(3)
		h.write(1, key, "B", 70, 72, fail, 0, 0).fence(3).rejected("refused")
		expect(t, h.check(t, Options{Slack: slack2}), nil)
	})
	t.Run("a newer holder granted in the writer's lease and gone", func(t *testing.T) {
		// The lock granted B fence 3 inside A's lease (a double grant);
		// B wrote and released before A wrote. The fence refusing A is
		// right; the lock is to blame, and the lease audit says so.
		h := newHist()
		h.acquire(0, key, "A", 0, 5, ok).fence(2)
		h.acquire(1, key, "B", 100, 102, ok).fence(3)
		h.write(1, key, "B", 110, 112, ok, 0, 1).fence(3).each(func(e *history.Event) { e.FenceChecked = e.Type == ok })
		h.release(1, key, "B", 150, 152, ok)
		h.write(0, key, "A", 300, 302, fail, 1, 0).fence(2).rejected("fence 2 is below the highest accepted fence 3").each(checked)
		expect(t, h.check(t, Options{Slack: slack2}), map[string]int{DoubleGrant: 1})
	})
	t.Run("a worker's own refusal", func(t *testing.T) {
		h := newHist()
		h.acquire(0, key, "A", 0, 5, ok).fence(2)
		h.write(0, key, "A", 100, 110, fail, 0, 0).fence(2).each(func(e *history.Event) {
			if e.Type == fail {
				e.Reason = history.ReasonNotHeld
			}
		})
		expect(t, h.check(t, Options{Slack: slack2}), nil)
	})
	t.Run("a write answered after its lease may have ended", func(t *testing.T) {
		h := newHist()
		h.acquire(0, key, "A", 0, 5, ok).fence(2)
		h.write(0, key, "A", 900, 999, fail, 0, 0).fence(2).rejected("refused")
		expect(t, h.check(t, Options{Slack: slack2}), nil)
	})
	t.Run("a grant in flight during the write", func(t *testing.T) {
		h := newHist()
		h.acquire(0, key, "A", 0, 5, ok).fence(2)
		h.acquire(1, key, "B", 100, 300, ok).fence(3)
		h.write(0, key, "A", 200, 210, fail, 0, 0).fence(2).rejected("refused")
		r := h.check(t, Options{Slack: slack2})
		if r.Anomalies[RefusedWrite] != 0 || r.Anomalies[DoubleGrant] != 1 {
			t.Errorf("%s: want the double grant and no refused write", r)
		}
	})
}

// A resource that keeps the writes in fence order makes a late write of an
// expired lease harmless until a newer holder writes.
func TestFencedLateWriteIsNoExpiredWrite(t *testing.T) {
	build := func(checked bool) *hist {
		h := newHist()
		h.acquire(0, key, "A", 0, 5, ok).fence(1)
		h.write(0, key, "A", 1100, 1110, ok, 0, 1).fence(1).each(func(e *history.Event) { e.FenceChecked = checked && e.Type == ok })
		return h
	}
	r := build(true).check(t, Options{Slack: slack2})
	expect(t, r, nil)
	noted(t, r, "1 write accepted after the writer's lease had expired: the resource checked each one's fence")
	expect(t, build(false).check(t, Options{Slack: slack2}), map[string]int{ExpiredWrite: 1})

	// A resource that claims to check fences but accepted a lower one
	// after a higher one did not keep the key's writes in order: none of
	// its late writes is excused, the first included.
	h0 := newHist()
	claim := func(e *history.Event) { e.FenceChecked = e.Type == ok }
	h0.acquire(0, key, "A", 0, 5, ok).fence(1)
	h0.write(0, key, "A", 1100, 1110, ok, 0, 1).fence(1).each(claim)
	h0.acquire(1, key, "B", 1200, 1205, ok).fence(2)
	h0.write(1, key, "B", 1210, 1215, ok, 1, 2).fence(2).each(claim)
	h0.acquire(2, key, "C", 2300, 2305, ok).fence(1) // a fence counter that went back
	h0.write(2, key, "C", 2310, 2315, ok, 2, 3).fence(1).each(claim)
	if r := h0.check(t, Options{Slack: slack2}); r.Anomalies[ExpiredWrite] != 1 {
		t.Errorf("%s: want A's late write an expired-write on a resource that broke fence order", r)
	}

	// A lower fence accepted after a higher one was not kept in order,
	// whatever the write says.
	h := newHist()
	h.acquire(0, key, "A", 0, 5, ok).fence(1)
	h.acquire(1, key, "B", 1100, 1105, ok).fence(2)
	h.write(1, key, "B", 1200, 1210, ok, 0, 1).fence(2).each(func(e *history.Event) { e.FenceChecked = e.Type == ok })
	h.write(0, key, "A", 1300, 1310, ok, 1, 2).fence(1).each(func(e *history.Event) { e.FenceChecked = e.Type == ok })
	expect(t, h.check(t, Options{Slack: slack2}), map[string]int{StaleWrite: 1, ExpiredWrite: 1})
}

// Slack absorbs a server's clock; the harness's own instants need none.
func TestSlackOnlyOnServerBounds(t *testing.T) {
	us := int64(time.Microsecond)
	at := func(e *history.Event, ns int64) { e.Time = ns }
	// B is granted at 500.0 ms; A asks to release at 500.5 ms: both
	// clients held the lock for half a millisecond, on the harness's clock.
	h := newHist()
	h.acquire(0, key, "A", 0, 5, ok)
	b := h.acquire(1, key, "B", 499, 500, ok)
	rel := h.release(0, key, "A", 500, 501, ok)
	at(b.done, 500_000*us)
	at(rel.inv, 500_500*us)
	r := h.check(t, Options{Slack: slack2})
	if r.Anomalies[DoubleGrant] != 1 {
		t.Errorf("%s: want the 0.5 ms overlap a certain double grant", r)
	}
	mentions(t, finding(t, r, DoubleGrant).Narrative, "certainly held until 0.500 s (release asked at 0.500 s)")

	// A ttl counted by the server keeps its slack: A's ttl runs out at
	// 1.000 s by the harness's clock, B is granted 1 ms before.
	h = newHist()
	h.acquire(0, key, "A", 0, 5, ok)
	h.acquire(1, key, "B", 998, 999, ok)
	expect(t, h.check(t, Options{Slack: slack2}), nil)
}
