package checker

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/lockharness/lockharness/history"
)

const key = "lock:a"

func TestCleanAlternatingHolders(t *testing.T) {
	h := newHist()
	h.fault("partition", "client 1", 2000, 2500) // faults alone change nothing
	var v int64
	for i, at := range []int64{0, 100, 200, 300} {
		p, other := i%2, 1-i%2
		tok := string(rune('A' + i))
		h.acquire(p, key, tok, at, at+5, ok).fence(int64(i + 1))
		h.acquire(other, key, "busy"+tok, at+10, at+12, fail)
		h.write(p, key, tok, at+20, at+22, ok, v, v+1).fence(int64(i + 1))
		v++
		h.release(p, key, tok, at+30, at+32, ok)
	}
	h.acquire(0, key, "F0", 3000, 3005, ok).final()
	h.acquire(1, key, "F1", 3000, 3006, fail).final()
	r := h.check(t, Options{Slack: 10 * time.Millisecond})
	expect(t, r, nil)
	if len(r.Findings) != 0 {
		t.Errorf("findings in a clean history: %+v", r.Findings)
	}
	if r.Liveness != LivenessOK {
		t.Errorf("liveness %q, want ok", r.Liveness)
	}
	if r.Counter != (Counter{Acknowledged: 4, Final: 4}) {
		t.Errorf("counter %+v", r.Counter)
	}
	if got := r.Stats[history.Acquire]; got.OK != 5 || got.Fail != 5 || got.Info != 0 {
		t.Errorf("acquire stats %+v", got)
	}
	for _, kind := range []string{history.Extend, history.Read} {
		if _, present := r.Stats[kind]; present {
			t.Errorf("stats list %s, which never occurred", kind)
		}
	}
}

func TestTTLExpiryThenAcquireIsNotDoubleGrant(t *testing.T) {
	h := newHist()
	h.acquire(0, key, "A", 0, 5, ok) // never released: expires at 1.000 s at the latest
	h.acquire(1, key, "B", 1001, 1003, ok)
	expect(t, h.check(t, Options{}), nil)
}

func TestRestartDoubleGrant(t *testing.T) {
	h := newHist()
	h.acquire(5, key, "T1", 0, 5, ok).client(2).fence(17)
	h.fault("restart", "redis-1", 100, 200)
	h.acquire(7, key, "T2", 300, 305, ok).client(3).fence(3)
	r := h.check(t, Options{Slack: 10 * time.Millisecond})
	expect(t, r, map[string]int{DoubleGrant: 1})
	f := finding(t, r, DoubleGrant)
	mentions(t, f.Narrative,
		"0.005 s client 2 (process 5) acquired lock:a token T1 (fence 17), certainly held until 0.990 s",
		"0.305 s client 3 (process 7) acquired lock:a token T2 (fence 3)",
		"restart redis-1 (0.100 s to 0.200 s)")
	if f.Key != key || len(f.Events) != 4 {
		t.Errorf("finding %+v, want key %s and both acquires' four events", f, key)
	}
}

func TestBoundaryOverlapWithinSlack(t *testing.T) {
	// A's ttl certainly covers [0.005 s, 1.000 s); B is granted at 0.995 s.
	h := newHist()
	h.acquire(0, key, "A", 0, 5, ok)
	h.acquire(1, key, "B", 990, 995, ok)
	expect(t, h.check(t, Options{Slack: 10 * time.Millisecond}), nil)
	expect(t, h.check(t, Options{}), map[string]int{DoubleGrant: 1})
}

func TestReleaseCutsWindow(t *testing.T) {
	// A rejected release (READONLY) certainly did nothing, but the client
	// no longer claims the lock; a "not held" one is a different story
	// (TestHolderFailureWhileLiveIsNotLinearizable).
	for name, outcome := range map[string]string{"ok": ok, "rejected": fail, "info": info, "unfinished": pending} {
		t.Run("release "+name, func(t *testing.T) {
			h := newHist()
			h.acquire(0, key, "A", 0, 5, ok)
			h.release(0, key, "A", 400, 410, outcome).rejected(readOnly)
			h.acquire(1, key, "B", 402, 406, ok)
			r := h.check(t, Options{})
			if outcome == fail {
				// The audit stands aside; porcupine knows A still held it.
				if r.Anomalies[DoubleGrant] != 0 || r.Valid != Invalid {
					t.Errorf("%s, want no double grant counted and the verdict invalid", r)
				}
				linear(t, r, LeaseLockModel, LinearIllegal, key)
				noted(t, r, "porcupine: not linearizable on lock:a", "overlap audit: 0 double grants")
				return
			}
			expect(t, r, nil)
		})
	}
	t.Run("acquire before release", func(t *testing.T) {
		h := newHist()
		h.acquire(0, key, "A", 0, 5, ok)
		h.acquire(1, key, "B", 350, 360, ok)
		h.release(0, key, "A", 400, 410, ok)
		expect(t, h.check(t, Options{}), map[string]int{DoubleGrant: 1})
	})
}

func TestExtendLengthensWindow(t *testing.T) {
	cases := []struct {
		name   string
		extend string // outcome of the watchdog's extend, "" for none
		want   map[string]int
	}{
		{"extended", ok, map[string]int{DoubleGrant: 1}},
		{"no extend", "", nil},
		{"extend rejected", fail, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHist()
			h.acquire(0, key, "A", 0, 5, ok)
			if tc.extend != "" {
				// The watchdog runs under its own process.
				h.extend(9, key, "A", 500, 505, tc.extend, 1000).client(0).rejected(readOnly)
			}
			h.acquire(1, key, "B", 1200, 1205, ok)
			r := h.check(t, Options{})
			expect(t, r, tc.want)
			if tc.want != nil {
				f := finding(t, r, DoubleGrant)
				mentions(t, f.Narrative, "certainly held until 1.500 s (extended at 0.500 s for 1000 ms)")
				if len(f.Events) != 6 {
					t.Errorf("events %v, want both acquires and the extend", f.Events)
				}
			}
		})
	}
}

func TestForeignRelease(t *testing.T) {
	cases := []struct {
		name  string
		slack time.Duration
		build func(h *hist)
		want  int
	}{
		{"del after expiry", 0, func(h *hist) {
			h.acquire(0, key, "A", 0, 5, ok)
			h.acquire(1, key, "B", 1100, 1105, ok)
			h.release(0, key, "A", 1500, 1502, ok)
		}, 1},
		{"del after expiry failed", 0, func(h *hist) {
			h.acquire(0, key, "A", 0, 5, ok)
			h.acquire(1, key, "B", 1100, 1105, ok)
			h.release(0, key, "A", 1500, 1502, fail)
		}, 0},
		{"del within ttl", 0, func(h *hist) {
			h.acquire(0, key, "A", 0, 5, ok)
			h.release(0, key, "A", 800, 802, ok)
		}, 0},
		{"del just after expiry within slack", 10 * time.Millisecond, func(h *hist) {
			h.acquire(0, key, "A", 0, 5, ok)
			h.release(0, key, "A", 1010, 1012, ok)
		}, 0},
		{"del just after expiry without slack", 0, func(h *hist) {
			h.acquire(0, key, "A", 0, 5, ok)
			h.release(0, key, "A", 1010, 1012, ok)
		}, 1},
		{"extend after expiry", 0, func(h *hist) {
			h.acquire(0, key, "A", 0, 5, ok)
			h.extend(9, key, "A", 1500, 1502, ok, 1000)
		}, 1},
		{"extend after expiry does not lengthen the lease", 0, func(h *hist) {
			h.acquire(0, key, "A", 0, 5, ok)
			h.acquire(1, key, "B", 1100, 1105, ok)
			h.extend(9, key, "A", 1500, 1502, ok, 1000) // extended B's key
		}, 1},
		{"extend within ttl then del within extension", 0, func(h *hist) {
			h.acquire(0, key, "A", 0, 5, ok)
			h.extend(9, key, "A", 900, 905, ok, 1000)
			h.release(0, key, "A", 1800, 1802, ok)
		}, 0},
		{"extend within ttl then del after extension", 0, func(h *hist) {
			h.acquire(0, key, "A", 0, 5, ok)
			h.extend(9, key, "A", 900, 905, ok, 1000)
			h.release(0, key, "A", 2000, 2002, ok)
		}, 1},
		{"extend of unknown outcome keeps the lease possibly live", 0, func(h *hist) {
			h.acquire(0, key, "A", 0, 5, ok)
			h.extend(9, key, "A", 900, 905, info, 1000)
			h.release(0, key, "A", 5000, 5002, ok)
		}, 0},
		{"del of a token whose acquire failed", 0, func(h *hist) {
			h.acquire(0, key, "A", 0, 5, fail)
			h.release(0, key, "A", 10, 12, ok)
		}, 1},
		{"del of a token whose acquire is unknown", 0, func(h *hist) {
			h.acquire(0, key, "A", 0, 5, info)
			h.release(1, key, "A", 5000, 5002, ok)
		}, 0},
		{"del of a token never acquired", 0, func(h *hist) {
			h.release(0, key, "ghost", 10, 12, ok)
		}, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHist()
			tc.build(h)
			expect(t, h.check(t, Options{Slack: tc.slack}), map[string]int{ForeignRelease: tc.want})
		})
	}

	t.Run("narrative", func(t *testing.T) {
		h := newHist()
		h.acquire(0, key, "A", 0, 5, ok)
		h.acquire(1, key, "B", 1100, 1105, ok)
		h.release(0, key, "A", 1500, 1502, ok)
		f := finding(t, h.check(t, Options{}), ForeignRelease)
		mentions(t, f.Narrative,
			"1.500 s client 0 (process 0) released lock:a token A (ok), but that lease, granted to client 0 (process 0), had expired by 1.005 s (ttl 1000 ms from its grant at 0.005 s)",
			"the latest grant of lock:a before then was token B to client 1 (process 1) at 1.105 s")
		if len(f.Events) != 6 {
			t.Errorf("events %v, want both acquires and the release", f.Events)
		}
	})
}

// gcPause is the classic unsafe shape: A reads the counter, pauses past its
// lease, B acquires and writes, then A's stale write lands.
func gcPause(fenced bool) *hist {
	h := newHist()
	aw := fail
	if !fenced {
		aw = ok
	}
	h.acquire(0, key, "A", 0, 5, ok).fence(1)
	h.write(0, key, "A", 100, 2000, aw, 0, 1).fence(1)
	h.fault("pause", "client 0", 110, 1900)
	h.acquire(1, key, "B", 1100, 1105, ok).fence(2)
	h.write(1, key, "B", 1200, 1210, ok, 0, 1).fence(2)
	return h
}

func TestStaleWrite(t *testing.T) {
	r := gcPause(false).check(t, Options{})
	expect(t, r, map[string]int{StaleWrite: 1, LostUpdate: 1, ExpiredWrite: 1})
	if r.Counter != (Counter{Acknowledged: 2, Final: 1}) {
		t.Errorf("counter %+v", r.Counter)
	}
	f := finding(t, r, StaleWrite)
	mentions(t, f.Narrative,
		"0.005 s client 0 (process 0) acquired lock:a token A (fence 1)",
		"1.105 s client 1 (process 1) acquired lock:a token B (fence 2), asking at 1.100 s",
		"1.210 s the resource accepted the second holder's write (stored 1)",
		"2.000 s the resource accepted the first holder's write (stored 1)",
		"pause client 0")
	if len(f.Events) != 8 {
		t.Errorf("events %v, want both grants and both writes", f.Events)
	}
	lost := finding(t, r, LostUpdate)
	mentions(t, lost.Narrative, "2 writes acknowledged but the counter ends at 1 (last write at 2.000 s): 1 update lost",
		"value 1 was stored by client 1 (process 1) at 1.210 s and again by client 0 (process 0) at 2.000 s")
}

func TestFencingRejectsStaleWrite(t *testing.T) {
	r := gcPause(true).check(t, Options{})
	expect(t, r, nil)
	if r.Fencing.Rejected != 1 {
		t.Errorf("fencing.rejected = %d, want 1", r.Fencing.Rejected)
	}
	if r.Counter != (Counter{Acknowledged: 1, Final: 1}) {
		t.Errorf("counter %+v", r.Counter)
	}
}

func TestWriteBeforeNewerHolderIsNotStale(t *testing.T) {
	h := newHist()
	h.acquire(0, key, "A", 0, 5, ok)
	h.write(0, key, "A", 100, 110, ok, 0, 1)
	h.acquire(1, key, "B", 1100, 1105, ok)
	h.write(1, key, "B", 1200, 1210, ok, 1, 2)
	h.write(2, key, "C", 1300, 1310, info, 2, 0) // never reached the resource
	r := h.check(t, Options{})
	expect(t, r, nil)
	if r.Counter != (Counter{Acknowledged: 2, Final: 2}) {
		t.Errorf("counter %+v", r.Counter)
	}
}

func TestStuckLock(t *testing.T) {
	base := func() *hist {
		h := newHist()
		h.ttlMs = 0 // a lock without expiry
		h.acquire(0, key, "A", 0, 5, ok)
		h.fault("kill", "client 0", 100, 200)
		return h
	}

	t.Run("all final acquires fail", func(t *testing.T) {
		h := base()
		h.acquire(1, key, "F1", 5000, 5010, fail).final()
		h.acquire(2, key, "F2", 5000, 5020, fail).final()
		r := h.check(t, Options{})
		expect(t, r, map[string]int{StuckLock: 1})
		if r.Liveness != LivenessStuck {
			t.Errorf("liveness %q, want stuck", r.Liveness)
		}
		f := finding(t, r, StuckLock)
		mentions(t, f.Narrative,
			"after healing, no acquire of lock:a succeeded between 5.000 s and 5.020 s",
			"the last grant of lock:a was token A to client 0 (process 0) at 0.005 s, which was never released")
	})

	t.Run("stuck although the last grant was released", func(t *testing.T) {
		h := base()
		h.release(0, key, "A", 300, 301, fail)
		h.acquire(1, key, "F1", 5000, 0, pending).final()
		h.acquire(2, key, "F2", 5000, 5020, fail).final()
		h.acquire(3, "lock:b", "G", 5000, 5020, ok).final()
		r := h.check(t, Options{})
		expect(t, r, map[string]int{StuckLock: 1})
		f := finding(t, r, StuckLock)
		mentions(t, f.Narrative, "(2 attempts: 1 failed, 1 unknown)", "whose release asked at 0.300 s ended fail")
		if f.Key != key {
			t.Errorf("stuck key %q, want %q", f.Key, key)
		}
	})

	t.Run("one final acquire succeeds", func(t *testing.T) {
		h := base()
		h.release(0, key, "A", 300, 301, ok)
		h.acquire(1, key, "F1", 5000, 5010, fail).final()
		h.acquire(2, key, "F2", 5000, 5020, ok).final()
		r := h.check(t, Options{})
		expect(t, r, nil)
		if r.Liveness != LivenessOK {
			t.Errorf("liveness %q, want ok", r.Liveness)
		}
	})

	t.Run("no final operations", func(t *testing.T) {
		r := base().check(t, Options{})
		expect(t, r, nil)
		if r.Liveness != LivenessNotChecked {
			t.Errorf("liveness %q, want not-checked", r.Liveness)
		}
		if len(r.Notes) != 1 || !strings.Contains(r.Notes[0], "liveness was not checked") {
			t.Errorf("notes %q, want one saying liveness was not checked", r.Notes)
		}
	})
}

func TestMalformedHistoryNamesTheEvent(t *testing.T) {
	inv := func(i int, p history.Process) history.Event {
		return history.Event{Index: i, Time: int64(i), Type: history.Invoke, Process: p, F: history.Acquire, Key: key, Token: "t"}
	}
	done := func(i int, p history.Process, f string) history.Event {
		return history.Event{Index: i, Time: int64(i), Type: history.OK, Process: p, F: f, Key: key}
	}
	cases := map[string]struct {
		events []history.Event
		want   string
	}{
		"double invoke": {[]history.Event{inv(0, 1), inv(1, 2), done(2, 2, history.Acquire), inv(3, 1)},
			"event 3: process 1 invokes acquire while its acquire invoked at event 0 is still outstanding"},
		"orphan completion": {[]history.Event{inv(0, 1), done(1, 1, history.Acquire), done(2, 1, history.Acquire)},
			"event 2: ok completion of acquire by process 1 has no outstanding invoke"},
		"completion of another kind": {[]history.Event{inv(0, 1), done(1, 1, history.Release)},
			"event 1: ok completion of release by process 1 does not match"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Check(tc.events, Options{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestNemesisEventsAreIgnored(t *testing.T) {
	h := newHist()
	h.acquire(0, key, "A", 0, 5, ok)
	h.fault("partition", "client 0", 1, 4) // inside A's acquire
	h.fault("clock", "redis-1", 3, 50000)  // never healed before the end matters
	r := h.check(t, Options{})
	expect(t, r, nil)
	if len(r.Stats) != 1 {
		t.Errorf("stats %v, want acquire only", r.Stats)
	}
}

func TestUnfinishedInvokeCountsAsInfo(t *testing.T) {
	h := newHist()
	h.acquire(0, key, "A", 0, 10, ok)
	h.acquire(1, key, "B", 20, 0, pending)
	r := h.check(t, Options{})
	expect(t, r, nil)
	got := r.Stats[history.Acquire]
	want := OpStats{OK: 1, Info: 1, P50Ms: 10, P99Ms: 10, MaxMs: 10}
	if got != want {
		t.Errorf("acquire stats %+v, want %+v (the unfinished one has no latency)", got, want)
	}
}

func TestStatsLatencyPercentiles(t *testing.T) {
	h := newHist()
	// 100 reads taking 1..100 ms, interleaved outcomes.
	outcomes := []string{ok, ok, fail, info}
	for i := int64(1); i <= 100; i++ {
		h.op(int(i), history.Read, key, "", 0, i, outcomes[i%4])
	}
	got := h.check(t, Options{}).Stats[history.Read]
	want := OpStats{OK: 50, Fail: 25, Info: 25, P50Ms: 50, P99Ms: 99, MaxMs: 100}
	if got != want {
		t.Errorf("read stats %+v, want %+v", got, want)
	}

	for _, tc := range []struct {
		sorted   []int64
		pct      int
		want     int64
		describe string
	}{
		{[]int64{7}, 50, 7, "one value"},
		{[]int64{1, 2, 3, 4}, 50, 2, "even count"},
		{[]int64{1, 2, 3, 4}, 99, 4, "top"},
		{[]int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 99, 10, "p99 of ten"},
	} {
		if got := nearestRank(tc.sorted, tc.pct); got != tc.want {
			t.Errorf("%s: p%d of %v = %d, want %d", tc.describe, tc.pct, tc.sorted, got, tc.want)
		}
	}
}

func TestFindingsSortedByFirstEvent(t *testing.T) {
	h := newHist()
	h.acquire(0, key, "A", 0, 5, ok)
	h.acquire(1, key, "B", 300, 305, ok)
	h.release(2, "lock:b", "ghost", 100, 101, ok)
	h.acquire(3, "lock:b", "F", 5000, 5010, fail).final()
	r := h.check(t, Options{})
	expect(t, r, map[string]int{DoubleGrant: 1, ForeignRelease: 1, StuckLock: 1})
	var order []string
	for _, f := range r.Findings {
		order = append(order, f.Anomaly)
	}
	if got := strings.Join(order, ","); got != "double-grant,foreign-release,stuck-lock" {
		t.Errorf("findings in order %s", got)
	}
}

func TestVerdictJSONRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		v    Verdict
		json string
	}{
		{Valid, `"valid":true`},
		{Invalid, `"valid":false`},
		{Unknown, `"valid":"unknown"`},
	} {
		r, err := Check(nil, Options{})
		if err != nil {
			t.Fatal(err)
		}
		r.Valid = tc.v
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), tc.json) {
			t.Errorf("%s marshals as %s, want %s", tc.v, b, tc.json)
		}
		for _, name := range AnomalyNames {
			if !strings.Contains(string(b), `"`+name+`":0`) {
				t.Errorf("%s lacks anomaly %s", b, name)
			}
		}
		var back Result
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("unmarshal %s: %v", b, err)
		}
		if back.Valid != tc.v {
			t.Errorf("%s round-tripped to %s", tc.v, back.Valid)
		}
	}
	var v Verdict
	if err := json.Unmarshal([]byte(`"maybe"`), &v); err == nil {
		t.Error(`"maybe" unmarshaled as a verdict`)
	}
}

// A client whose lease ran out acts on it although nobody else took the
// lock: no write is stale, but the resource accepted a write the servers
// no longer backed.
func TestExpiredWrite(t *testing.T) {
	h := newHist()
	h.acquire(0, key, "A", 0, 5, ok)
	h.write(0, key, "A", 100, 1500, ok, 0, 1)
	r := h.check(t, Options{Slack: 2 * time.Millisecond})
	expect(t, r, map[string]int{ExpiredWrite: 1})
	mentions(t, finding(t, r, ExpiredWrite).Narrative, "its lease had certainly expired by 1.007 s", "1.500 s the resource accepted its write")

	// The same write within the lease, or one that fencing refused, is fine.
	h = newHist()
	h.acquire(0, key, "A", 0, 5, ok)
	h.write(0, key, "A", 100, 900, ok, 0, 1)
	expect(t, h.check(t, Options{Slack: 2 * time.Millisecond}), nil)
	h = newHist()
	h.acquire(0, key, "A", 0, 5, ok).fence(1)
	h.write(0, key, "A", 100, 1500, fail, 0, 1).fence(1)
	expect(t, h.check(t, Options{Slack: 2 * time.Millisecond}), nil)

	// An extend that landed keeps the lease alive past the first TTL.
	h = newHist()
	h.acquire(0, key, "A", 0, 5, ok)
	h.extend(9, key, "A", 800, 805, ok, 1000) // the watchdog's own process
	h.write(0, key, "A", 100, 1500, ok, 0, 1)
	expect(t, h.check(t, Options{Slack: 2 * time.Millisecond}), nil)
}
