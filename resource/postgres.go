package resource

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
)

// CheckStatement prepares a user's write statement on the server at addr,
// whose tables are the workload's: a syntax error, an unknown table or
// column comes back as the database's own error.
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

// WriterConfig is how a client writes to the database.
type WriterConfig struct {
	// DSN reaches the server through the client's own link.
	DSN string
	// SKU is the row the client writes under (the inventory's).
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
func NewWriter(cfg WriterConfig) *Writer { return &Writer{cfg: cfg} }

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

// Write runs a client's write, do, in a transaction whose session
// settings (lockharness.client, .token, .fence) name the writer, so that a
// trigger knows who wrote. A refusal rolls the transaction back; any other
// error leaves the outcome unknown and drops the connection, whose state
// is unknown too.
func (w *Writer) Write(a Write, do func(ctx context.Context, tx pgx.Tx, cfg WriterConfig, a Write) (Outcome, error)) (Outcome, error) {
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
		if out, err = do(ctx, tx, w.cfg, a); err == nil && out.Refused {
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

// Read is what a client reads under the lock before it writes, with do;
// an error drops the connection.
func (w *Writer) Read(key string, do func(ctx context.Context, conn *pgx.Conn, key string) (int64, error)) (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), w.cfg.Timeout)
	defer cancel()
	conn, err := w.connect(ctx)
	if err != nil {
		return 0, err
	}
	v, err := do(ctx, conn, key)
	if err != nil {
		w.Close()
	}
	return v, err
}
