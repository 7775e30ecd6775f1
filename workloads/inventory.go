package workloads

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/resource"
)

// Inventory is the seed's workload: every holder sells one unit of one
// inventory row in PostgreSQL, fenced as --fencing says or by a team's own
// statement (--write-sql), and a trigger writes each accepted update to a
// ledger the checker audits.
var Inventory = Workload{
	Name:      "inventory",
	Summary:   "sell one unit of the seed's inventory row per holder; a trigger writes the ledger the checker audits",
	Resources: []string{resource.Postgres},
	OneKey:    true,
	Fencings:  []string{resource.FenceWhere, resource.FenceCAS, resource.FenceAppCheck},
	WriteSQL:  true,
	Audits:    []string{history.AuditLedger},
	Tables: &Tables{Table: "ledger", SKU: SKU, Prepare: prepareInventory, Write: writeInventory, Final: finalInventory,
		FenceAbove: func(ctx context.Context, conn *pgx.Conn) error {
			_, err := conn.Exec(ctx, "UPDATE inventory SET lock_token = $1", int64(1)<<60)
			return err
		}},
}

// SKU is the inventory row every client sells from (the seed's 'abc'), and
// Stock is what it starts with: more than any run sells.
const (
	SKU   = "abc"
	Stock = 1_000_000
)

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

func prepareInventory(ctx context.Context, conn *pgx.Conn, _ Setup) error {
	if _, err := conn.Exec(ctx, inventorySchema); err != nil {
		return fmt.Errorf("creating the inventory tables: %w", err)
	}
	_, err := conn.Exec(ctx, "INSERT INTO inventory (sku, quantity, lock_token) VALUES ($1, $2, 0)", SKU, Stock)
	return err
}

// writeInventory sells one unit of the writer's SKU with the configured
// fencing.
func writeInventory(ctx context.Context, tx pgx.Tx, cfg resource.WriterConfig, a resource.Write) (resource.Outcome, error) {
	const decrement = "UPDATE inventory SET quantity = quantity - 1, lock_token = $2 WHERE sku = $1"
	sku := cfg.SKU
	var left int64
	update := func(sql string, args ...any) (resource.Outcome, error) {
		err := tx.QueryRow(ctx, sql+" RETURNING quantity", args...).Scan(&left)
		if errors.Is(err, pgx.ErrNoRows) {
			return resource.Outcome{Refused: true, Why: "the database updated no row: " + sql}, nil
		}
		return resource.Outcome{Stored: left}, err
	}
	switch cfg.Fencing {
	case resource.FenceWhere:
		// Equal passes: a holder writes several times under one fence.
		return update(decrement+" AND lock_token <= $2", sku, a.Fence)
	case resource.FenceCAS, resource.FenceAppCheck:
		var current int64
		if err := tx.QueryRow(ctx, "SELECT lock_token FROM inventory WHERE sku = $1", sku).Scan(&current); err != nil {
			return resource.Outcome{}, err
		}
		if cfg.Fencing == resource.FenceCAS {
			return update(decrement+" AND lock_token = $3", sku, a.Fence, current)
		}
		if current > a.Fence {
			return resource.Outcome{Refused: true, Why: fmt.Sprintf("the client read lock_token %d, above its fence %d, and did not write", current, a.Fence)}, nil
		}
		return update(decrement, sku, a.Fence)
	case resource.FenceSQL:
		args := make([]any, len(cfg.Statement.Params))
		for i, p := range cfg.Statement.Params {
			args[i] = map[string]any{"sku": sku, "fence": a.Fence, "token": a.Token, "client": a.Client}[p]
		}
		tag, err := tx.Exec(ctx, cfg.Statement.SQL, args...)
		if err != nil {
			return resource.Outcome{}, err
		}
		if tag.RowsAffected() == 0 {
			return resource.Outcome{Refused: true, Why: "the statement updated no row"}, nil
		}
		err = tx.QueryRow(ctx, "SELECT quantity FROM inventory WHERE sku = $1", sku).Scan(&left)
		return resource.Outcome{Stored: left}, err
	}
	return update(decrement, sku, a.Fence)
}

// finalInventory reads the inventory's rows and the ledger.
func finalInventory(ctx context.Context, conn *pgx.Conn, _ Setup, t *history.Tables) error {
	t.Initial = Stock
	var err error
	rows, _ := conn.Query(ctx, "SELECT sku, quantity, lock_token FROM inventory ORDER BY sku")
	if t.Inventory, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (history.InventoryRow, error) {
		var x history.InventoryRow
		err := r.Scan(&x.SKU, &x.Quantity, &x.LockToken)
		return x, err
	}); err != nil {
		return err
	}
	rows, _ = conn.Query(ctx, `SELECT seq, sku, coalesce(client, -1), coalesce(token, ''), coalesce(fence, 0),
		quantity_before, quantity_after, lock_token_before, lock_token_after, at FROM ledger ORDER BY seq`)
	t.Ledger, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (history.LedgerRow, error) {
		var x history.LedgerRow
		var at time.Time
		err := r.Scan(&x.Seq, &x.SKU, &x.Client, &x.Token, &x.Fence, &x.QuantityBefore, &x.QuantityAfter, &x.LockTokenBefore, &x.LockTokenAfter, &at)
		x.At = at.UTC().Format(time.RFC3339Nano)
		return x, err
	})
	return err
}
