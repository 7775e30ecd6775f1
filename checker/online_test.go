package checker

import (
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockharness/lockharness/history"
)

// TestAuditPrefixNeverOutrunsTheCheck cuts every recorded catalog run
// (testdata/runs) at many instants and wants each anomaly the online audit
// is certain of in a prefix to be counted by Check on the whole history;
// and every recording whose check found an online anomaly to be caught by
// the audit before the run's end.
func TestAuditPrefixNeverOutrunsTheCheck(t *testing.T) {
	dirs, _ := filepath.Glob(filepath.Join("..", "testdata", "runs", "*"))
	if len(dirs) == 0 {
		t.Fatal("no recorded runs under testdata/runs")
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			events := readGzipHistory(t, filepath.Join(dir, "history.jsonl.gz"))
			tables, err := history.ReadTables(dir)
			if err != nil {
				t.Fatal(err)
			}
			opts := Options{Slack: 2 * time.Millisecond, Tables: tables, Database: tables != nil}
			full, err := Check(events, opts)
			if err != nil {
				t.Fatal(err)
			}
			end := events[len(events)-1].Time
			caughtAt := int64(-1)
			const cuts = 400
			for i := 1; i <= cuts; i++ {
				now := end * int64(i) / cuts
				n := 0
				for n < len(events) && events[n].Time <= now {
					n++
				}
				got, ok := AuditPrefix(events[:n], now, OnlineAnomalies, opts)
				if !ok {
					continue
				}
				if full.Anomalies[got.Anomaly] == 0 {
					t.Fatalf("at %s the online audit was certain of %s (%s), but the whole history has none",
						Secs(now), got.Anomaly, got.Narrative)
				}
				if caughtAt < 0 {
					caughtAt = now
				}
			}
			online := full.Anomalies[DoubleGrant] + full.Anomalies[ForeignRelease]
			if tables == nil {
				// A database's writes are audited from its final rows only.
				online += full.Anomalies[StaleWrite] + full.Anomalies[ExpiredWrite]
			}
			if online > 0 && caughtAt < 0 {
				t.Errorf("the check found %v, the online audit nothing before the end", full.Anomalies)
			}
			if caughtAt >= 0 {
				t.Logf("caught at %s of %s", Secs(caughtAt), Secs(end))
			}
		})
	}
}

func readGzipHistory(t *testing.T, path string) []history.Event {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	events, err := history.Decode(zr)
	if err != nil {
		t.Fatal(err)
	}
	return events
}

// TestAuditPrefixWaitsForCertainty: B is granted at 100 ms while A, granted
// at 0 for 1 s, has not asked to release. At 100 ms A may still ask at the
// very instant of B's grant: nothing is certain; once the harness's clock
// is past it, the double grant is (no slack: both instants are the
// harness's own). A release B's grant came too late to undo stays a
// double grant; one asked before B's grant is none.
func TestAuditPrefixWaitsForCertainty(t *testing.T) {
	h := newHist()
	h.acquire(0, "k", "a", 0, 1, ok)
	h.acquire(1, "k", "b", 90, 100, ok)
	events := h.build()
	opts := Options{Slack: 2 * 1e6}
	for _, tc := range []struct {
		nowMs int64
		want  bool
	}{{99, false}, {100, false}, {101, true}, {103, true}, {500, true}} {
		_, got := AuditPrefix(events, tc.nowMs*1e6, []string{DoubleGrant}, opts)
		if got != tc.want {
			t.Errorf("at %d ms: certain %v, want %v", tc.nowMs, got, tc.want)
		}
	}
	if _, got := AuditPrefix(events, 500*1e6, []string{StaleWrite}, opts); got {
		t.Error("certain of a stale write that is not there")
	}
	late := newHist()
	late.acquire(0, "k", "a", 0, 1, ok)
	late.acquire(1, "k", "b", 90, 100, ok)
	late.release(0, "k", "a", 150, 0, pending)
	if _, got := AuditPrefix(late.build(), 200*1e6, []string{DoubleGrant}, opts); !got {
		t.Error("a release asked after the second grant undid the double grant")
	}
	early := newHist()
	early.acquire(0, "k", "a", 0, 1, ok)
	early.release(0, "k", "a", 95, 0, pending)
	early.acquire(1, "k", "b", 90, 100, ok)
	if _, got := AuditPrefix(early.build(), 500*1e6, []string{DoubleGrant}, opts); got {
		t.Error("certain of a double grant whose first holder asked to release before the second grant")
	}
	if _, err := ParseAnomalies("lost-update"); err == nil || !strings.Contains(err.Error(), "cannot be certain") {
		t.Errorf("ParseAnomalies(lost-update) = %v", err)
	}
	if _, err := ParseAnomalies("double-grnt"); err == nil || !strings.Contains(err.Error(), "valid: double-grant") {
		t.Errorf("ParseAnomalies(double-grnt) = %v", err)
	}
}

// TestAuditPrefixPendingExtendBlocksLaterOnes is a reviewer's probe: an
// extend still outstanding at the audit (E0, from the watchdog) may answer
// ok after a later extend (E1) was invoked, and then E1 cannot lengthen
// the lease; the audit must not count on E1, or it would claim a double
// grant the whole history does not have.
func TestAuditPrefixPendingExtendBlocksLaterOnes(t *testing.T) {
	h := newHist()
	h.acquire(0, "k", "a", 0, 1, ok).ttl(10_000)
	h.extend(1, "k", "a", 1000, 6000, ok, 3000)
	h.extend(0, "k", "a", 2000, 2500, ok, 20_000)
	h.acquire(2, "k", "b", 4400, 4500, ok)
	events := h.build()
	opts := Options{Slack: 2 * 1e6}
	full, err := Check(events, opts)
	if err != nil {
		t.Fatal(err)
	}
	if full.Anomalies[DoubleGrant] != 0 {
		t.Fatalf("the whole history has %d double grants; the probe needs none", full.Anomalies[DoubleGrant])
	}
	n := 0
	for n < len(events) && events[n].Time <= 5000*1e6 {
		n++
	}
	if got, certain := AuditPrefix(events[:n], 5000*1e6, OnlineAnomalies, opts); certain {
		t.Errorf("at 5 s the audit was certain of %s: %s", got.Anomaly, got.Narrative)
	}
}
