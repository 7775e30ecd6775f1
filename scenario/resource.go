package scenario

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lockharness/lockharness/cluster"
	"github.com/lockharness/lockharness/faults"
	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/locks"
	"github.com/lockharness/lockharness/resource"
	"github.com/lockharness/lockharness/workloads"

	"github.com/lockharness/lockharness/internal/suggest"
)

// Workloads this build knows: mutex protects the in-memory counter;
// inventory and jobs write to a database.
const (
	WorkloadMutex     = "mutex"
	WorkloadInventory = resource.Inventory
	WorkloadJobs      = resource.Jobs
)

// Workloads lists them.
var Workloads = []string{WorkloadMutex, WorkloadInventory, WorkloadJobs}

// DefaultJobKeys is the jobs workload's number of lock keys.
const DefaultJobKeys = 20

// resolveResource checks the resource side of a spec and fills in its
// defaults: the resource a workload implies, and the fencing. It returns
// the user's statement when --write-sql gives one, checked by a database.
func resolveResource(s *Spec, p Plan) (*resource.Statement, []error) {
	var errs []error
	db := s.Workload == WorkloadInventory || s.Workload == WorkloadJobs
	switch {
	case s.Resource == "" && db:
		s.Resource = resource.Postgres
	case s.Resource == "":
		s.Resource = resource.Memory
	case !slices.Contains(resource.Names, s.Resource):
		return nil, []error{suggest.Unknown("resource", s.Resource, resource.Names, "")}
	case s.Resource == resource.Memory && db:
		errs = append(errs, fmt.Errorf("workload %s writes to a database: use --resource %s (or leave --resource out)", s.Workload, resource.Postgres))
	case s.Resource == resource.Postgres && s.Workload == WorkloadMutex:
		errs = append(errs, fmt.Errorf("workload %s counts in the harness's memory; with --resource %s use --workload %s or %s", WorkloadMutex, resource.Postgres, WorkloadInventory, WorkloadJobs))
	}
	if s.Fencing == "" {
		s.Fencing = resource.FenceNone
	}
	if !slices.Contains(resource.Fencings, s.Fencing) {
		errs = append(errs, suggest.Unknown("fencing", s.Fencing, resource.Fencings, ""))
	}
	if s.Fencing != resource.FenceNone && s.Workload != WorkloadInventory {
		errs = append(errs, fmt.Errorf("--fencing %s fences the inventory's writes; workload %s has none to fence", s.Fencing, s.Workload))
	}
	if s.WriteSQL != "" && s.Workload != WorkloadInventory {
		errs = append(errs, fmt.Errorf("--write-sql replaces the inventory's write; workload %s has none", s.Workload))
	}
	if s.WriteSQL != "" && s.Fencing != resource.FenceNone {
		errs = append(errs, fmt.Errorf("give --fencing %s or --write-sql %s, not both: the statement is the fencing", s.Fencing, s.WriteSQL))
	}
	if s.Keys < 0 || s.Keys > 0 && s.Workload == WorkloadInventory {
		errs = append(errs, fmt.Errorf("--keys %d: the mutex and jobs workloads take a number of keys, at least 1; inventory sells one row under one key", s.Keys))
	}
	if s.Idempotent && s.Workload != WorkloadJobs {
		errs = append(errs, fmt.Errorf("--idempotent makes the jobs workload's insert idempotent; workload %s has none", s.Workload))
	}
	if s.Resource != resource.Postgres {
		return nil, errs
	}
	if s.Backend == cluster.BackendDocker {
		errs = append(errs, fmt.Errorf("--resource %s runs PostgreSQL as a local process; it does not run with --backend %s yet (use --backend %s)", resource.Postgres, cluster.BackendDocker, cluster.BackendLocal))
	}
	if s.Lock == ExecLock && p.Worker.Name != "" && !slices.Contains(p.Worker.Writes, resource.Postgres) {
		errs = append(errs, fmt.Errorf("worker %s does not write to %s itself (its ready line has no \"writes\": [%q]); a real resource needs workers that do (docs/worker-protocol.md)", p.Worker.Name, resource.Postgres, resource.Postgres))
	}
	if _, err := resource.PostgresBin(); err != nil {
		errs = append(errs, err)
	}
	fenceNeeded := s.Fencing != resource.FenceNone
	var st *resource.Statement
	if s.WriteSQL != "" {
		text, err := os.ReadFile(s.WriteSQL)
		if err != nil {
			return nil, append(errs, fmt.Errorf("--write-sql: %w", err))
		}
		parsed, err := resource.ParseStatement(string(text))
		if err != nil {
			return nil, append(errs, fmt.Errorf("--write-sql %s: %w", s.WriteSQL, err))
		}
		st = &parsed
		fenceNeeded = slices.Contains(st.Params, "fence")
	}
	if fenceNeeded && p.Lock.Name != "" && !p.Lock.Fences {
		what := "--fencing " + s.Fencing
		if st != nil {
			what = "--write-sql " + s.WriteSQL + " (it uses :fence)"
		}
		errs = append(errs, fmt.Errorf("%s needs fencing tokens, and lock %s hands out none (locks that do: %s)", what, p.Lock.Name, strings.Join(fencingLocks(), ", ")))
	}
	if st != nil && len(errs) == 0 {
		if err := checkStatement(*st); err != nil {
			errs = append(errs, fmt.Errorf("--write-sql %s: %w", s.WriteSQL, err))
		}
	}
	return st, errs
}

// checked remembers statements a database accepted: a suite resolves the
// same spec many times.
var checked sync.Map // statement text → struct{}

// checkStatement has a scratch PostgreSQL prepare the user's statement
// against the inventory schema, so that bad SQL is refused with the
// database's own error before anything of the run starts.
func checkStatement(st resource.Statement) error {
	if _, ok := checked.Load(st.SQL); ok {
		return nil
	}
	dir, err := os.MkdirTemp("", "lockharness-sql-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv, err := resource.StartPostgres(ctx, filepath.Join(dir, "postgres"))
	if err != nil {
		return fmt.Errorf("starting PostgreSQL to check it: %w", err)
	}
	defer srv.Close()
	if err := resource.Prepare(ctx, srv.Addr, resource.Schema{Workload: resource.Inventory}); err != nil {
		return err
	}
	if err := resource.CheckStatement(ctx, srv.Addr, st); err != nil {
		return err
	}
	checked.Store(st.SQL, struct{}{})
	return nil
}

// database is a run's PostgreSQL: the server and the schema its workload
// wrote.
type database struct {
	srv    *resource.Server
	schema resource.Schema
}

// schemaOf is the tables a planned workload needs: jobs, a queue per key.
func schemaOf(p Plan) resource.Schema {
	var keys []string
	if p.Spec.Workload == WorkloadJobs {
		keys = p.Keys
	}
	return resource.Schema{Workload: p.Spec.Workload, Keys: keys, Idempotent: p.Spec.Idempotent}
}

// lockKeyPatterns are the keys a run's clients may touch, for the ACL of
// --auth: the lock's key, and every key of --keys.
func lockKeyPatterns(key string, keys []string) []string {
	patterns := locks.KeyPatterns(key)
	for _, k := range keys {
		patterns = append(patterns, locks.KeyPatterns(k)...)
	}
	return patterns
}

// lockKeys are the run's lock keys when it has several (--keys; the jobs
// workload's queues): Key:<j>, on a cluster spread over the shards by the
// slot of the key where the lock keeps its grant. None means the one key,
// Key.
func lockKeys(s Spec) []string {
	return cluster.KeyNames(cluster.Spec{Topology: s.Topology, Shards: s.Shards}, s.Key, s.Keys, storeKey(s))
}

// storeKey is where the spec's lock keeps a grant on a key (the key itself
// for an outside worker, or a lock the spec does not name right).
func storeKey(s Spec) func(string) string {
	if l, err := locks.ParseLock(s.Lock); err == nil {
		return l.StoreKey
	}
	return nil
}

// startDatabase starts the run's PostgreSQL in dir, creates its tables and
// one link to it per client slot.
func startDatabase(ctx context.Context, p Plan, dir string, net *faults.Network, slots int) (*database, error) {
	srv, err := resource.StartPostgres(ctx, dir)
	if err != nil {
		return nil, err
	}
	db := &database{srv: srv, schema: schemaOf(p)}
	if err := resource.Prepare(ctx, srv.Addr, db.schema); err != nil {
		srv.Close()
		return nil, fmt.Errorf("postgres: %w", err)
	}
	for slot := range slots {
		if _, err := net.Link(faults.DatabaseLinkName(slot), srv.Addr); err != nil {
			srv.Close()
			return nil, err
		}
	}
	return db, nil
}

// access is the hello's database for a slot: through its own link.
func (db *database) access(s Spec, st *resource.Statement, net *faults.Network, slot int) *workloads.Database {
	d := &workloads.Database{Kind: resource.Postgres, DSN: resource.DSN(net.Get(faults.DatabaseLinkName(slot)).Addr()),
		Workload: s.Workload, Fencing: s.Fencing, Idempotent: s.Idempotent,
		// A delayed write must be able to arrive after the TTL it is
		// delayed past, so the write's own bound is generous.
		TimeoutMs: max(10*s.TTL.D(), 10*time.Second).Milliseconds()}
	if s.Workload == WorkloadInventory {
		d.SKU = resource.SKU
	}
	if st != nil {
		d.Fencing, d.SQL = resource.FenceSQL, st.Text
	}
	return d
}

// final reads the tables once the clients stopped.
func (db *database) final(s Spec, st *resource.Statement) (*history.Tables, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	t, err := resource.Final(ctx, db.srv.Addr, db.schema, writeFencing(s, st))
	if err != nil {
		return nil, fmt.Errorf("reading the database's final rows: %w", err)
	}
	return t, nil
}

// writeFencing is how the run's database writes are fenced: the fencing
// mode, or the user's statement.
func writeFencing(s Spec, st *resource.Statement) string {
	if st != nil {
		return resource.FenceSQL
	}
	return s.Fencing
}

func (db *database) close() {
	if db != nil {
		db.srv.Close()
	}
}

func databaseFaults(s Spec, names []string) error {
	if len(names) == 0 || s.Resource == resource.Postgres {
		return nil
	}
	return fmt.Errorf("nemesis %s needs a database: it acts on the clients' links to one (add --resource %s with --workload %s or %s)",
		strings.Join(names, ", "), resource.Postgres, WorkloadInventory, WorkloadJobs)
}

// fencingLocks are the built-in locks whose grants carry fencing tokens.
func fencingLocks() []string {
	var out []string
	for _, name := range locks.Names() {
		if l, err := locks.ParseLock(name); err == nil && l.Fences {
			out = append(out, name)
		}
	}
	return out
}
