package checker

import (
	"fmt"

	"github.com/lockharness/lockharness/history"
)

// Database is what a real resource's final rows say, beside the verdict.
type Database struct {
	Resource string `json:"resource"`
	Workload string `json:"workload"`
	Fencing  string `json:"fencing,omitempty"`
	// Table is the table that records the accepted writes, and Accepted
	// how many rows it holds.
	Table    string `json:"table,omitempty"`
	Accepted int    `json:"accepted_rows,omitempty"`
	// Audits are the audits of the rows the workload declared.
	Audits []string `json:"audits,omitempty"`
	// Inventory: the stock the SKU started with, the rows it ended with,
	// the units sold (initial - final) and the writes the ledger holds.
	Initial   int64                  `json:"initial_quantity,omitempty"`
	Inventory []history.InventoryRow `json:"inventory,omitempty"`
	Sold      int64                  `json:"sold,omitempty"`
	Ledger    int                    `json:"ledger_rows,omitempty"`
	// Jobs: the jobs the table held, the distinct jobs processed, the
	// rows of done, the jobs processed more than once, and that per
	// 1,000 processed jobs. Absorbed counts processings an idempotent
	// insert turned into nothing.
	Jobs             int     `json:"jobs,omitempty"`
	Processed        int     `json:"processed,omitempty"`
	DoneRows         int     `json:"done_rows,omitempty"`
	Duplicated       int     `json:"duplicated"`
	DuplicatePer1000 float64 `json:"duplicate_per_1000"`
	Absorbed         int     `json:"absorbed,omitempty"`
	// Unattributed counts accepted rows no write in the history claims.
	Unattributed int `json:"unattributed,omitempty"`
}

// databaseRow is one accepted write as the database recorded it.
type databaseRow struct {
	seq   int64
	token string
	at    string
}

// acceptedByDatabase is the writes the database accepted, in the order it
// applied them (its ledger or done table), each matched to the write the
// history records by its lock token: a holder writes several times under
// one token, one write at a time, so its rows in the database's order are
// its writes that were not refused, in the order it sent them. A write
// whose answer was lost (info) but whose row is there was accepted all the
// same.
func (c *checker) acceptedByDatabase() []*history.Op {
	t := c.opts.Tables
	var rows []databaseRow
	for _, r := range t.AcceptedRows() {
		rows = append(rows, databaseRow{r.Seq, r.Token, r.At})
	}
	// writes are each token's writes the database may have taken, in
	// invoke order; the ones before next[token] have their rows.
	writes := map[string][]*history.Op{}
	next := map[string]int{}
	for i := range c.ops {
		if o := &c.ops[i]; o.F == history.Write && o.Token != "" && o.Type != history.Fail && !absorbed(t, o) {
			writes[o.Token] = append(writes[o.Token], o)
		}
	}
	db := &Database{Resource: t.Resource, Workload: t.Workload, Fencing: t.Fencing, Table: t.Table, Accepted: len(rows), Audits: t.Audits}
	c.res.Database = db
	c.rowOf = map[*history.Op]databaseRow{}
	var accepted []*history.Op
	for _, r := range rows {
		ws, n := writes[r.token], next[r.token]
		if n >= len(ws) {
			db.Unattributed++
			continue
		}
		w := ws[n]
		next[r.token] = n + 1
		c.rowOf[w] = r
		accepted = append(accepted, w)
	}
	if db.Unattributed > 0 {
		c.note("the database holds %s that no write in the history claims", count(int64(db.Unattributed), "accepted row"))
	}
	missing := 0
	for i := range c.ops {
		w := &c.ops[i]
		if w.F != history.Write || w.Token == "" || w.Type != history.OK {
			continue
		}
		if absorbed(t, w) {
			db.Absorbed++
		} else if _, ok := c.rowOf[w]; !ok {
			missing++
		}
	}
	if missing > 0 {
		c.note("%s answered ok but the database has no row for them", count(int64(missing), "write"))
	}
	c.auditTables(db)
	return accepted
}

// absorbed reports whether w is an idempotent insert that found its job
// done: it answered ok with no row inserted.
func absorbed(t *history.Tables, w *history.Op) bool {
	return t.Audited(history.AuditDuplicates) && w.Type == history.OK && w.Stored != nil && *w.Stored == 0
}

// auditTables checks the final rows themselves, with the audits their
// workload declared: the ledger's, that the units sold are the writes the
// ledger holds, each one unit from the row the one before left (else
// decrements were lost); the duplicates', how many jobs were done more
// than once.
func (c *checker) auditTables(db *Database) {
	t := c.opts.Tables
	if t.Audited(history.AuditLedger) {
		db.Initial, db.Inventory, db.Ledger = t.Initial, t.Inventory, len(t.Ledger)
		var final int64
		for _, r := range t.Inventory {
			final += r.Quantity
			if r.Quantity < 0 {
				c.note("SKU %s is oversold: its quantity ends at %d", r.SKU, r.Quantity)
			}
		}
		db.Sold = t.Initial - final
		broken := 0
		for i := 1; i < len(t.Ledger); i++ {
			if prev, l := t.Ledger[i-1], t.Ledger[i]; l.SKU == prev.SKU && l.QuantityBefore != prev.QuantityAfter {
				broken++
			}
		}
		if lost := int64(db.Ledger) - db.Sold; lost > 0 || broken > 0 {
			c.res.Anomalies[LostUpdate] += int(max(lost, int64(broken)))
			c.list(LostUpdate, "", nil, fmt.Sprintf("the ledger holds %s but only %d units were sold (%d to %d); %s did not start from the quantity the one before left",
				count(int64(db.Ledger), "accepted write"), db.Sold, t.Initial, final, count(int64(broken), "write")))
		}
	}
	if t.Audited(history.AuditDuplicates) {
		db.Jobs, db.DoneRows = t.Jobs, len(t.Done)
		times := map[int64]int{}
		for _, d := range t.Done {
			times[d.Job]++
		}
		db.Processed = len(times)
		for _, n := range times {
			if n > 1 {
				db.Duplicated++
			}
		}
		if db.Processed > 0 {
			db.DuplicatePer1000 = float64(db.Duplicated) * 1000 / float64(db.Processed)
		}
	}
}

// where says where the database recorded a write, for narratives.
func (c *checker) where(w *history.Op) string {
	r, ok := c.rowOf[w]
	if !ok {
		return ""
	}
	return fmt.Sprintf(" (%s row %d, database time %s)", c.opts.Tables.Table, r.seq, r.at)
}
