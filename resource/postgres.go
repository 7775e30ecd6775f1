package resource

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lockharness/lockharness/history"
)

// Schema is what a run's database holds.
type Schema struct {
	// Workload is inventory or jobs.
	Workload string
	// Keys are the jobs' lock keys (jobs).
	Keys []string
	// Idempotent makes done's job unique, so that a second processing of a
	// job inserts nothing.
	Idempotent bool
}

// inventorySchema is the seed's table plus a ledger that a trigger writes
// in the same transaction as every accepted update, from the writer's
// session settings, with the row before and after: the database's own
// record of what it accepted and in which order, whatever statement a
// client used.
const inventorySchema = `
CREATE TABLE inventory (sku text PRIMARY KEY, quantity bigint NOT NULL, lock_token bigint NOT NULL DEFAULT 0);
CREATE TABLE ledger (
	seq bigserial PRIMARY KEY, sku text NOT NULL, client int, token text, fence bigint,
	quantity_before bigint, quantity_after bigint, lock_token_before bigint, lock_token_after bigint,
	at timestamptz NOT NULL DEFAULT clock_timestamp());
CREATE FUNCTION ledger_write() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO ledger (sku, client, token, fence, quantity_before, quantity_after, lock_token_before, lock_token_after)
	VALUES (NEW.sku, nullif(current_setting('lockharness.client', true), '')::int,
		nullif(current_setting('lockharness.token', true), ''),
		nullif(current_setting('lockharness.fence', true), '')::bigint,
		OLD.quantity, NEW.quantity, OLD.lock_token, NEW.lock_token);
	RETURN NEW;
END $$;
CREATE TRIGGER ledger AFTER UPDATE ON inventory FOR EACH ROW EXECUTE FUNCTION ledger_write();
`

const jobsSchema = `
CREATE TABLE jobs (id bigint PRIMARY KEY, lock_key text NOT NULL);
CREATE INDEX jobs_by_key ON jobs (lock_key, id);
CREATE TABLE done (seq bigserial PRIMARY KEY, job bigint NOT NULL REFERENCES jobs, client int, token text,
	at timestamptz NOT NULL DEFAULT clock_timestamp());
CREATE INDEX done_by_job ON done (job);
`

// Prepare creates the workload's tables on the server at addr and seeds
// them.
func Prepare(ctx context.Context, addr string, s Schema) error {
	conn, err := pgx.Connect(ctx, DSN(addr))
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	switch s.Workload {
	case Inventory:
		if _, err := conn.Exec(ctx, inventorySchema); err != nil {
			return fmt.Errorf("creating the inventory tables: %w", err)
		}
		_, err = conn.Exec(ctx, "INSERT INTO inventory (sku, quantity, lock_token) VALUES ($1, $2, 0)", SKU, Stock)
	case Jobs:
		if _, err := conn.Exec(ctx, jobsSchema); err != nil {
			return fmt.Errorf("creating the jobs tables: %w", err)
		}
		if s.Idempotent {
			if _, err := conn.Exec(ctx, "CREATE UNIQUE INDEX done_job ON done (job)"); err != nil {
				return err
			}
		}
		// Job k*JobsPerKey+i+1 waits behind key k.
		_, err = conn.Exec(ctx, `INSERT INTO jobs (id, lock_key)
			SELECT (k.n - 1) * $2 + g, k.key FROM unnest($1::text[]) WITH ORDINALITY AS k(key, n), generate_series(1, $2) AS g`,
			s.Keys, JobsPerKey)
	default:
		return fmt.Errorf("no tables for workload %q", s.Workload)
	}
	return err
}

// CheckStatement prepares a user's write statement against the inventory
// schema on the server at addr: a syntax error, an unknown table or column
// comes back as the database's own error.
func CheckStatement(ctx context.Context, addr string, st Statement) error {
	conn, err := pgx.Connect(ctx, DSN(addr))
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	if _, err := conn.Prepare(ctx, "write_sql", st.SQL); err != nil {
		return fmt.Errorf("PostgreSQL refuses it: %w", err)
	}
	return nil
}

// Final reads the workload's tables once every client has stopped.
func Final(ctx context.Context, addr string, s Schema, fencing string) (*history.Tables, error) {
	conn, err := pgx.Connect(ctx, DSN(addr))
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	t := &history.Tables{Resource: Postgres, Workload: s.Workload, Fencing: fencing}
	switch s.Workload {
	case Inventory:
		t.Initial = Stock
		rows, _ := conn.Query(ctx, "SELECT sku, quantity, lock_token FROM inventory ORDER BY sku")
		if t.Inventory, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (history.InventoryRow, error) {
			var x history.InventoryRow
			err := r.Scan(&x.SKU, &x.Quantity, &x.LockToken)
			return x, err
		}); err != nil {
			return nil, err
		}
		rows, _ = conn.Query(ctx, `SELECT seq, sku, coalesce(client, -1), coalesce(token, ''), coalesce(fence, 0),
			quantity_before, quantity_after, lock_token_before, lock_token_after, at FROM ledger ORDER BY seq`)
		if t.Ledger, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (history.LedgerRow, error) {
			var x history.LedgerRow
			var at time.Time
			err := r.Scan(&x.Seq, &x.SKU, &x.Client, &x.Token, &x.Fence, &x.QuantityBefore, &x.QuantityAfter, &x.LockTokenBefore, &x.LockTokenAfter, &at)
			x.At = at.UTC().Format(time.RFC3339Nano)
			return x, err
		}); err != nil {
			return nil, err
		}
	case Jobs:
		t.Idempotent = s.Idempotent
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM jobs").Scan(&t.Jobs); err != nil {
			return nil, err
		}
		rows, _ := conn.Query(ctx, `SELECT d.seq, d.job, j.lock_key, coalesce(d.client, -1), coalesce(d.token, ''), d.at
			FROM done d JOIN jobs j ON j.id = d.job ORDER BY d.seq`)
		if t.Done, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (history.DoneRow, error) {
			var x history.DoneRow
			var at time.Time
			err := r.Scan(&x.Seq, &x.Job, &x.Key, &x.Client, &x.Token, &at)
			x.At = at.UTC().Format(time.RFC3339Nano)
			return x, err
		}); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// WriterConfig is how a client writes to the database.
type WriterConfig struct {
	// DSN reaches the server through the client's own link.
	DSN      string
	Workload string
	// SKU is the inventory row the client sells from (default SKU).
	SKU string
	// Fencing is one of Fencings, or FenceSQL with Statement.
	Fencing    string
	Statement  Statement
	Idempotent bool
	// Timeout bounds each read or write (a delayed write must outlast the
	// TTL it is delayed past, so this is long).
	Timeout time.Duration
}

// Writer is one client's connection to the database, through its own
// link. A read or write that fails for any reason but a refusal leaves its
// outcome unknown; the connection is then dropped and made again.
type Writer struct {
	cfg  WriterConfig
	conn *pgx.Conn
}

// NewWriter makes a writer; it connects on first use.
func NewWriter(cfg WriterConfig) *Writer {
	if cfg.SKU == "" {
		cfg.SKU = SKU
	}
	return &Writer{cfg: cfg}
}

// Write is what a client writes: who it is and what it holds.
type Write struct {
	Client int
	Key    string
	Token  string
	Fence  int64
	// Job is the job a jobs client processes (what its read returned).
	Job int64
}

// Outcome is a write's result. A refused write (a fence that lost, a job
// already done) has Refused set and says why; an accepted one has what it
// stored: the quantity left (inventory) or the rows inserted (jobs).
type Outcome struct {
	Refused bool
	Why     string
	Stored  int64
}

// Close drops the connection.
func (w *Writer) Close() {
	if w.conn != nil {
		w.conn.Close(context.Background())
		w.conn = nil
	}
}

func (w *Writer) connect(ctx context.Context) (*pgx.Conn, error) {
	if w.conn != nil && !w.conn.IsClosed() {
		return w.conn, nil
	}
	conn, err := pgx.Connect(ctx, w.cfg.DSN)
	if err != nil {
		return nil, err
	}
	w.conn = conn
	return conn, nil
}

// run runs do in a transaction whose session settings name the writer, so
// the ledger's trigger knows who wrote. A refusal rolls the transaction
// back; any other error leaves the outcome unknown and drops the
// connection, whose state is unknown too.
func (w *Writer) run(a Write, do func(ctx context.Context, tx pgx.Tx) (Outcome, error)) (Outcome, error) {
	ctx, cancel := context.WithTimeout(context.Background(), w.cfg.Timeout)
	defer cancel()
	conn, err := w.connect(ctx)
	if err != nil {
		return Outcome{}, err
	}
	var out Outcome
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT set_config('lockharness.client', $1, true), set_config('lockharness.token', $2, true),
			set_config('lockharness.fence', $3, true)`, strconv.Itoa(a.Client), a.Token, strconv.FormatInt(a.Fence, 10)); err != nil {
			return err
		}
		var err error
		if out, err = do(ctx, tx); err == nil && out.Refused {
			return errRefused
		}
		return err
	})
	if errors.Is(err, errRefused) {
		return out, nil
	}
	if err != nil {
		w.Close()
		return Outcome{}, err
	}
	return out, nil
}

var errRefused = errors.New("refused")

// Read is what a client reads under the lock before it writes: the next
// job waiting behind its key (jobs; 0 when none is left).
func (w *Writer) Read(key string) (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), w.cfg.Timeout)
	defer cancel()
	conn, err := w.connect(ctx)
	if err != nil {
		return 0, err
	}
	var job int64
	err = conn.QueryRow(ctx, `SELECT coalesce(min(j.id), 0) FROM jobs j
		WHERE j.lock_key = $1 AND NOT EXISTS (SELECT 1 FROM done d WHERE d.job = j.id)`, key).Scan(&job)
	if err != nil {
		w.Close()
	}
	return job, err
}

// Write performs a client's protected write with the configured fencing.
func (w *Writer) Write(a Write) (Outcome, error) {
	if w.cfg.Workload == Jobs {
		return w.run(a, func(ctx context.Context, tx pgx.Tx) (Outcome, error) {
			insert := "INSERT INTO done (job, client, token) VALUES ($1, $2, $3)"
			if w.cfg.Idempotent {
				insert += " ON CONFLICT (job) DO NOTHING"
			}
			tag, err := tx.Exec(ctx, insert, a.Job, a.Client, a.Token)
			return Outcome{Stored: tag.RowsAffected()}, err
		})
	}
	const decrement = "UPDATE inventory SET quantity = quantity - 1, lock_token = $2 WHERE sku = $1"
	sku := w.cfg.SKU
	return w.run(a, func(ctx context.Context, tx pgx.Tx) (Outcome, error) {
		var left int64
		update := func(sql string, args ...any) (Outcome, error) {
			err := tx.QueryRow(ctx, sql+" RETURNING quantity", args...).Scan(&left)
			if errors.Is(err, pgx.ErrNoRows) {
				return Outcome{Refused: true, Why: "the database updated no row: " + sql}, nil
			}
			return Outcome{Stored: left}, err
		}
		switch w.cfg.Fencing {
		case FenceWhere:
			// Equal passes: a holder writes several times under one fence.
			return update(decrement+" AND lock_token <= $2", sku, a.Fence)
		case FenceCAS, FenceAppCheck:
			var current int64
			if err := tx.QueryRow(ctx, "SELECT lock_token FROM inventory WHERE sku = $1", sku).Scan(&current); err != nil {
				return Outcome{}, err
			}
			if w.cfg.Fencing == FenceCAS {
				return update(decrement+" AND lock_token = $3", sku, a.Fence, current)
			}
			if current > a.Fence {
				return Outcome{Refused: true, Why: fmt.Sprintf("the client read lock_token %d, above its fence %d, and did not write", current, a.Fence)}, nil
			}
			return update(decrement, sku, a.Fence)
		case FenceSQL:
			args := make([]any, len(w.cfg.Statement.Params))
			for i, p := range w.cfg.Statement.Params {
				args[i] = map[string]any{"sku": sku, "fence": a.Fence, "token": a.Token, "client": a.Client}[p]
			}
			tag, err := tx.Exec(ctx, w.cfg.Statement.SQL, args...)
			if err != nil {
				return Outcome{}, err
			}
			if tag.RowsAffected() == 0 {
				return Outcome{Refused: true, Why: "the statement updated no row"}, nil
			}
			err = tx.QueryRow(ctx, "SELECT quantity FROM inventory WHERE sku = $1", sku).Scan(&left)
			return Outcome{Stored: left}, err
		}
		return update(decrement, sku, a.Fence)
	})
}

// RowsOf counts the rows the workload's table on the server at addr holds
// of writes under token: the inventory's ledger, or jobs' done rows. A
// worker's conformance session checks its writes by it.
func RowsOf(ctx context.Context, addr, workload, token string) (int64, error) {
	conn, err := pgx.Connect(ctx, DSN(addr))
	if err != nil {
		return 0, err
	}
	defer conn.Close(ctx)
	table := "ledger"
	if workload == Jobs {
		table = "done"
	}
	var n int64
	err = conn.QueryRow(ctx, "SELECT count(*) FROM "+table+" WHERE token = $1", token).Scan(&n)
	return n, err
}

// RaiseFence stores a lock_token in the inventory higher than any fence a
// lock hands out in a session, so that a fenced write must be refused.
func RaiseFence(ctx context.Context, addr string) error {
	conn, err := pgx.Connect(ctx, DSN(addr))
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "UPDATE inventory SET lock_token = $1", int64(1)<<60)
	return err
}
