package workloads

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/lockharness/lockharness/resource"
)

// startPostgres starts a server for one test, or skips the test when
// PostgreSQL is not installed; the server is stopped when the test ends,
// also when it fails.
func startPostgres(t *testing.T) *resource.Server {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a PostgreSQL server; skipped with -short")
	}
	if _, err := resource.PostgresBin(); errors.Is(err, resource.ErrNoPostgres) {
		t.Skipf("PostgreSQL is not installed (make setup installs it): %v", err)
	}
	srv, err := resource.StartPostgres(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

func TestInventoryFencing(t *testing.T) {
	srv := startPostgres(t)
	ctx := context.Background()
	if err := Inventory.Prepare(ctx, srv.Addr, Setup{}); err != nil {
		t.Fatal(err)
	}
	seedSQL, err := resource.ParseStatement("UPDATE inventory SET quantity = quantity - 1, lock_token = :fence WHERE sku = :sku AND lock_token = :fence::bigint - 1")
	if err != nil {
		t.Fatal(err)
	}
	if err := resource.CheckStatement(ctx, srv.Addr, seedSQL); err != nil {
		t.Fatalf("the seed's statement: %v", err)
	}
	bad, _ := resource.ParseStatement("UPDATE inventry SET quantity = quantity - 1 WHERE sku = :sku")
	if err := resource.CheckStatement(ctx, srv.Addr, bad); err == nil || !strings.Contains(err.Error(), `relation "inventry" does not exist`) {
		t.Fatalf("a statement on a missing table: %v, want the database's error", err)
	}
	write := func(fencing string, fence int64) resource.Outcome {
		t.Helper()
		w := resource.NewWriter(resource.WriterConfig{DSN: resource.DSN(srv.Addr), SKU: SKU, Fencing: fencing, Statement: seedSQL, Timeout: 5e9})
		defer w.Close()
		o, err := w.Write(resource.Write{Client: 1, Key: "k", Token: "t", Fence: fence}, Inventory.Tables.Write)
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	steps := []struct {
		fencing string
		fence   int64
		refused bool
	}{
		{resource.FenceWhere, 5, false},
		{resource.FenceWhere, 5, false}, // the same holder again: an equal fence passes
		{resource.FenceWhere, 4, true},  // a lower fence loses in the statement
		{resource.FenceAppCheck, 4, true},
		{resource.FenceAppCheck, 6, false},
		{resource.FenceCAS, 2, false}, // cas matches the version read, not the fence
		{resource.FenceNone, 1, false},
		{resource.FenceSQL, 2, false}, // lock_token is 1: the seed's 2 after 1 lands
		{resource.FenceSQL, 2, true},
	}
	for i, s := range steps {
		if o := write(s.fencing, s.fence); o.Refused != s.refused {
			t.Fatalf("step %d (%s, fence %d): %+v, want refused %v", i, s.fencing, s.fence, o, s.refused)
		}
	}
	// The writer sells from the SKU it is given: there is no row "xyz".
	other := resource.NewWriter(resource.WriterConfig{DSN: resource.DSN(srv.Addr), SKU: "xyz", Timeout: 5e9})
	defer other.Close()
	if o, err := other.Write(resource.Write{Client: 2, Token: "u", Fence: 9}, Inventory.Tables.Write); err != nil || !o.Refused {
		t.Fatalf("a write to a SKU with no row: %+v %v, want refused", o, err)
	}
	tables, err := Inventory.Final(ctx, srv.Addr, Setup{}, resource.Postgres, resource.FenceWhere)
	if err != nil {
		t.Fatal(err)
	}
	if len(tables.Ledger) != 6 || tables.Inventory[0].Quantity != Stock-6 || tables.Inventory[0].LockToken != 2 {
		t.Fatalf("final rows %+v", tables)
	}
	if l := tables.Ledger[1]; l.Fence != 5 || l.LockTokenBefore != 5 || l.LockTokenAfter != 5 {
		t.Fatalf("ledger row of the second write under fence 5: %+v", l)
	}
	if l := tables.Ledger[2]; l.Fence != 6 || l.LockTokenBefore != 5 || l.LockTokenAfter != 6 || l.Client != 1 || l.Token != "t" || l.QuantityBefore-l.QuantityAfter != 1 {
		t.Fatalf("ledger row %+v", l)
	}
}

func TestJobsIdempotent(t *testing.T) {
	srv := startPostgres(t)
	ctx := context.Background()
	setup := Setup{Keys: []string{"k:0", "k:1"}, Idempotent: true}
	if err := Jobs.Prepare(ctx, srv.Addr, setup); err != nil {
		t.Fatal(err)
	}
	w := resource.NewWriter(resource.WriterConfig{DSN: resource.DSN(srv.Addr), Idempotent: true, Timeout: 5e9})
	defer w.Close()
	job, err := w.Read("k:1", Jobs.Tables.Read)
	if err != nil || job != JobsPerKey+1 {
		t.Fatalf("first job behind k:1: %d %v", job, err)
	}
	for i, want := range []int64{1, 0} {
		if o, err := w.Write(resource.Write{Client: i, Token: "t", Job: job}, Jobs.Tables.Write); err != nil || o.Stored != want {
			t.Fatalf("processing %d: %+v %v, want %d rows", i, o, err, want)
		}
	}
	if next, _ := w.Read("k:1", Jobs.Tables.Read); next != job+1 {
		t.Fatalf("next job %d", next)
	}
	tables, err := Jobs.Final(ctx, srv.Addr, setup, resource.Postgres, resource.FenceNone)
	if err != nil || tables.Jobs != 2*JobsPerKey || len(tables.Done) != 1 || tables.Done[0].Key != "k:1" {
		t.Fatalf("final %+v %v", tables, err)
	}
}
