package history

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// A resource.json written before tables named their table and audits (all
// of testdata's) reads as its workload declared them then; one that names
// them keeps its own; the accepted rows of every kind come in the
// database's order.
func TestTablesNameTheirTableAndAudits(t *testing.T) {
	for _, c := range []struct {
		file, table string
		audits      []string
	}{
		{`{"resource":"postgres","workload":"inventory","ledger":[{"seq":2,"token":"b"},{"seq":1,"token":"a"}]}`, "ledger", []string{AuditLedger}},
		{`{"resource":"postgres","workload":"jobs","done":[{"seq":1,"token":"a"}]}`, "done", []string{AuditDuplicates}},
		{`{"resource":"postgres","workload":"mine","table":"tally","accepted":[{"seq":1,"client":0,"token":"a","at":""}]}`, "tally", nil},
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, TablesFile), []byte(c.file), 0o644); err != nil {
			t.Fatal(err)
		}
		tables, err := ReadTables(dir)
		if err != nil {
			t.Fatal(err)
		}
		if tables.Table != c.table || !slices.Equal(tables.Audits, c.audits) {
			t.Errorf("%s: table %q audits %q, want %q %q", c.file, tables.Table, tables.Audits, c.table, c.audits)
		}
		rows := tables.AcceptedRows()
		if !slices.IsSortedFunc(rows, func(a, b AcceptedRow) int { return int(a.Seq - b.Seq) }) || len(rows) == 0 || rows[0].Token != "a" {
			t.Errorf("%s: accepted rows %+v, want them in seq order from a", c.file, rows)
		}
	}
}
