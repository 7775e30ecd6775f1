// Package scenario describes one run (a Spec) and resolves it once into
// what the run needs (a Plan: the planned topology, the lock with its
// options, the nemesis with its faults' options). It also holds a spec's
// files (scenario files, the schedules given to a run) and the named
// catalog. Package runner carries a Plan out.
package scenario

import (
	"cmp"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lockharness/lockharness/access"
	"github.com/lockharness/lockharness/cluster"
	"github.com/lockharness/lockharness/faults"
	"github.com/lockharness/lockharness/internal/shell"
	"github.com/lockharness/lockharness/internal/version"
	"github.com/lockharness/lockharness/locks"
	"github.com/lockharness/lockharness/reports"
	"github.com/lockharness/lockharness/resource"
	"github.com/lockharness/lockharness/workloads"
)

// Spec is everything that defines a run. The same spec and seed make the
// same choices.
type Spec struct {
	Name     string `json:"name" toml:"-"`
	Topology string `json:"topology" toml:"topology"`
	// Target is a deployment the harness did not start (redis://HOST:PORT);
	// recorded without its password.
	Target  string `json:"target,omitempty" toml:"target"`
	Backend string `json:"backend" toml:"backend"`
	// Image is the docker backend's node image (empty: cluster.DefaultImage).
	Image string `json:"image,omitempty" toml:"image"`
	// Lock is the recipe and its options (redsync:tries=1).
	Lock string `json:"lock" toml:"lock"`
	// WorkerCmd is the program every client runs with lock exec.
	WorkerCmd string `json:"worker_cmd,omitempty" toml:"worker_cmd"`
	Workload  string `json:"workload" toml:"workload"`
	// Resource is what the lock protects: memory (the in-memory counter)
	// or postgres (empty: what the workload implies).
	Resource string `json:"resource,omitempty" toml:"resource"`
	// Fencing is how inventory writes are fenced (resource.Fencings).
	Fencing string `json:"fencing,omitempty" toml:"fencing"`
	// WriteSQL is a file with the user's own inventory write statement.
	WriteSQL string `json:"write_sql,omitempty" toml:"write_sql"`
	// Keys is the number of lock keys (0: one, Key): the jobs workload's
	// queues, or the mutex workload's keys, each with its own counter; on
	// a cluster they are spread over the shards (cluster.KeyNames).
	Keys int `json:"keys,omitempty" toml:"keys"`
	// Idempotent makes a job's done row unique (ON CONFLICT DO NOTHING).
	Idempotent bool `json:"idempotent,omitempty" toml:"idempotent"`
	// Nemesis is the fault list with the faults' options.
	Nemesis string `json:"nemesis" toml:"nemesis"`
	// Interval is the mean quiet time between faults (0: from the TTL).
	Interval Duration `json:"nemesis_interval,omitempty" toml:"nemesis_interval"`
	Clients  int      `json:"clients" toml:"clients"`
	// Nodes is the topology's number of nodes (0: its own size).
	Nodes int `json:"nodes,omitempty" toml:"nodes"`
	// Shards and Replicas size a cluster topology (0: its defaults).
	Shards   int      `json:"shards,omitempty" toml:"shards"`
	Replicas int      `json:"replicas,omitempty" toml:"replicas"`
	TTL      Duration `json:"ttl" toml:"ttl"`
	Hold     Duration `json:"hold" toml:"hold"`
	// Writes is how many protected writes a holder makes per grant, spread
	// evenly over the hold (the first right after the grant).
	Writes int `json:"writes" toml:"writes"`
	// Backoff is the mean pause of a client between cycles, drawn from
	// [D/3, 5D/3); 0: none, every client at full speed.
	Backoff     Duration `json:"backoff" toml:"backoff"`
	TimeLimit   Duration `json:"time_limit" toml:"time_limit"`
	OpTimeout   Duration `json:"op_timeout" toml:"op_timeout"`
	Persistence string   `json:"persistence" toml:"persistence"`
	Seed        int64    `json:"seed" toml:"-"`
	Key         string   `json:"key" toml:"key"`
	// Auth runs every node and sentinel with passwords and an ACL user
	// that may run only what a lock client needs, on the lock's keys; TLS
	// runs them with TLS only, with certificates made for the run.
	Auth bool `json:"auth,omitempty" toml:"auth"`
	TLS  bool `json:"tls,omitempty" toml:"tls"`
	// Schedule, when given, is the fault schedule to follow instead of
	// drawing one from Nemesis (which then lists the schedule's faults):
	// a replay's, or a shrunk scenario's ([[spec.schedule]] in a file).
	Schedule []Step `json:"schedule,omitempty" toml:"schedule"`
}

// Step is one fault of a schedule given in full (Spec.Schedule).
type Step struct {
	// Fault is one fault with its options (kill-node:delay=57ms).
	Fault string `json:"fault" toml:"fault"`
	// At is when it starts, counted from the start of the schedule (as
	// the clients start); with AfterGrant, when the grant it waits for
	// comes.
	At Duration `json:"at" toml:"at"`
	// AfterGrant: the fault starts this long after the first grant from
	// a little before At, and takes that grant for the one it waits for.
	AfterGrant *Duration `json:"after_grant,omitempty" toml:"after_grant"`
	// AfterPromotion: the fault starts this long after the first
	// promotion from At (one another fault of the schedule caused, or
	// the topology's own); with none before the time limit, it never
	// strikes.
	AfterPromotion *Duration `json:"after_promotion,omitempty" toml:"after_promotion"`
}

// StepsOf is a followed schedule as the steps of a spec.
func StepsOf(f faults.Followed) ([]Step, error) {
	steps, err := f.Steps()
	if err != nil {
		return nil, err
	}
	out := make([]Step, len(steps))
	for i, st := range steps {
		out[i] = Step{Fault: st.Injection.String(), At: Duration(st.At)}
		d := Duration(st.Delay)
		switch {
		case st.AfterGrant:
			out[i].AfterGrant = &d
		case st.AfterPromotion:
			out[i].AfterPromotion = &d
		}
	}
	return out, nil
}

// faultNames lists a schedule's faults, each once, as a nemesis list.
func faultNames(steps []faults.Step) string {
	var names []string
	for _, st := range steps {
		if !slices.Contains(names, st.Injection.Name) {
			names = append(names, st.Injection.Name)
		}
	}
	return strings.Join(names, ",")
}

// String is the step as replay and shrink print it.
func (st Step) String() string {
	in, err := faults.ParseOne(st.Fault)
	if err != nil {
		in.Name = st.Fault
	}
	return st.faultStep(in).String()
}

// faultStep is the step as the nemesis follows it.
func (st Step) faultStep(in faults.Injection) faults.Step {
	fs := faults.Step{Injection: in, At: st.At.D()}
	switch {
	case st.AfterGrant != nil:
		fs.AfterGrant, fs.Delay = true, st.AfterGrant.D()
	case st.AfterPromotion != nil:
		fs.AfterPromotion, fs.Delay = true, st.AfterPromotion.D()
	}
	return fs
}

// scheduleSteps resolves a spec's schedule, and the nemesis of its
// faults (each once) that the run must be able to inject.
func scheduleSteps(schedule []Step) ([]faults.Step, faults.Nemesis, error) {
	var steps []faults.Step
	var nemesis faults.Nemesis
	var errs []error
	seen := map[string]bool{}
	for i, st := range schedule {
		in, err := faults.ParseOne(st.Fault)
		if err != nil {
			errs = append(errs, fmt.Errorf("schedule step %d: %w", i+1, err))
			continue
		}
		if st.At < 0 || st.AfterGrant != nil && *st.AfterGrant < 0 || st.AfterPromotion != nil && *st.AfterPromotion < 0 {
			errs = append(errs, fmt.Errorf("schedule step %d (%s): times must not be negative", i+1, st.Fault))
			continue
		}
		if st.AfterGrant != nil && st.AfterPromotion != nil {
			errs = append(errs, fmt.Errorf("schedule step %d (%s): after_grant and after_promotion are two moments; give one", i+1, st.Fault))
			continue
		}
		steps = append(steps, st.faultStep(in))
		if !seen[in.String()] {
			seen[in.String()] = true
			nemesis = append(nemesis, faults.Group{in})
		}
	}
	return steps, nemesis, errors.Join(errs...)
}

// Defaults is the spec `harness run` starts from.
func Defaults() Spec {
	return Spec{
		Topology: cluster.Single, Backend: cluster.BackendLocal, Lock: "cad", Workload: workloads.Default, Nemesis: faults.None,
		Clients: 4, TTL: Duration(2 * time.Second), Hold: Duration(300 * time.Millisecond), Writes: 1,
		Backoff:   Duration(workloads.DefaultBackoff),
		TimeLimit: Duration(10 * time.Second), OpTimeout: Duration(500 * time.Millisecond),
		Persistence: cluster.PersistNone, Key: "lock:orders",
	}
}

// RegisterFlags binds every field of the spec to a flag of fs, each
// defaulting to the spec's current value. `harness run` parses its command
// line with them and Command writes them back, so the two cannot drift.
// RegisterFlagsNamed registers only the named flags of RegisterFlags, as
// it declares them, for a verb that takes a few spec settings (compare).
// A name RegisterFlags does not declare panics: it is the caller's typo.
func (s *Spec) RegisterFlagsNamed(fs *flag.FlagSet, names ...string) {
	all := flag.NewFlagSet("spec", flag.ContinueOnError)
	s.RegisterFlags(all)
	for _, name := range names {
		f := all.Lookup(name)
		if f == nil {
			panic("scenario: no spec flag --" + name)
		}
		fs.Var(f.Value, f.Name, f.Usage)
	}
}

func (s *Spec) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&s.Topology, "topology", s.Topology, "topology: "+strings.Join(cluster.Topologies, ", "))
	fs.StringVar(&s.Target, "target", s.Target, "run against an existing deployment the harness did not start, through its proxies: `URL` redis://[USER:PASSWORD@]HOST:PORT or rediss://...[?ca=FILE], or a Sentinel deployment redis-sentinel://[USER:PASSWORD@]HOST:PORT,HOST:PORT,.../MASTER (password also from $"+cluster.TargetPasswordEnv+"); only client and link faults; keys get the prefix "+TargetKeyPrefix)
	fs.StringVar(&s.Backend, "backend", s.Backend, "where nodes run: "+strings.Join(cluster.Backends, ", "))
	fs.StringVar(&s.Image, "image", s.Image, "the docker backend's node `image`, which must have redis-server on its PATH (default "+cluster.DefaultImage+", built by make docker-image)")
	fs.StringVar(&s.Lock, "lock", s.Lock, "lock recipe and its options (redsync:tries=1), or exec for --worker-cmd: "+strings.Join(locks.Names(), ", "))
	fs.StringVar(&s.WorkerCmd, "worker-cmd", s.WorkerCmd, "with --lock exec: the `command` every client runs, a worker speaking the worker protocol (docs/worker-protocol.md), run by /bin/sh")
	fs.StringVar(&s.Nemesis, "nemesis", s.Nemesis, "faults, comma-separated (the schedule picks one at a time) or joined by + (injected together), each with options after a colon (kill-node:delay=4s): "+strings.Join(faults.Names(), ", "))
	fs.Var(&s.Interval, "nemesis-interval", "mean quiet time between faults, drawn from [D/2, 3D/2] (default: from the TTL)")
	fs.StringVar(&s.Workload, "workload", s.Workload, "what clients do: "+workloadsHelp())
	fs.StringVar(&s.Resource, "resource", s.Resource, "what the lock protects: "+strings.Join(resource.Names(), ", ")+" (default: the workload's own; a database is started per run)")
	taking := func(takes func(workloads.Workload) bool) string { return orList(workloadNames(takes)) }
	fs.StringVar(&s.Fencing, "fencing", s.Fencing, "how the writes of "+taking(func(w workloads.Workload) bool { return len(w.Fencings) > 0 })+
		" are fenced: none (plain UPDATE), where (lock_token <= $fence in the statement), cas (lock_token = the version read), app-check (read, compare in the client, then UPDATE)")
	fs.StringVar(&s.WriteSQL, "write-sql", s.WriteSQL, taking(func(w workloads.Workload) bool { return w.WriteSQL })+
		": a `FILE` with your own write statement, with :sku, :fence, :token and :client; no row updated counts as fenced out")
	fs.IntVar(&s.Keys, "keys", s.Keys, "number of lock keys, for "+andList(workloadNames(func(w workloads.Workload) bool { return !w.OneKey }))+
		", each with its own counter or queue (default 1: --key"+keysDefaults()+"); on a cluster spread over the shards")
	fs.BoolVar(&s.Idempotent, "idempotent", s.Idempotent, taking(func(w workloads.Workload) bool { return w.Idempotent })+
		": make processing idempotent (INSERT ... ON CONFLICT (job) DO NOTHING)")
	fs.IntVar(&s.Clients, "clients", s.Clients, "number of concurrent lock clients")
	fs.IntVar(&s.Nodes, "nodes", s.Nodes, fmt.Sprintf("nodes of a topology whose size can be chosen (redlock: default %d)", cluster.DefaultRedlockNodes))
	fs.IntVar(&s.Shards, "shards", s.Shards, fmt.Sprintf("cluster: number of shards, each a primary with its own slots (default %d)", cluster.DefaultShards))
	fs.IntVar(&s.Replicas, "replicas", s.Replicas, fmt.Sprintf("cluster: replicas of each shard's primary (default %d)", cluster.DefaultReplicas))
	fs.Var(&s.TimeLimit, "time-limit", "how long clients run under faults")
	fs.Var(&s.TTL, "ttl", "lock lease time")
	fs.Var(&s.Hold, "hold", "how long a client holds the lock after its first write")
	fs.IntVar(&s.Writes, "writes", s.Writes, "protected writes per grant, spread evenly over the hold (--hold 2s --writes 5: a write every 400ms, each judged against the lease at its own time)")
	fs.Var(&s.Backoff, "backoff", "mean pause of each client between cycles, drawn from [D/3, 5D/3); 0 for none (with --hold 0: as fast as the servers answer)")
	fs.Var(&s.OpTimeout, "op-timeout", "timeout of each Redis command")
	fs.StringVar(&s.Persistence, "persistence", s.Persistence, "node persistence: "+strings.Join(cluster.Persistences, ", "))
	fs.StringVar(&s.Key, "key", s.Key, "the lock's key")
	fs.BoolVar(&s.Auth, "auth", s.Auth, "run every node and sentinel with passwords and an ACL: clients log in as a user that may run only what a lock client needs, on the lock's keys")
	fs.BoolVar(&s.TLS, "tls", s.TLS, "run every node and sentinel with TLS only, replication and monitoring included, with a CA and certificate made for the run")
	fs.Int64Var(&s.Seed, "seed", s.Seed, "seed for every random choice; any number, 0 included (default: drawn from the clock and printed)")
	fs.StringVar(&s.Name, "name", s.Name, "scenario name for the run directory (default topology-lock-nemesis)")
}

// unsetWhenZero are the spec flags whose zero value means "not set"; the
// re-run command leaves them out.
var unsetWhenZero = map[string]bool{"image": true, "nodes": true, "nemesis-interval": true, "keys": true, "shards": true, "replicas": true}

// Command is the `harness run` command line that repeats this run
// exactly: every spec flag, in the order `harness run --help` lists them.
func (s Spec) Command() string {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	c := s
	c.RegisterFlags(fs)
	parts := []string{"harness run"}
	fs.VisitAll(func(f *flag.Flag) {
		v := f.Value.String()
		if v == "" || unsetWhenZero[f.Name] && (v == "0" || v == "0s") {
			return
		}
		if f.Name == "nemesis" && len(s.Schedule) > 0 {
			return // the schedule's own file says (Run adds --schedule)
		}
		// A switch is written alone when on (a value after it would be a
		// stray argument), and left out when off.
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			if v == "true" {
				parts = append(parts, "--"+f.Name)
			}
			return
		}
		parts = append(parts, "--"+f.Name, shell.Quote(v))
	})
	return strings.Join(parts, " ")
}

// DefaultName names a run after what it tests, in characters a directory
// name and a URL take as they are.
func (s Spec) DefaultName() string {
	return s.nameWith(s.Lock)
}

func (s Spec) nameWith(lock string) string {
	clean := strings.NewReplacer(",", "_", ":", "-", "=", "", "/", "-", " ", "")
	name := fmt.Sprintf("%s-%s-%s", s.Topology, lock, s.Nemesis)
	if s.Workload != "" && s.Workload != workloads.Default {
		name += "-" + s.Workload
	}
	if s.Fencing != "" && s.Fencing != resource.FenceNone {
		name += "-" + s.Fencing
	}
	return clean.Replace(name)
}

// Plan is a spec resolved once: every name looked up, every option parsed,
// every default filled in. Nothing in it has started.
type Plan struct {
	// Spec is the spec with its defaults filled in and its lock and nemesis
	// spelled canonically: what results.json records.
	Spec    Spec
	Cluster *cluster.Cluster
	Lock    locks.Lock
	// Worker is what an exec lock's worker announced (zero otherwise).
	Worker  workloads.Ready
	Nemesis faults.Nemesis
	// Workload is what the clients do, and Resource what they write to.
	Workload workloads.Workload
	Resource resource.Resource
	// Statement is the user's write statement (--write-sql), checked.
	Statement *resource.Statement
	// Keys are the run's lock keys when it has several (lockKeys); none
	// means the one key, Spec.Key.
	Keys []string
	// FaultKey is the key where the lock keeps the grant that faults
	// aimed at the lock's shard or primary follow: the first key's.
	FaultKey string
	// Steps are Spec.Schedule resolved: the schedule to follow, if any.
	Steps []faults.Step
	// FenceChecked: the run's database compares each write's fence with
	// the fences it accepted before it decides (resource.ChecksFence).
	FenceChecked bool
}

// TargetKeyPrefix starts every key a run writes on a --target.
const TargetKeyPrefix = "lockharness:"

// ErrLockTopology is a lock asked to run on a topology it does not run on.
var ErrLockTopology = errors.New("unsupported topology")

// lockTopologies are the topologies a lock runs on, its home first: those
// that offer all it needs or, for a worker that names its topologies
// instead (its ready line has no needs), those it names.
func lockTopologies(l locks.Recipe, w workloads.Ready) []string {
	if len(l.Needs) == 0 {
		return w.Topologies
	}
	return cluster.Offering(l.Needs, l.Prefers)
}

// lockFits refuses the plan's lock on a topology it does not run on,
// naming where it runs, what the topology lacks and, where the worker
// said, why. The lock's needs are asked of the topology itself, so that a
// target answers for what it offers; a worker's names are matched to the
// topology a client sees there (Shape).
func lockFits(p Plan, lockName string, cl *cluster.Cluster) error {
	var lacks []string
	for _, c := range cl.Lacking(p.Lock.Needs) {
		lacks = append(lacks, fmt.Sprintf("%s (%s)", c, cluster.Meaning(c)))
	}
	if len(p.Lock.Needs) > 0 && len(lacks) == 0 || len(p.Lock.Needs) == 0 && slices.Contains(p.Worker.Topologies, cl.Shape()) {
		return nil
	}
	why := ""
	if len(lacks) > 0 {
		why = ": it needs " + strings.Join(lacks, " and ")
	}
	if reason := p.Worker.Unsupported[cl.Shape()]; reason != "" {
		why += ": " + reason
	}
	where := runsNowhere(p.Lock.Needs)
	if runsOn := lockTopologies(p.Lock.Recipe, p.Worker); len(runsOn) > 0 {
		where = "it runs on " + strings.Join(runsOn, ", ")
	}
	return fmt.Errorf("%w: lock %s does not run on topology %s (%s)%s", ErrLockTopology, lockName, cl.Shape(), where, why)
}

// runsNowhere says that no topology offers all of needs.
func runsNowhere(needs []access.Capability) string {
	return "no topology offers all it needs: " + access.Join(needs, ", ")
}

// Resolve checks the spec and resolves it into a Plan. The error reports
// every problem, each naming the bad value and the valid ones.
func (s Spec) Resolve() (Plan, error) {
	var errs []error
	p := Plan{}
	nemesis, nemesisErr := faults.Parse(s.Nemesis)
	if len(s.Schedule) > 0 {
		p.Steps, nemesis, nemesisErr = scheduleSteps(s.Schedule)
	}
	if wl, err := workloads.Lookup(s.Workload); err == nil && s.Keys == 0 {
		// Filled in first: a workload's keys are the ACL's keys too.
		s.Keys = wl.Keys
	}
	if s.Target != "" && !strings.HasPrefix(s.Key, TargetKeyPrefix) {
		// On a deployment that is not the harness's, its keys stay under
		// a prefix of their own.
		s.Key = TargetKeyPrefix + s.Key
	}
	keys := lockKeys(s)
	cl, err := cluster.New(cluster.Spec{Topology: s.Topology, Target: s.Target, Backend: s.Backend, Image: s.Image, Persistence: s.Persistence,
		Nodes: s.Nodes, Shards: s.Shards, Replicas: s.Replicas, Clock: nemesis.NeedsClock(), Auth: s.Auth, TLS: s.TLS, LockKeys: lockKeyPatterns(s.Key, keys)})
	errs = append(errs, err)
	lockName := s.Lock
	switch {
	case s.Lock == ExecLock:
		if p.Lock, p.Worker, err = execLock(s); err == nil {
			lockName = "worker " + p.Worker.Name
		}
	case s.WorkerCmd != "":
		err = fmt.Errorf("--worker-cmd runs an outside worker and goes with --lock %s, not --lock %s", ExecLock, s.Lock)
	default:
		p.Lock, err = locks.ParseLock(s.Lock)
	}
	if err != nil {
		errs = append(errs, err)
	} else if cl != nil {
		errs = append(errs, lockFits(p, lockName, cl))
	}
	if p.Nemesis = nemesis; nemesisErr != nil {
		errs = append(errs, nemesisErr)
	} else if cl != nil {
		errs = append(errs, p.Nemesis.Available(cl))
	}
	errs = append(errs, resolveResource(&s, &p)...)
	if p.Workload.Name != "" {
		errs = append(errs, databaseFaults(p, nemesis.NeedsDatabase()))
	}
	if s.Clients < 1 {
		errs = append(errs, fmt.Errorf("clients must be at least 1, got %d", s.Clients))
	} else {
		errs = append(errs, clientsFit(s.Clients, cl))
		if nemesisErr == nil {
			errs = append(errs, nemesis.FitsClients(s.Clients))
		}
	}
	for _, d := range []struct {
		name string
		v    Duration
	}{{"ttl", s.TTL}, {"time-limit", s.TimeLimit}, {"op-timeout", s.OpTimeout}} {
		if d.v <= 0 {
			errs = append(errs, fmt.Errorf("%s must be positive, got %v", d.name, d.v))
		}
	}
	if s.Interval < 0 {
		errs = append(errs, fmt.Errorf("nemesis-interval must not be negative, got %v", s.Interval))
	}
	if s.Backoff < 0 {
		errs = append(errs, fmt.Errorf("backoff must not be negative, got %v", s.Backoff))
	}
	if s.Hold < 0 {
		errs = append(errs, fmt.Errorf("hold must not be negative, got %v", s.Hold))
	}
	if s.Writes == 0 {
		s.Writes = 1 // a spec written before --writes: one write per grant
	}
	if s.Writes < 1 {
		errs = append(errs, fmt.Errorf("writes must be at least 1 (a write per grant), got %d", s.Writes))
	}
	if s.TTL > 0 && s.TTL < Duration(100*time.Millisecond) {
		errs = append(errs, fmt.Errorf("ttl %v is too short to tell a lease from operation latency; use at least 100ms", s.TTL))
	}
	if unit := Duration(p.Lock.TTLUnit); unit > 0 && s.TTL > 0 && (s.TTL%unit != 0) {
		errs = append(errs, fmt.Errorf("ttl %v is not a whole number of %v, which lock %s's leases are counted in; try --ttl %v", s.TTL, unit, p.Lock.Name, max(unit, (s.TTL+unit/2)/unit*unit)))
	}
	if s.Key == "" {
		errs = append(errs, errors.New("key must not be empty"))
	}
	if err := errors.Join(errs...); err != nil {
		return Plan{}, err
	}
	// Every default filled in, so that the recorded spec and its re-run
	// command say exactly what ran.
	s.Lock, s.Nemesis = p.Lock.String(), p.Nemesis.String()
	if len(p.Steps) > 0 {
		// The faults by name: their pinned options are the steps'.
		s.Nemesis = faultNames(p.Steps)
	}
	s.Nodes = len(cl.NodeNames())
	if shards, replicas := cl.Shards(); shards > 0 {
		// A cluster is sized by its shards, not its nodes.
		s.Nodes, s.Shards, s.Replicas = 0, shards, replicas
	}
	s.Topology = cl.Topology
	if t := cl.Target(); t != nil {
		s.Target = t.WithoutPassword()
	}
	if s.Backend == cluster.BackendDocker && s.Image == "" {
		s.Image = cluster.DefaultImage
	}
	if s.Name == "" {
		s.Name = s.DefaultName()
		if p.Worker.Name != "" {
			s.Name = s.nameWith(p.Worker.Name)
		}
	}
	p.Spec, p.Cluster, p.Keys = s, cl, keys
	p.FaultKey = p.Lock.StoreKey(s.Key)
	if len(keys) > 0 {
		p.FaultKey = p.Lock.StoreKey(keys[0])
	}
	p.FenceChecked = p.Resource.Database && resource.ChecksFence(p.WriteFencing(), p.Statement)
	return p, nil
}

// Validate reports every problem with the spec (see Resolve).
func (s Spec) Validate() error {
	_, err := s.Resolve()
	return err
}

// Line is the spec on one line, for summaries.
func (s Spec) Line() string { return s.lineWith(s.Lock) }

// Line is the spec's line with the lock as it named itself: an exec
// worker's announced name and version ("redis-py-lock 4.3.4 (exec)"), not
// only "exec".
func (p Plan) Line() string { return p.Spec.lineWith(p.LockProvenance().Label()) }

// LockProvenance is the lock the plan tests, as results.json's provenance
// records it: an exec worker by what it announced, a recipe by its name and
// the library it adapts.
func (p Plan) LockProvenance() *reports.LockProvenance {
	if p.Spec.Lock == ExecLock {
		return &reports.LockProvenance{Recipe: ExecLock, Name: cmp.Or(p.Worker.Name, ExecLock), Version: p.Worker.Version, Worker: p.Spec.WorkerCmd}
	}
	lp := &reports.LockProvenance{Recipe: p.Spec.Lock, Name: cmp.Or(p.Lock.Recipe.Name, p.Spec.Lock), Library: p.Lock.Recipe.Library}
	if lp.Library != "" {
		lp.Version = version.Module(lp.Library)
	}
	return lp
}

func (s Spec) lineWith(lock string) string {
	line := fmt.Sprintf("topology %s · lock %s · nemesis %s · %d clients · ttl %v · hold %v · %v · persistence %s",
		s.Topology, lock, s.Nemesis, s.Clients, s.TTL, s.Hold, s.TimeLimit, cluster.PersistenceOf(s.Topology, s.Persistence))
	if s.Writes > 1 {
		line += fmt.Sprintf(" · %d writes per grant", s.Writes)
	}
	if s.Backend == cluster.BackendDocker {
		line += " · docker " + cmp.Or(s.Image, cluster.DefaultImage)
	}
	if s.Target != "" {
		line += " · " + s.Target
	}
	if s.Lock == ExecLock {
		line += " · worker " + s.WorkerCmd
	}
	if s.Backoff != Duration(workloads.DefaultBackoff) {
		line += " · backoff " + s.Backoff.String()
	}
	if len(s.Schedule) > 0 {
		line += fmt.Sprintf(" · a schedule of %d faults", len(s.Schedule))
	}
	if s.Auth {
		line += " · auth"
	}
	if s.TLS {
		line += " · tls"
	}
	res, _ := resource.Lookup(s.Resource)
	if s.Keys > 0 && !res.Database {
		line += fmt.Sprintf(" · %d keys", s.Keys)
	}
	if res.Database {
		wl, _ := workloads.Lookup(s.Workload)
		line += " · " + s.Workload + " in " + s.Resource
		switch {
		case s.WriteSQL != "":
			line += " · write-sql " + s.WriteSQL
		case len(wl.Fencings) > 0:
			line += " · fencing " + s.Fencing
		case s.Keys > 0:
			line += fmt.Sprintf(" · %d keys", s.Keys)
		}
		if s.Idempotent {
			line += " · idempotent"
		}
	}
	return line
}

// Duration is a time.Duration written as "1.5s" in JSON and on the command
// line.
type Duration time.Duration

func (d Duration) String() string { return time.Duration(d).String() }

// D is the value as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// Set parses a flag's value.
func (d *Duration) Set(s string) error {
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("%q is not a duration like 500ms or 10s", s)
	}
	*d = Duration(v)
	return nil
}

func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// UnmarshalText reads a duration as a scenario file writes it ("1.5s").
func (d *Duration) UnmarshalText(b []byte) error { return d.Set(string(b)) }

func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration must be a string like \"1.5s\": %v", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}
