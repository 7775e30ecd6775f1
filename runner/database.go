package runner

import (
	"context"
	"fmt"
	"time"

	"github.com/lockharness/lockharness/faults"
	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/resource"
	"github.com/lockharness/lockharness/scenario"
	"github.com/lockharness/lockharness/workloads"
)

// database is a run's database: the server, what its workload's tables
// were prepared with, and each client slot's way to it, as its hello names
// it.
type database struct {
	srv      *resource.Server
	workload workloads.Workload
	setup    workloads.Setup
	hellos   []*workloads.Database
}

// startDatabase starts the run's database in dir, creates its workload's
// tables and one link to it per client slot, each as that slot's hello
// names it.
func startDatabase(ctx context.Context, p scenario.Plan, dir string, net *faults.Network, slots int) (*database, error) {
	srv, err := p.Resource.StartServer(ctx, dir)
	if err != nil {
		return nil, err
	}
	s := p.Spec
	db := &database{srv: srv, workload: p.Workload, setup: workloads.Setup{Keys: p.Keys, Idempotent: s.Idempotent}}
	if err := p.Workload.Prepare(ctx, srv.Addr, db.setup); err != nil {
		srv.Close()
		return nil, fmt.Errorf("%s: %w", p.Resource.Name, err)
	}
	fencing, sql := s.Fencing, ""
	if p.Statement != nil {
		fencing, sql = resource.FenceSQL, p.Statement.Text
	}
	for slot := range slots {
		link, err := net.Link(faults.DatabaseLinkName(slot), srv.Addr)
		if err != nil {
			srv.Close()
			return nil, err
		}
		db.hellos = append(db.hellos, &workloads.Database{Kind: p.Resource.Name, DSN: resource.DSN(link.Addr()),
			Workload: s.Workload, SKU: p.Workload.Tables.SKU, Fencing: fencing, SQL: sql, Idempotent: s.Idempotent,
			// A delayed write must be able to arrive after the TTL it
			// is delayed past, so the write's own bound is generous.
			TimeoutMs: max(10*s.TTL.D(), 10*time.Second).Milliseconds()})
	}
	return db, nil
}

// final reads the tables once the clients stopped.
func (db *database) final(p scenario.Plan) (*history.Tables, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	t, err := p.Workload.Final(ctx, db.srv.Addr, db.setup, p.Resource.Name, p.WriteFencing())
	if err != nil {
		return nil, fmt.Errorf("reading the database's final rows: %w", err)
	}
	return t, nil
}

func (db *database) close() {
	if db != nil {
		db.srv.Close()
	}
}
