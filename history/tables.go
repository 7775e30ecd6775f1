package history

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// TablesFile is the file beside history.jsonl that keeps a real resource's
// final rows, so that check and report judge a run from its directory alone.
const TablesFile = "resource.json"

// The checker's audits of a database's final rows, as a workload declares
// them (Tables.Audits).
const (
	// AuditLedger: every accepted write sold one unit, each from the
	// quantity the write before it left (the inventory's ledger).
	AuditLedger = "ledger"
	// AuditDuplicates: a write is a job done, and a job done more than
	// once is duplicate work; a write that answered ok having stored
	// nothing was absorbed by an idempotent insert and left no row.
	AuditDuplicates = "duplicates"
)

// Tables are the protected database's own rows, read once the clients
// stopped: what the resource audits judge instead of the harness's memory.
type Tables struct {
	// Resource is the kind of database (postgres).
	Resource string `json:"resource"`
	// Workload is the workload that wrote them (inventory, jobs, ...).
	Workload string `json:"workload"`
	// Table is the table that records every accepted write, one row each
	// (ledger, done, ...), and Audits the checker's audits of the rows.
	Table  string   `json:"table,omitempty"`
	Audits []string `json:"audits,omitempty"`
	// Fencing is how writes were fenced: none, where, cas, app-check or
	// sql (the user's own statement).
	Fencing string `json:"fencing,omitempty"`
	// Initial is the stock every SKU started with (inventory).
	Initial   int64          `json:"initial_quantity,omitempty"`
	Inventory []InventoryRow `json:"inventory,omitempty"`
	// Ledger has one row per accepted write, written by a trigger in the
	// write's own transaction, in the order the database applied them.
	Ledger []LedgerRow `json:"ledger,omitempty"`
	// Jobs is how many jobs the table held (jobs).
	Jobs int `json:"jobs,omitempty"`
	// Idempotent: the done table has a unique job, so a second insert of a
	// job does nothing.
	Idempotent bool `json:"idempotent,omitempty"`
	// Done has one row per processed job, in insert order (jobs).
	Done []DoneRow `json:"done,omitempty"`
	// Accepted are the rows of Table, for a workload that keeps no rows of
	// its own above.
	Accepted []AcceptedRow `json:"accepted,omitempty"`
}

// AcceptedRow is one accepted write as the database recorded it: its
// order, who wrote, and the database's clock_timestamp().
type AcceptedRow struct {
	Seq    int64  `json:"seq"`
	Client int    `json:"client"`
	Token  string `json:"token"`
	Fence  int64  `json:"fence,omitempty"`
	At     string `json:"at"`
}

// AcceptedRows are every accepted write the tables hold, whichever
// workload's rows they are, in the database's order.
func (t *Tables) AcceptedRows() []AcceptedRow {
	rows := slices.Clone(t.Accepted)
	for _, l := range t.Ledger {
		rows = append(rows, AcceptedRow{Seq: l.Seq, Client: l.Client, Token: l.Token, Fence: l.Fence, At: l.At})
	}
	for _, d := range t.Done {
		rows = append(rows, AcceptedRow{Seq: d.Seq, Client: d.Client, Token: d.Token, At: d.At})
	}
	slices.SortFunc(rows, func(a, b AcceptedRow) int { return cmp.Compare(a.Seq, b.Seq) })
	return rows
}

// Audited reports whether the tables' workload declared the audit.
func (t *Tables) Audited(audit string) bool { return slices.Contains(t.Audits, audit) }

// InventoryRow is one row of the inventory table.
type InventoryRow struct {
	SKU       string `json:"sku"`
	Quantity  int64  `json:"quantity"`
	LockToken int64  `json:"lock_token"`
}

// LedgerRow is one accepted write to the inventory, as the database saw
// it: who wrote (the session's client, lock token and fence), the row
// before and after, and the database's clock_timestamp().
type LedgerRow struct {
	Seq             int64  `json:"seq"`
	SKU             string `json:"sku"`
	Client          int    `json:"client"`
	Token           string `json:"token"`
	Fence           int64  `json:"fence"`
	QuantityBefore  int64  `json:"quantity_before"`
	QuantityAfter   int64  `json:"quantity_after"`
	LockTokenBefore int64  `json:"lock_token_before"`
	LockTokenAfter  int64  `json:"lock_token_after"`
	At              string `json:"at"`
}

// DoneRow is one processing of a job.
type DoneRow struct {
	Seq    int64  `json:"seq"`
	Job    int64  `json:"job"`
	Key    string `json:"key"`
	Client int    `json:"client"`
	Token  string `json:"token"`
	At     string `json:"at"`
}

// WriteTables writes t as dir/resource.json.
func WriteTables(dir string, t *Tables) error {
	b, err := json.MarshalIndent(t, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, TablesFile), append(b, '\n'), 0o644)
}

// ReadTables reads dir/resource.json; a run without a real resource has
// none, and gets nil and no error.
func ReadTables(dir string) (*Tables, error) {
	b, err := os.ReadFile(filepath.Join(dir, TablesFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var t Tables
	if err := dec.Decode(&t); err != nil {
		return nil, fmt.Errorf("%s: %v", TablesFile, err)
	}
	if t.Resource == "" || t.Workload == "" {
		return nil, fmt.Errorf("%s: it names no resource or workload", TablesFile)
	}
	if t.Table == "" {
		upgradeTables(&t)
	}
	return &t, nil
}
