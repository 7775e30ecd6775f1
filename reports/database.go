package reports

import (
	"fmt"
	"strconv"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/history"
)

// rowTable is a few of a database's rows as the page shows them.
type rowTable struct {
	Caption string
	Head    []string
	Rows    [][]string
}

// databaseView is the page's account of a real resource: what its final
// rows say and the rows themselves.
type databaseView struct {
	Lines []string
	Final *rowTable
}

func newDatabaseView(db *checker.Database) *databaseView {
	if db == nil {
		return nil
	}
	v := &databaseView{Lines: DatabaseLines(db)}
	if len(db.Inventory) > 0 {
		v.Final = &rowTable{Caption: "inventory, final rows", Head: []string{"sku", "quantity", "lock_token"}}
		for _, r := range db.Inventory {
			v.Final.Rows = append(v.Final.Rows, []string{r.SKU, fmt.Sprint(r.Quantity), fmt.Sprint(r.LockToken)})
		}
	}
	return v
}

// findingRows are the database rows of the writes a finding names: the
// ledger (or done) lines a reviewer checks the narrative against.
func (a *analysis) findingRows(t *history.Tables, f checker.Finding) *rowTable {
	if t == nil {
		return nil
	}
	tokens := map[string]bool{}
	for _, idx := range f.Events {
		p, ok := a.events.position(idx)
		if e := a.events.at(p); ok && e != nil && e.F == history.Write && e.Token != "" {
			tokens[e.Token] = true
		}
	}
	if len(tokens) == 0 {
		return nil
	}
	var rt *rowTable
	switch {
	case len(t.Ledger) > 0:
		rt = &rowTable{Caption: "the ledger's rows for these writes (the database's own order and clock)",
			Head: []string{"seq", "client", "token", "fence", "quantity before → after", "lock_token before → after", "clock_timestamp()"}}
		for _, l := range t.Ledger {
			if tokens[l.Token] {
				rt.Rows = append(rt.Rows, []string{strconv.FormatInt(l.Seq, 10), strconv.Itoa(l.Client), l.Token, strconv.FormatInt(l.Fence, 10),
					fmt.Sprintf("%d → %d", l.QuantityBefore, l.QuantityAfter), fmt.Sprintf("%d → %d", l.LockTokenBefore, l.LockTokenAfter), l.At})
			}
		}
	case len(t.Done) > 0:
		rt = &rowTable{Caption: "the done table's rows for these writes", Head: []string{"seq", "job", "key", "client", "token", "clock_timestamp()"}}
		for _, d := range t.Done {
			if tokens[d.Token] {
				rt.Rows = append(rt.Rows, []string{strconv.FormatInt(d.Seq, 10), strconv.FormatInt(d.Job, 10), d.Key, strconv.Itoa(d.Client), d.Token, d.At})
			}
		}
	case len(t.Accepted) > 0:
		rt = &rowTable{Caption: fmt.Sprintf("the %s table's rows for these writes (the database's own order and clock)", t.Table),
			Head: []string{"seq", "client", "token", "clock_timestamp()"}}
		for _, r := range t.Accepted {
			if tokens[r.Token] {
				rt.Rows = append(rt.Rows, []string{strconv.FormatInt(r.Seq, 10), strconv.Itoa(r.Client), r.Token, r.At})
			}
		}
	}
	if rt == nil || len(rt.Rows) == 0 {
		return nil
	}
	return rt
}
