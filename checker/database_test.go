package checker

import (
	"strings"
	"testing"

	"github.com/lockharness/lockharness/history"
)

func ledgerRow(seq int64, token string, fence, before int64) history.LedgerRow {
	return history.LedgerRow{Seq: seq, SKU: "abc", Token: token, Fence: fence, QuantityBefore: before, QuantityAfter: before - 1}
}

// The database's order decides, not the order the answers came back in: a
// write the ledger applied after a newer holder's is stale even when its
// answer arrived first.
func TestStaleWriteInTheLedgersOrder(t *testing.T) {
	h := newHist()
	h.acquire(0, "k", "a", 0, 1, ok)
	h.write(0, "k", "a", 2, 1900, ok, 0, 99)
	h.acquire(1, "k", "b", 1200, 1201, ok)
	h.write(1, "k", "b", 1202, 2000, ok, 0, 98)
	tables := &history.Tables{Resource: "postgres", Workload: "inventory", Table: "ledger", Audits: []string{history.AuditLedger}, Initial: 100,
		Inventory: []history.InventoryRow{{SKU: "abc", Quantity: 98}}}
	// In the order the answers came, a then b: nothing wrong.
	tables.Ledger = []history.LedgerRow{ledgerRow(1, "a", 0, 100), ledgerRow(2, "b", 0, 99)}
	r := h.check(t, Options{Tables: tables})
	expect(t, r, map[string]int{})
	if r.Database == nil || r.Database.Sold != 2 || r.Database.Ledger != 2 {
		t.Fatalf("database audit %+v", r.Database)
	}
	// The database applied b first: a's write is stale.
	tables.Ledger = []history.LedgerRow{ledgerRow(1, "b", 0, 100), ledgerRow(2, "a", 0, 99)}
	r = h.check(t, Options{Tables: tables})
	expect(t, r, map[string]int{StaleWrite: 1})
	if f := r.Findings[0]; !strings.Contains(f.Narrative, "ledger row 2") {
		t.Errorf("the narrative names no ledger row: %s", f.Narrative)
	}
}

// A write whose answer was lost still landed if its row is there; a lower
// fence after a higher one is stale by the lock's own order.
func TestLostAnswerAndFenceOrder(t *testing.T) {
	h := newHist()
	h.acquire(0, "k", "a", 0, 1, ok).fence(5)
	h.write(0, "k", "a", 2, 3000, info, 0, 0)
	h.acquire(1, "k", "b", 500, 501, ok).fence(6)
	h.write(1, "k", "b", 502, 503, ok, 0, 99)
	tables := &history.Tables{Resource: "postgres", Workload: "inventory", Table: "ledger", Audits: []string{history.AuditLedger}, Fencing: "none", Initial: 100,
		Inventory: []history.InventoryRow{{SKU: "abc", Quantity: 98}},
		Ledger:    []history.LedgerRow{ledgerRow(1, "b", 6, 100), ledgerRow(2, "a", 5, 99)}}
	r := h.check(t, Options{Tables: tables})
	if r.Anomalies[StaleWrite] != 1 {
		t.Fatalf("the info write the ledger holds is not judged: %v", r)
	}
}

// Decrements that did not start from what the previous write left are
// lost, whatever the history says.
func TestLedgerChainLostUpdates(t *testing.T) {
	h := newHist()
	h.acquire(0, "k", "a", 0, 1, ok)
	h.write(0, "k", "a", 2, 3, ok, 0, 99)
	h.acquire(1, "k", "b", 1500, 1501, ok)
	h.write(1, "k", "b", 1502, 1503, ok, 0, 99)
	tables := &history.Tables{Resource: "postgres", Workload: "inventory", Table: "ledger", Audits: []string{history.AuditLedger}, Initial: 100,
		Inventory: []history.InventoryRow{{SKU: "abc", Quantity: 99}},
		Ledger:    []history.LedgerRow{ledgerRow(1, "a", 0, 100), ledgerRow(2, "b", 0, 100)}}
	r := h.check(t, Options{Tables: tables})
	expect(t, r, map[string]int{LostUpdate: 1})
}

func TestJobsDuplicateRate(t *testing.T) {
	h := newHist()
	h.acquire(0, "k:1", "a", 0, 1, ok)
	h.write(0, "k:1", "a", 2, 3, ok, 0, 1)
	h.acquire(1, "k:1", "b", 1500, 1501, ok)
	h.write(1, "k:1", "b", 1502, 1503, ok, 0, 1)
	h.acquire(2, "k:2", "c", 1500, 1501, ok)
	h.write(2, "k:2", "c", 1502, 1503, ok, 0, 1)
	tables := &history.Tables{Resource: "postgres", Workload: "jobs", Table: "done", Audits: []string{history.AuditDuplicates}, Jobs: 2000,
		Done: []history.DoneRow{{Seq: 1, Job: 7, Key: "k:1", Token: "a"}, {Seq: 2, Job: 7, Key: "k:1", Token: "b"}, {Seq: 3, Job: 1001, Key: "k:2", Token: "c"}}}
	r := h.check(t, Options{Tables: tables})
	expect(t, r, map[string]int{})
	if db := r.Database; db.Processed != 2 || db.Duplicated != 1 || db.DuplicatePer1000 != 500 {
		t.Fatalf("jobs audit %+v", db)
	}
}

// A fence counter that starts again (the node restarted empty) hands a
// later holder a lower fence: time says it is the newer grant, so its
// write is no stale write. (That fences went backwards is the
// fenced-mutex model's finding, not the resource audit's.)
func TestRestartedFencesAreNoStaleWrite(t *testing.T) {
	h := newHist()
	h.acquire(0, "k", "a", 0, 1, ok).fence(57)
	h.write(0, "k", "a", 2, 3, ok, 0, 99)
	h.release(0, "k", "a", 4, 5, ok)
	h.acquire(1, "k", "b", 3000, 3001, ok).fence(1)
	h.write(1, "k", "b", 3002, 3003, ok, 0, 98)
	tables := &history.Tables{Resource: "postgres", Workload: "inventory", Table: "ledger", Audits: []string{history.AuditLedger}, Initial: 100,
		Inventory: []history.InventoryRow{{SKU: "abc", Quantity: 98}},
		Ledger:    []history.LedgerRow{ledgerRow(1, "a", 57, 100), ledgerRow(2, "b", 1, 99)}}
	if r := h.check(t, Options{Tables: tables}); r.Anomalies[StaleWrite] != 0 {
		t.Fatalf("a later grant's write with a restarted fence is called stale: %v %v", r, r.Findings)
	}
}

// A database run's writes without its rows are not judged by their
// answers: that would count lost updates the database never lost.
func TestDatabaseWritesWithoutRows(t *testing.T) {
	h := newHist()
	h.acquire(0, "k", "a", 0, 1, ok)
	h.write(0, "k", "a", 2, 3, ok, 0, 1)
	h.acquire(1, "k", "b", 1500, 1501, ok)
	h.write(1, "k", "b", 1502, 1503, ok, 0, 1)
	r := h.check(t, Options{Database: true})
	if r.Valid != Unknown || r.Anomalies[LostUpdate] != 0 {
		t.Fatalf("%v, want unknown and no lost update", r)
	}
	if r := h.check(t, Options{}); r.Anomalies[LostUpdate] != 1 {
		t.Fatalf("the counter's audit without a database: %v", r)
	}
}

// A holder writes several times under one token: its rows, in the
// database's order, are its writes in the order it sent them, and each is
// judged at its own time. A's third write is sent after its lease ran out
// and lands after B's: stale and expired; its first two are neither.
func TestSeveralWritesPerGrantInTheLedger(t *testing.T) {
	h := newHist()
	h.acquire(0, "k", "a", 0, 1, ok).fence(5)
	h.write(0, "k", "a", 10, 12, ok, 0, 99).fence(5)
	h.write(0, "k", "a", 400, 402, ok, 0, 98).fence(5)
	h.acquire(1, "k", "b", 1100, 1101, ok).fence(6)
	h.write(1, "k", "b", 1102, 1103, ok, 0, 97).fence(6)
	h.write(0, "k", "a", 1200, 1202, ok, 0, 96).fence(5)
	h.write(1, "k", "b", 1300, 1302, ok, 0, 95).fence(6)
	tables := &history.Tables{Resource: "postgres", Workload: "inventory", Table: "ledger", Audits: []string{history.AuditLedger}, Fencing: "none", Initial: 100,
		Inventory: []history.InventoryRow{{SKU: "abc", Quantity: 95}},
		Ledger: []history.LedgerRow{ledgerRow(1, "a", 5, 100), ledgerRow(2, "a", 5, 99), ledgerRow(3, "b", 6, 98),
			ledgerRow(4, "a", 5, 97), ledgerRow(5, "b", 6, 96)}}
	r := h.check(t, Options{Tables: tables, Slack: slack2})
	expect(t, r, map[string]int{StaleWrite: 1, ExpiredWrite: 1})
	mentions(t, finding(t, r, StaleWrite).Narrative, "1.202 s the resource accepted the first holder's write (stored 96) (ledger row 4")
	mentions(t, finding(t, r, ExpiredWrite).Narrative, "1.200 s it sent the write the database accepted (stored 96) (ledger row 4")
	if r.Database.Unattributed != 0 {
		t.Errorf("rows left unattributed: %+v", r.Database)
	}
}
