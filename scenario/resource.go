package scenario

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lockharness/lockharness/cluster"
	"github.com/lockharness/lockharness/locks"
	"github.com/lockharness/lockharness/resource"
	"github.com/lockharness/lockharness/workloads"

	"github.com/lockharness/lockharness/internal/suggest"
)

// resolveResource checks the resource side of a spec against its workload
// (workloads.Lookup) and fills in its defaults: the resource the workload
// writes to, its number of keys, and the fencing. It notes in p the
// workload, the resource and the user's statement when --write-sql gives
// one, checked by a database.
func resolveResource(s *Spec, p *Plan) []error {
	wl, err := workloads.Lookup(s.Workload)
	if err != nil {
		return []error{err}
	}
	p.Workload = wl
	if s.Resource == "" {
		s.Resource = wl.Resources[0]
	}
	res, ok := resource.Lookup(s.Resource)
	if !ok {
		return []error{suggest.Unknown("resource", s.Resource, resource.Names(), "")}
	}
	p.Resource = res
	var errs []error
	if !wl.WritesTo(res.Name) {
		errs = append(errs, fmt.Errorf("workload %s writes to %s, not %s: leave --resource out, or with --resource %s use --workload %s",
			wl.Name, strings.Join(wl.Resources, " or "), res.Name, res.Name, orList(workloadNames(func(w workloads.Workload) bool { return w.WritesTo(res.Name) }))))
	}
	if s.Fencing == "" {
		s.Fencing = resource.FenceNone
	}
	switch {
	case !slices.Contains(resource.Fencings, s.Fencing):
		errs = append(errs, suggest.Unknown("fencing", s.Fencing, resource.Fencings, ""))
	case s.Fencing != resource.FenceNone && !slices.Contains(wl.Fencings, s.Fencing):
		errs = append(errs, fmt.Errorf("--fencing %s: workload %s takes no such fencing (workloads that do: %s)", s.Fencing, wl.Name,
			orList(workloadNames(func(w workloads.Workload) bool { return slices.Contains(w.Fencings, s.Fencing) }))))
	}
	if s.WriteSQL != "" && !wl.WriteSQL {
		errs = append(errs, fmt.Errorf("--write-sql replaces the %s workload's write; workload %s has none", orList(workloadNames(func(w workloads.Workload) bool { return w.WriteSQL })), wl.Name))
	}
	if s.WriteSQL != "" && s.Fencing != resource.FenceNone {
		errs = append(errs, fmt.Errorf("give --fencing %s or --write-sql %s, not both: the statement is the fencing", s.Fencing, s.WriteSQL))
	}
	switch {
	case s.Keys < 0:
		errs = append(errs, fmt.Errorf("--keys %d: a number of lock keys is at least 1", s.Keys))
	case s.Keys > 0 && wl.OneKey:
		errs = append(errs, fmt.Errorf("--keys %d: workload %s writes one row under one key (the %s workloads take a number of keys)",
			s.Keys, wl.Name, andList(workloadNames(func(w workloads.Workload) bool { return !w.OneKey }))))
	}
	if s.Idempotent && !wl.Idempotent {
		errs = append(errs, fmt.Errorf("--idempotent makes the %s workload's insert idempotent; workload %s has none", orList(workloadNames(func(w workloads.Workload) bool { return w.Idempotent })), wl.Name))
	}
	if !res.Database {
		return errs
	}
	if res.LocalOnly && s.Backend != "" && s.Backend != cluster.BackendLocal {
		errs = append(errs, fmt.Errorf("--resource %s runs its server as a local process; it does not run with --backend %s yet (use --backend %s)", res.Name, s.Backend, cluster.BackendLocal))
	}
	if s.Lock == ExecLock && p.Worker.Name != "" && !slices.Contains(p.Worker.Writes, res.Name) {
		errs = append(errs, fmt.Errorf("worker %s does not write to %s itself (its ready line has no \"writes\": [%q]); a real resource needs workers that do (docs/worker-protocol.md)", p.Worker.Name, res.Name, res.Name))
	} else if s.Lock == ExecLock && p.Worker.Name != "" && !p.Worker.WritesWorkload(wl.Name) {
		errs = append(errs, fmt.Errorf("worker %s does not write the %s workload (its ready line's \"workloads\" are %s)", p.Worker.Name, wl.Name, strings.Join(p.Worker.Workloads, ", ")))
	}
	if res.Available != nil {
		if err := res.Available(); err != nil {
			errs = append(errs, err)
		}
	}
	fenceNeeded := s.Fencing != resource.FenceNone
	if s.WriteSQL != "" {
		text, err := os.ReadFile(s.WriteSQL)
		if err != nil {
			return append(errs, fmt.Errorf("--write-sql: %w", err))
		}
		parsed, err := resource.ParseStatement(string(text))
		if err != nil {
			return append(errs, fmt.Errorf("--write-sql %s: %w", s.WriteSQL, err))
		}
		p.Statement = &parsed
		fenceNeeded = slices.Contains(parsed.Params, "fence")
	}
	if fenceNeeded && p.Lock.Name != "" && !p.Lock.Fences {
		what := "--fencing " + s.Fencing
		if p.Statement != nil {
			what = "--write-sql " + s.WriteSQL + " (it uses :fence)"
		}
		errs = append(errs, noFences{fmt.Sprintf("%s needs fencing tokens, and lock %s hands out none (locks that do: %s)", what, p.Lock.Name, strings.Join(fencingLocks(), ", "))})
	}
	if p.Statement != nil && len(errs) == 0 {
		if err := checkStatement(res, wl, *p.Statement); err != nil {
			errs = append(errs, fmt.Errorf("--write-sql %s: %w", s.WriteSQL, err))
		}
	}
	return errs
}

// workloadsHelp is --workload's help: every workload with what it does
// and where it writes.
func workloadsHelp() string {
	var parts []string
	for _, w := range workloads.Workloads() {
		parts = append(parts, fmt.Sprintf("%s (%s; %s)", w.Name, w.Summary, strings.Join(w.Resources, ", ")))
	}
	return strings.Join(parts, ", ")
}

// keysDefaults names the workloads with a number of keys of their own
// and that number: "; jobs: 20".
func keysDefaults() string {
	var out string
	for _, w := range workloads.Workloads() {
		if w.Keys > 0 {
			out += fmt.Sprintf("; %s: %d", w.Name, w.Keys)
		}
	}
	return out
}

// workloadNames are the registered workloads that pass keep.
func workloadNames(keep func(workloads.Workload) bool) []string {
	var names []string
	for _, w := range workloads.Workloads() {
		if keep(w) {
			names = append(names, w.Name)
		}
	}
	return names
}

// orList and andList join names as a sentence does: "a, b or c".
func orList(names []string) string  { return joinLast(names, " or ") }
func andList(names []string) string { return joinLast(names, " and ") }

func joinLast(names []string, last string) string {
	switch len(names) {
	case 0:
		return "none"
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + last + names[len(names)-1]
}

// checked remembers statements a database accepted: a suite resolves the
// same spec many times.
var checked sync.Map // workload and statement text → struct{}

// checkStatement has a scratch server of the resource prepare the user's
// statement against the workload's tables, so that bad SQL is refused with
// the database's own error before anything of the run starts.
func checkStatement(res resource.Resource, wl workloads.Workload, st resource.Statement) error {
	memo := wl.Name + "\x00" + st.SQL
	if _, ok := checked.Load(memo); ok {
		return nil
	}
	dir, err := os.MkdirTemp("", "lockharness-sql-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv, err := res.StartServer(ctx, filepath.Join(dir, res.Name))
	if err != nil {
		return fmt.Errorf("starting %s to check it: %w", res.Name, err)
	}
	defer srv.Close()
	if err := wl.Prepare(ctx, srv.Addr, workloads.Setup{}); err != nil {
		return err
	}
	if err := resource.CheckStatement(ctx, srv.Addr, st); err != nil {
		return err
	}
	checked.Store(memo, struct{}{})
	return nil
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

// WriteFencing is how the run's database writes are fenced: the fencing
// mode, or the user's statement.
func (p Plan) WriteFencing() string {
	if p.Statement != nil {
		return resource.FenceSQL
	}
	return p.Spec.Fencing
}

// databaseFaults refuses faults on the clients' links to a database in a
// run that has none.
func databaseFaults(p Plan, names []string) error {
	if len(names) == 0 || p.Resource.Database {
		return nil
	}
	var dbs []string
	for _, r := range resource.Resources {
		if r.Database {
			dbs = append(dbs, r.Name)
		}
	}
	return fmt.Errorf("nemesis %s needs a database: it acts on the clients' links to one (add --resource %s with --workload %s)",
		strings.Join(names, ", "), orList(dbs), orList(workloadNames(func(w workloads.Workload) bool { return w.Tables != nil })))
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

// ErrNoFences is a run whose resource needs fencing tokens, with a lock
// that hands out none: a suite run with another lock skips such rows, as
// it skips rows on topologies the lock does not run on.
var ErrNoFences = errors.New("the lock hands out no fencing tokens")

// noFences says which flag needs the fences, and is ErrNoFences.
type noFences struct{ msg string }

func (e noFences) Error() string { return e.msg }
func (e noFences) Unwrap() error { return ErrNoFences }
