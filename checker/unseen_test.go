package checker

import (
	"strings"
	"testing"
)

// A lease renewed where the harness cannot see may have lasted past its
// TTL: what would be a foreign release and a double grant for a lease that
// ended at its TTL is not judged. The same history without the mark is
// invalid, and a finding that does not rest on expiry (a lost update)
// still is.
func TestUnseenRenewalsAreNotJudged(t *testing.T) {
	build := func(unseen bool) *hist {
		h := newHist()
		a := h.acquire(0, key, "A", 0, 5, ok)
		a.inv.UnseenRenewals, a.done.UnseenRenewals = unseen, unseen
		h.acquire(1, key, "B", 1100, 1105, ok)
		h.release(1, key, "B", 1200, 1202, ok)
		h.release(0, key, "A", 1500, 1502, ok)
		return h
	}
	seen := build(false).check(t, Options{})
	if seen.Valid != Invalid || seen.Anomalies[ForeignRelease] != 1 {
		t.Fatalf("without the mark: %s, want invalid with a foreign release", seen)
	}
	r := build(true).check(t, Options{})
	if r.Valid != Unknown {
		t.Fatalf("with unseen renewals: %s, want unknown", r)
	}
	for name, n := range r.Anomalies {
		if n != 0 {
			t.Errorf("%s = %d, want 0: it rests on when lease A ended", name, n)
		}
	}
	if r.Unjudged[ForeignRelease] != 1 {
		t.Fatalf("unjudged %v, want the foreign release", r.Unjudged)
	}
	note := strings.Join(r.Notes, "\n")
	if !strings.Contains(note, "1 foreign-release finding not judged") || !strings.Contains(note, "renewals: unreported") {
		t.Fatalf("notes %q do not say what was not judged and why", r.Notes)
	}
	if ev := build(true).build(); !ev[0].UnseenRenewals {
		t.Fatal("the builder lost the mark")
	}
}
