package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/reports"
	"github.com/lockharness/lockharness/resource"
	"github.com/lockharness/lockharness/scenario"
	"github.com/lockharness/lockharness/workloads"
)

// tally is a workload written here, as a contributor would add one: one
// value and one registry line (below). Each holder appends a row to a
// table of its own; nothing else of the harness knows it, yet it runs (its
// workers are this test binary: TestMain), is checked, listed and drawn.
var tally = workloads.Workload{
	Name:      "test-tally",
	Summary:   "append a row per write to a table of this test's own",
	Resources: []string{resource.Postgres},
	Tables: &workloads.Tables{
		Table: "tally",
		Prepare: func(ctx context.Context, conn *pgx.Conn, _ workloads.Setup) error {
			_, err := conn.Exec(ctx, `CREATE TABLE tally (seq bigserial PRIMARY KEY, client int, token text,
				at timestamptz NOT NULL DEFAULT clock_timestamp())`)
			return err
		},
		Write: func(ctx context.Context, tx pgx.Tx, _ resource.WriterConfig, a resource.Write) (resource.Outcome, error) {
			tag, err := tx.Exec(ctx, "INSERT INTO tally (client, token) VALUES ($1, $2)", a.Client, a.Token)
			return resource.Outcome{Stored: tag.RowsAffected()}, err
		},
	},
}

var tallyRegistered = workloads.Register(tally)

// Every workload runs on every resource it declares, both ways: with no
// fault the run is valid and, on a database, every write answered ok is
// one row of its table of accepted writes; with a client frozen past its
// TTL before its write, the write it sends on waking is caught as sent
// after its lease had certainly expired (expired-write; a stale write
// needs a newer holder of the same key to have written first, which a
// workload with many keys, jobs, need not meet). The workloads come from
// the registry, the one this test adds among them.
func TestEveryWorkloadOnEveryResourceItDeclares(t *testing.T) {
	if tallyRegistered != nil {
		t.Fatalf("the test's workload was refused: %v", tallyRegistered)
	}
	for _, wl := range workloads.Workloads() {
		for _, name := range wl.Resources {
			t.Run(wl.Name+"/"+name, func(t *testing.T) {
				res, _ := resource.Lookup(name)
				if res.Available != nil {
					if err := res.Available(); err != nil {
						t.Skipf("%s: %v", name, err)
					}
				}
				s := spec("cad", "none", 4*time.Second, 1)
				s.Workload, s.Resource = wl.Name, name
				r := run(t, s)
				wantValid(t, r)
				ok := r.Stats["write"].OK
				if ok < 3 {
					t.Errorf("%d writes answered ok in 4s, want at least 3", ok)
				}
				if db := r.Checker.Database; res.Database && (db == nil || db.Accepted != ok || db.Unattributed != 0) {
					t.Errorf("%d writes answered ok; the database's account: %+v", ok, db)
				}

				s = spec("cad", "pause-client", 10*time.Second, 1)
				s.Workload, s.Resource, s.Hold = wl.Name, name, scenario.Duration(300*time.Millisecond)
				out := runStopping(t, s, checker.ExpiredWrite)
				wantAnomaly(t, out.Results, checker.ExpiredWrite)
			})
		}
	}
}

// The added workload's stale write is told in its own table's words: the
// narrative names the tally's rows, the page shows them, and the summary
// counts them, with no edit outside this file.
func TestAWorkloadAddedInATestIsCheckedAndExplained(t *testing.T) {
	needPostgres(t)
	s := spec("cad", "pause-client", 10*time.Second, 1)
	s.Workload, s.Hold = tally.Name, scenario.Duration(300*time.Millisecond)
	out := runStopping(t, s, checker.StaleWrite)
	r := out.Results
	wantAnomaly(t, r, checker.StaleWrite)
	db := r.Checker.Database
	if db == nil || db.Table != "tally" || db.Workload != tally.Name || db.Accepted < 1 {
		t.Fatalf("results.json's database: %+v", db)
	}
	i := slices.IndexFunc(r.Checker.Findings, func(f checker.Finding) bool { return f.Anomaly == checker.StaleWrite })
	if n := r.Checker.Findings[i].Narrative; !strings.Contains(n, "(tally row ") {
		t.Errorf("the stale write's narrative names no tally row: %s", n)
	}
	page, err := os.ReadFile(filepath.Join(out.Dir, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"the tally table&#39;s rows for these writes", fmt.Sprintf("postgres test-tally: %d accepted writes in its tally table", db.Accepted)} {
		if !strings.Contains(string(page), want) {
			t.Errorf("index.html lacks %q", want)
		}
	}
	if lines := reports.DatabaseLines(db); len(lines) != 1 || !strings.Contains(lines[0], "accepted writes in its tally table") {
		t.Errorf("the summary's database lines: %q", lines)
	}
}
