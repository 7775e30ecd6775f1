package workloads

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/resource"

	"github.com/lockharness/lockharness/internal/suggest"
)

// Workload is what clients do under the lock, all of it in one value: the
// resources it writes to, the options it takes, its database side and the
// checker's audits of its final rows. A workload is one file with its value
// and one Register line; the run, the worker, the worker check, `harness
// list`, the checker and the pages take everything else from here.
type Workload struct {
	Name    string
	Summary string
	// Resources are the resources (resource.Resources) it runs on; the
	// first is the one a spec that names none gets.
	Resources []string
	// Keys is its number of lock keys when the spec gives none (0: the
	// one key, Spec.Key). OneKey refuses --keys: it writes one row under
	// one key.
	Keys   int
	OneKey bool
	// Fencings are the --fencing modes it takes besides none; WriteSQL:
	// it takes --write-sql (a team's own write statement); Idempotent: it
	// takes --idempotent.
	Fencings   []string
	WriteSQL   bool
	Idempotent bool
	// Audits are the checker's audits of its final rows
	// (history.AuditLedger, history.AuditDuplicates), besides the match of
	// every accepted row to its write that every database workload gets.
	Audits []string
	// Tables is its side of a database resource; nil when it writes to
	// the harness's memory only.
	Tables *Tables
}

// Tables is a workload's side of a database: its schema and seed, the
// read a holder makes before each write, the write itself (both run by the
// client's worker, through the client's own link), and its final rows.
type Tables struct {
	// Table records every accepted write, one row each, in the order the
	// database applied them, with the columns seq, client, token and at
	// (clock_timestamp()): the rows the checker matches to the history's
	// writes.
	Table string
	// SKU is the row its writes go under, as the hello's database names
	// it for workers that write by themselves ("" : none).
	SKU string
	// Prepare creates its tables and seeds them.
	Prepare func(ctx context.Context, conn *pgx.Conn, s Setup) error
	// Read is a holder's read before each write; its value is what the
	// write gets (Write.Job), and 0 ends the holder's turn. Nil: a holder
	// writes without reading.
	Read func(ctx context.Context, conn *pgx.Conn, key string) (int64, error)
	// Write is a holder's protected write, inside a transaction whose
	// session names the writer (resource.Writer).
	Write func(ctx context.Context, tx pgx.Tx, cfg resource.WriterConfig, w resource.Write) (resource.Outcome, error)
	// Final reads its own rows into t once the clients stopped; nil: the
	// rows of Table, as t.Accepted.
	Final func(ctx context.Context, conn *pgx.Conn, s Setup, t *history.Tables) error
	// FenceAbove stores a fence higher than any a lock hands out in a
	// session, so that a fenced write must be refused (nil: it has no
	// fence to raise).
	FenceAbove func(ctx context.Context, conn *pgx.Conn) error
}

// Setup is what a run's database is prepared with.
type Setup struct {
	// Keys are the lock keys the clients draw from (a workload with Keys).
	Keys []string
	// Idempotent: the spec asked for an idempotent write.
	Idempotent bool
}

// registry holds the workloads this build knows, in the order they are
// listed: a built-in workload's one registry line is here.
var registry = []Workload{
	Mutex,
	Inventory,
	Jobs,
}

// Register adds a workload from outside this package (a program built on
// the harness, a test); a name taken, a resource unknown or a database
// resource without Tables is refused.
func Register(w Workload) error {
	if _, err := Lookup(w.Name); err == nil {
		return fmt.Errorf("workload %s is registered already", w.Name)
	}
	if err := w.Check(); err != nil {
		return err
	}
	registry = append(registry, w)
	return nil
}

// Check holds a workload to what the run and the checker need of it.
func (w Workload) Check() error {
	if w.Name == "" {
		return fmt.Errorf("a workload needs a name")
	}
	if len(w.Resources) == 0 {
		return fmt.Errorf("workload %s names no resource it writes to", w.Name)
	}
	for _, name := range w.Resources {
		r, ok := resource.Lookup(name)
		if !ok {
			return fmt.Errorf("workload %s: %w", w.Name, suggest.Unknown("resource", name, resource.Names(), ""))
		}
		if r.Database && (w.Tables == nil || w.Tables.Table == "" || w.Tables.Prepare == nil || w.Tables.Write == nil) {
			return fmt.Errorf("workload %s writes to %s and needs its Tables: Table, Prepare and Write", w.Name, name)
		}
	}
	return nil
}

// Workloads lists the registered workloads.
func Workloads() []Workload { return slices.Clone(registry) }

// Names lists their names.
func Names() []string {
	names := make([]string, len(registry))
	for i, w := range registry {
		names[i] = w.Name
	}
	return names
}

// Lookup finds a workload by name; an unknown one is an error that lists
// the valid names and the nearest.
func Lookup(name string) (Workload, error) {
	for _, w := range registry {
		if w.Name == name {
			return w, nil
		}
	}
	return Workload{}, suggest.Unknown("workload", name, Names(), "")
}

// Unregister removes a workload again: a test that registered one of its
// own gives the registry back as it found it.
func Unregister(name string) {
	registry = slices.DeleteFunc(registry, func(w Workload) bool { return w.Name == name })
}

// Default is the workload a spec that names none runs.
const Default = "mutex"

// Prepare creates the workload's tables on the database at addr and seeds
// them.
func (w Workload) Prepare(ctx context.Context, addr string, s Setup) error {
	return w.onDatabase(ctx, addr, func(conn *pgx.Conn) error { return w.Tables.Prepare(ctx, conn, s) })
}

// Final reads the workload's final rows on the database at addr once every
// client stopped, with what the checker needs to judge them: the table of
// accepted writes, the audits, and how writes were fenced.
func (w Workload) Final(ctx context.Context, addr string, s Setup, res, fencing string) (*history.Tables, error) {
	t := &history.Tables{Resource: res, Workload: w.Name, Fencing: fencing, Table: w.Tables.Table, Audits: w.Audits}
	err := w.onDatabase(ctx, addr, func(conn *pgx.Conn) error {
		if w.Tables.Final != nil {
			return w.Tables.Final(ctx, conn, s, t)
		}
		rows, _ := conn.Query(ctx, "SELECT seq, coalesce(client, -1), coalesce(token, ''), at FROM "+pgx.Identifier{w.Tables.Table}.Sanitize()+" ORDER BY seq")
		var err error
		t.Accepted, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (history.AcceptedRow, error) {
			var x history.AcceptedRow
			var at time.Time
			err := r.Scan(&x.Seq, &x.Client, &x.Token, &at)
			x.At = at.UTC().Format(time.RFC3339Nano)
			return x, err
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	return t, nil
}

// RowsOf counts the rows the workload's table of accepted writes holds of
// writes under token: a worker's conformance session checks its writes by
// it.
func (w Workload) RowsOf(ctx context.Context, addr, token string) (int64, error) {
	var n int64
	err := w.onDatabase(ctx, addr, func(conn *pgx.Conn) error {
		return conn.QueryRow(ctx, "SELECT count(*) FROM "+pgx.Identifier{w.Tables.Table}.Sanitize()+" WHERE token = $1", token).Scan(&n)
	})
	return n, err
}

// FenceAbove stores a fence above any a lock hands out in a session, so
// that a fenced write must be refused.
func (w Workload) FenceAbove(ctx context.Context, addr string) error {
	if w.Tables == nil || w.Tables.FenceAbove == nil {
		return fmt.Errorf("workload %s has no fence to raise", w.Name)
	}
	return w.onDatabase(ctx, addr, func(conn *pgx.Conn) error { return w.Tables.FenceAbove(ctx, conn) })
}

func (w Workload) onDatabase(ctx context.Context, addr string, do func(*pgx.Conn) error) error {
	if w.Tables == nil {
		return fmt.Errorf("workload %s writes to no database", w.Name)
	}
	conn, err := pgx.Connect(ctx, resource.DSN(addr))
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	return do(conn)
}

// Reads reports whether a holder reads before each write.
func (w Workload) Reads() bool { return w.Tables != nil && w.Tables.Read != nil }

// Ops are the requests a holder sends in one turn, in order; extend comes
// only with a lock that extends on request.
func (w Workload) Ops() []string {
	ops := []string{history.Acquire}
	if w.Reads() {
		ops = append(ops, history.Read)
	}
	return append(ops, history.Write, history.Extend, history.Release)
}

// WritesTo reports whether it runs on the resource.
func (w Workload) WritesTo(res string) bool { return slices.Contains(w.Resources, res) }

// Takes says what the workload takes besides its resources, for lists and
// errors: its fencings, --write-sql, --idempotent, --keys.
func (w Workload) Takes() string {
	var takes []string
	if len(w.Fencings) > 0 {
		takes = append(takes, "--fencing "+strings.Join(w.Fencings, "|"))
	}
	if w.WriteSQL {
		takes = append(takes, "--write-sql")
	}
	if w.Idempotent {
		takes = append(takes, "--idempotent")
	}
	if !w.OneKey {
		takes = append(takes, "--keys")
	}
	return strings.Join(takes, " ")
}
