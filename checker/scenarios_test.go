package checker

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// Hand-built histories of the catalog's unsafe scenarios (SCENARIOS.md),
// each as the harness would record it. Every one must be flagged with its
// anomaly, and porcupine must agree wherever the lock service itself broke.

const slack = 2 * time.Millisecond

func TestScenarioClientPause(t *testing.T) {
	// gc-pause: the lock behaved; the client misused it. The lease
	// model has nothing to object to; the resource audit does.
	r := gcPause(false).check(t, Options{Slack: slack})
	expect(t, r, map[string]int{StaleWrite: 1, LostUpdate: 1, ExpiredWrite: 1})
	linear(t, r, LeaseLockModel, LinearOK)
	linear(t, r, FencedMutexModel, LinearOK)

	// gc-pause-fenced: the resource refused the stale write.
	r = gcPause(true).check(t, Options{Slack: slack})
	expect(t, r, nil)
	if r.Fencing.Rejected != 1 {
		t.Errorf("fencing.rejected = %d, want 1", r.Fencing.Rejected)
	}
	linear(t, r, FencedMutexModel, LinearOK)
}

func TestScenarioPlainDelRelease(t *testing.T) {
	// del-release: A overruns its TTL, B acquires, A's plain DEL
	// removes B's lock, C acquires while B's lease is live.
	h := newHist()
	h.acquire(0, key, "A", 0, 5, ok)
	h.fault("pause", "client 0", 100, 1900)
	h.acquire(1, key, "B", 1100, 1105, ok)
	h.release(0, key, "A", 1950, 1952, ok)
	h.acquire(2, key, "C", 1960, 1965, ok)
	r := h.check(t, Options{Slack: slack})
	expect(t, r, map[string]int{ForeignRelease: 1, DoubleGrant: 1})
	linear(t, r, LeaseLockModel, LinearIllegal, key)
	mentions(t, finding(t, r, DoubleGrant).Narrative, "token B", "token C")
}

func TestScenarioRestartWithoutPersistence(t *testing.T) {
	// restart-no-persist: A holds; the node restarts empty, fence
	// counter included; B acquires.
	h := newHist()
	h.acquire(0, key, "A", 0, 5, ok).fence(1)
	h.fault("restart", "redis-1", 100, 200)
	h.acquire(1, key, "B", 300, 305, ok).fence(1)
	h.release(0, key, "A", 600, 602, fail).err("lock not held")
	r := h.check(t, Options{Slack: slack})
	expect(t, r, map[string]int{DoubleGrant: 1})
	linear(t, r, LeaseLockModel, LinearIllegal, key)
	linear(t, r, FencedMutexModel, LinearIllegal, key)
	mentions(t, finding(t, r, DoubleGrant).Narrative, "restart redis-1")
}

func TestScenarioFailover(t *testing.T) {
	// failover-double-grant: replication is held back; A acquires on
	// the primary; the primary is cut off and a replica that never saw A's
	// key is promoted; B acquires there. A, still talking to the old
	// primary, renews happily.
	h := newHist()
	h.ttlMs = 10_000
	h.fault("latency", "replication redis-1→redis-2", 0, 5000)
	h.acquire(0, key, "A", 100, 103, ok)
	h.fault("partition", "redis-1", 200, 5000)
	h.fault("failover", "sentinel", 1200, 2600)
	h.acquire(1, key, "B", 2700, 2704, ok)
	h.extend(5, key, "A", 3000, 3002, ok, 10_000).client(0)
	r := h.check(t, Options{Slack: slack})
	expect(t, r, map[string]int{DoubleGrant: 1})
	linear(t, r, LeaseLockModel, LinearIllegal, key)
	mentions(t, finding(t, r, DoubleGrant).Narrative, "failover sentinel", "partition redis-1")
}

func TestScenarioClockJump(t *testing.T) {
	// clock-jump-single: A holds; the node's clock jumps past the TTL
	// and A's key expires at once; B acquires.
	h := newHist()
	h.acquire(0, key, "A", 0, 5, ok)
	h.fault("clock", "redis-1", 200, 400)
	h.acquire(1, key, "B", 300, 305, ok)
	h.acquire(2, key, "C", 310, 312, fail).err("lock busy")
	r := h.check(t, Options{Slack: slack})
	expect(t, r, map[string]int{DoubleGrant: 1})
	linear(t, r, LeaseLockModel, LinearIllegal, key)
}

func TestScenarioExtendAfterExpiry(t *testing.T) {
	// redsync-extend-after-expiry: A pauses past its TTL; B acquires
	// and releases; A's extend re-creates the key and succeeds, so A
	// believes it held the lock throughout.
	h := newHist()
	h.acquire(0, key, "A", 0, 5, ok)
	h.fault("pause", "client 0", 100, 1800)
	h.acquire(1, key, "B", 1100, 1105, ok)
	h.release(1, key, "B", 1200, 1202, ok)
	h.extend(0, key, "A", 1850, 1852, ok, 1000)
	h.acquire(2, key, "C", 1900, 1905, fail).err("lock busy")
	r := h.check(t, Options{Slack: slack})
	expect(t, r, map[string]int{ForeignRelease: 1})
	linear(t, r, LeaseLockModel, LinearIllegal, key)
	// No lease overlapped another, yet the history is impossible: both
	// results are reported.
	noted(t, r, "porcupine: not linearizable on lock:a (lease-lock model)", "overlap audit: 0 double grants on lock:a", "foreign-release audit: 1")
}

func TestHolderFailureWhileLiveIsNotLinearizable(t *testing.T) {
	// The holder's compare-and-delete says "not held" while its lease must
	// still be live: the key vanished (a restart, a failover). No audit
	// counts this, porcupine does, and the verdict says so.
	h := newHist()
	h.acquire(0, key, "A", 0, 5, ok)
	h.release(0, key, "A", 400, 402, fail).err("lock not held")
	r := h.check(t, Options{Slack: slack})
	for _, name := range AnomalyNames {
		if r.Anomalies[name] != 0 {
			t.Errorf("%s counted: %s", name, r)
		}
	}
	if r.Valid != Invalid || r.Linearizable() {
		t.Errorf("verdict %s, linearizable %v; want invalid, not linearizable", r.Valid, r.Linearizable())
	}
	linear(t, r, LeaseLockModel, LinearIllegal, key)
	noted(t, r, "porcupine: not linearizable on lock:a (lease-lock model); overlap audit: 0 double grants on lock:a")
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"linearizability":{"result":"illegal","models":[{"model":"lease-lock","result":"illegal"`) ||
		!strings.Contains(string(b), `"failed":["lock:a"]`) {
		t.Errorf("results.json lacks porcupine's verdict: %s", b)
	}

	// The same failure with nothing to say about the lock is no evidence.
	h = newHist()
	h.acquire(0, key, "A", 0, 5, ok)
	h.release(0, key, "A", 400, 402, fail).rejected(readOnly)
	expect(t, h.check(t, Options{Slack: slack}), nil)
}

func TestBusyAnswers(t *testing.T) {
	cases := []struct {
		name  string
		build func(h *hist)
		want  string
	}{
		{"busy while held", func(h *hist) {
			h.acquire(0, key, "A", 0, 5, ok)
			h.acquire(1, key, "B", 100, 102, fail).err("lock busy")
		}, LinearOK},
		{"busy after release", func(h *hist) {
			h.acquire(0, key, "A", 0, 5, ok)
			h.release(0, key, "A", 50, 52, ok)
			h.acquire(1, key, "B", 100, 102, fail).err("lock busy")
		}, LinearIllegal},
		{"busy long after expiry", func(h *hist) {
			h.acquire(0, key, "A", 0, 5, ok)
			h.acquire(1, key, "B", 3000, 3002, fail).err("lock busy")
		}, LinearIllegal},
		{"busy explained by an acquire of unknown outcome", func(h *hist) {
			h.acquire(0, key, "A", 0, 5, ok)
			h.release(0, key, "A", 50, 52, ok)
			h.acquire(2, key, "X", 60, 70, info)
			h.acquire(1, key, "B", 5000, 5002, fail).err("lock busy")
		}, LinearOK},
		{"busy while the release is unknown", func(h *hist) {
			h.acquire(0, key, "A", 0, 5, ok)
			h.release(0, key, "A", 50, 60, info)
			h.acquire(1, key, "B", 100, 102, fail).err("lock busy")
			h.acquire(2, key, "C", 200, 202, ok)
		}, LinearOK},
		{"refused, not busy", func(h *hist) {
			h.acquire(1, key, "B", 100, 102, fail).rejected("LOADING Redis is loading the dataset in memory")
		}, LinearOK},
		// Without a reason a fail is the lock's answer, whatever its error
		// says (docs/history.md): busy on a free lock is not linearizable.
		{"a fail without a reason is busy", func(h *hist) {
			h.acquire(1, key, "B", 100, 102, fail).err("LOADING Redis is loading the dataset in memory")
		}, LinearIllegal},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHist()
			tc.build(h)
			r := h.check(t, Options{Slack: slack})
			if tc.want == LinearOK {
				linear(t, r, LeaseLockModel, LinearOK)
			} else {
				linear(t, r, LeaseLockModel, LinearIllegal, key)
			}
		})
	}
}

func TestFencesMustGrow(t *testing.T) {
	h := newHist()
	h.acquire(0, key, "A", 0, 5, ok).fence(5)
	h.release(0, key, "A", 100, 102, ok)
	h.acquire(1, key, "B", 200, 205, ok).fence(4)
	r := h.check(t, Options{Slack: slack})
	linear(t, r, LeaseLockModel, LinearOK)
	linear(t, r, FencedMutexModel, LinearIllegal, key)
	if r.Valid != Invalid {
		t.Errorf("verdict %s, want invalid", r.Valid)
	}

	// A history without fences is not checked against the fenced mutex.
	h = newHist()
	h.acquire(0, key, "A", 0, 5, ok)
	r = h.check(t, Options{Slack: slack})
	if len(r.Linearizability.Models) != 1 || r.Linearizability.Models[0].Model != LeaseLockModel {
		t.Errorf("models checked: %+v", r.Linearizability.Models)
	}
}

func TestTimeoutIsUnknownNeverValid(t *testing.T) {
	// A history without client operations proves nothing...
	r := newHist().check(t, Options{})
	if r.Valid != Unknown || !strings.Contains(strings.Join(r.Notes, "; "), "no client operations") {
		t.Fatalf("an empty history is %s, notes %q", r.Valid, r.Notes)
	}
	h := newHist()
	h.fault("partition", "client 1", 0, 100)
	if r := h.check(t, Options{}); r.Valid != Unknown {
		t.Fatalf("a history of faults alone is %s", r.Valid)
	}
	// ...and a clean history whose check cannot finish in time is unknown.
	// Its key needs porcupine's search: no order a witness tries works,
	// nor does a local repair, as the operation each order has in the
	// wrong place is more than a repair's reach from where it must go.
	h = newHist()
	h.ttlMs = 5000
	busy := func(proc int, from int64) {
		for k := range int64(20) {
			h.acquire(proc+int(k), key, fmt.Sprint("busy", proc+int(k)), from+10*k, from+10*k+1, fail)
		}
	}
	// A's release returns last, after B's grant and the busy answers:
	// wrong by return.
	h.acquire(0, key, "A", 0, 1, ok)
	h.release(0, key, "A", 5, 1000, ok)
	h.acquire(1, key, "B", 10, 20, ok)
	busy(10, 30)
	h.release(1, key, "B", 1100, 1101, ok)
	// D's grant is invoked first, before the busy answers and C's
	// release: wrong by invoke.
	h.acquire(2, key, "C", 1200, 1201, ok)
	h.acquire(3, key, "D", 1300, 1600, ok)
	busy(40, 1310)
	h.release(2, key, "C", 1500, 1510, ok)
	h.release(3, key, "D", 1700, 1701, ok)
	if r := h.check(t, Options{Slack: slack}); r.Valid != Valid {
		t.Fatalf("given time, the history is %s, want valid", r.Valid)
	}
	r, err := Check(h.build(), Options{Slack: slack, Timeout: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	if r.Valid != Unknown || r.Linearizability.Result != LinearUnknown {
		t.Errorf("verdict %s, linearizability %s; want unknown for both", r.Valid, r.Linearizability.Result)
	}
	noted(t, r, "the linearizability check did not finish within 1ns")
	if len(r.Linearizability.Models[0].Unknown) == 0 {
		t.Errorf("no key is listed as unknown: %+v", r.Linearizability.Models[0])
	}

	// ...but an anomaly found by an audit still makes it invalid.
	h = gcPause(false)
	r = h.check(t, Options{Slack: slack, Timeout: time.Nanosecond})
	if r.Valid != Invalid {
		t.Errorf("verdict %s, want invalid", r.Valid)
	}
}

func TestDisagreementsAreReportedBothWays(t *testing.T) {
	c := &checker{perKey: map[anomalyKey]int{{DoubleGrant, "lock:b"}: 2}}
	c.res.Linearizability.Models = []ModelCheck{{Model: LeaseLockModel, Result: LinearIllegal, Failed: []string{"lock:a"}}}
	got := strings.Join(c.disagreements(), "\n")
	for _, want := range []string{
		"porcupine: not linearizable on lock:a (lease-lock model); overlap audit: 0 double grants on lock:a",
		"porcupine: linearizable on lock:b (lease-lock model); overlap audit: 2 double grants on lock:b",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("notes %q lack %q", got, want)
		}
	}
}

func TestShorterExtendShortensTheLease(t *testing.T) {
	// PEXPIRE sets the remaining length: after the second extend A's lease
	// ends about 0.3 s in, so B's grant at 0.4 s is no double grant. (The
	// overlap audit once kept the longest extend and cried wolf here.)
	h := newHist()
	h.acquire(0, key, "A", 0, 5, ok)
	h.extend(9, key, "A", 100, 102, ok, 1000).client(0)
	h.extend(9, key, "A", 200, 202, ok, 100).client(0)
	h.acquire(1, key, "B", 400, 405, ok)
	r := h.check(t, Options{Slack: slack})
	expect(t, r, nil)

	// An extend of unknown outcome may land after a later one.
	h = newHist()
	h.acquire(0, key, "A", 0, 5, ok)
	h.extend(9, key, "A", 100, 110, info, 100).client(0)
	h.extend(8, key, "A", 150, 152, ok, 1000).client(0)
	h.acquire(1, key, "B", 400, 405, ok)
	expect(t, h.check(t, Options{Slack: slack}), nil)

	// Without the second extend, B's grant overlaps A's lease.
	h = newHist()
	h.acquire(0, key, "A", 0, 5, ok)
	h.extend(9, key, "A", 100, 102, ok, 1000).client(0)
	h.acquire(1, key, "B", 400, 405, ok)
	r = h.check(t, Options{Slack: slack})
	expect(t, r, map[string]int{DoubleGrant: 1})
	linear(t, r, LeaseLockModel, LinearIllegal, key)
}
