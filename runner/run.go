// Package runner carries out what package scenario describes: one run of
// a resolved Plan (start the topology, the network and the workers, run the
// seeded nemesis, close with a heal and a liveness check, check the
// history, write the results), the topologies kept between runs, and what
// is made of runs: suites, comparisons, and the check of an outside
// worker.
package runner

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/cluster"
	"github.com/lockharness/lockharness/faults"
	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/internal/shell"
	"github.com/lockharness/lockharness/internal/version"
	"github.com/lockharness/lockharness/reports"
	"github.com/lockharness/lockharness/scenario"
	"github.com/lockharness/lockharness/workloads"
)

// Options are how a run is carried out, as opposed to what it tests.
type Options struct {
	// Store is the directory that holds run directories.
	Store string
	// WorkerBin is the harness binary that `worker` runs from.
	WorkerBin string
	// Progress receives a line per fault and phase; nil for silence.
	Progress io.Writer
	// CheckTimeout bounds the linearizability check (0: the checker's default).
	CheckTimeout time.Duration
	// StopOn are the anomalies (checker.OnlineAnomalies) that end the run
	// as soon as an audit during the run is certain of one; the run then
	// heals, checks liveness and is checked offline as usual. Empty: every
	// run lasts its time limit.
	StopOn []string
	// Reuse, when set, lends the run a kept topology of the same start,
	// reset, and keeps the run's topology afterwards (see Topologies);
	// runs with a database start fresh.
	Reuse *Topologies
	// BeforeCheck, if set, is called once the run has stopped and before
	// its history is checked and drawn: harness run, whose process holds
	// this one run, tunes its collector for that end there.
	BeforeCheck func()
}

// Outcome is a finished run.
type Outcome struct {
	Dir     string
	Results reports.Results
}

// The pages draw each fault as it declares (faults.Fault.Drawing): the
// reports know no faults, so the package that knows both tells them. The
// registry is read at each lookup, so that a fault registered after this
// runs, as a test registers one, is drawn as it declares too.
func init() {
	reports.FaultDrawing = func(name string) (history.Drawing, bool) {
		f, ok := faults.Lookup(name)
		return f.Drawing, ok
	}
}

// quiet is the pause between the final heal and the liveness check, and
// margin is how long past the TTL the final acquire may take.
const (
	quiet  = 500 * time.Millisecond
	margin = time.Second
)

// RunSpec resolves a spec and runs it (Resolve, then Run).
func RunSpec(ctx context.Context, spec scenario.Spec, opt Options) (Outcome, error) {
	plan, err := spec.Resolve()
	if err != nil {
		return Outcome{}, err
	}
	return Run(ctx, plan, opt)
}

// RerunCommand is the command that runs spec again into store, as its run
// records it: the re-run lands beside the run, not in a store of the
// working directory's. For a run that follows a schedule, Run adds
// --schedule with the file it writes beside itself.
func RerunCommand(spec scenario.Spec, store string) string {
	command := spec.Command()
	if store != "" && store != DefaultStore {
		command += " --store " + shell.Quote(store)
	}
	return command
}

// PlannedCommand is RerunCommand for a run not yet started. A run that
// follows a schedule records the file it writes beside itself; before it
// starts, the command names the scenario that holds the schedule: source
// (a catalog name or a scenario file), or the catalog entry of the spec's
// name. "" when no scenario holds it (a suite's file named otherwise).
func PlannedCommand(spec scenario.Spec, store, source string) string {
	command := RerunCommand(spec, store)
	if len(spec.Schedule) == 0 {
		return command
	}
	if source == "" {
		if _, err := scenario.Lookup(spec.Name); err != nil {
			return ""
		}
		source = spec.Name
	}
	return "harness run --scenario " + shell.Quote(source) + strings.TrimPrefix(command, "harness run")
}

// Run carries out one resolved run. A plan may be run again, with another
// Spec.Seed if wanted: each run starts a fresh topology. An interrupted run
// (ctx cancelled) still stops everything, checks what it recorded and
// writes results.json, with the verdict unknown. The error is for the
// harness's own failures.
func Run(ctx context.Context, plan scenario.Plan, opt Options) (Outcome, error) {
	spec := plan.Spec
	// What the run will say of itself is settled before it starts: its
	// re-run command, its spec, the lock it tests.
	meta := reports.Meta{Seed: spec.Seed, Command: RerunCommand(spec, opt.Store), Provenance: &reports.Provenance{Harness: version.Harness(), Go: version.Go(), Lock: plan.LockProvenance()}}
	prov := meta.Provenance
	if l := prov.Lock; l.Library != "" {
		prov.Libraries = map[string]string{l.Library: l.Version}
	}
	var planned []byte
	if len(spec.Schedule) > 0 {
		// No flag holds a schedule: a file beside the run does.
		var err error
		if planned, err = scenario.EncodePlanned(spec.Schedule); err != nil {
			return Outcome{}, err
		}
	}
	specJSON, err := json.Marshal(spec)
	if err != nil {
		return Outcome{}, err
	}
	meta.Spec = specJSON

	dir, err := reports.NewRunDir(opt.Store, spec.Name, time.Now())
	if err != nil {
		return Outcome{}, err
	}
	out := Outcome{Dir: dir}
	if planned != nil {
		path := filepath.Join(dir, scenario.PlannedFile)
		if err := os.WriteFile(path, planned, 0o644); err != nil {
			return out, err
		}
		meta.Command += " --schedule " + shell.Quote(path)
	}
	logFile, err := os.Create(filepath.Join(dir, "harness.log"))
	if err != nil {
		return out, err
	}
	defer logFile.Close()
	logw := &syncWriter{w: logFile}
	logf := func(format string, args ...any) {
		line := fmt.Sprintf(format, args...) + "\n"
		logw.Write([]byte(line))
		if opt.Progress != nil {
			io.WriteString(opt.Progress, line)
		}
	}
	histFile, err := os.Create(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		return out, err
	}
	defer histFile.Close()
	rec := history.NewStreamingRecorder(histFile, keptWhileRunning(opt))

	var ran driven
	tables, runErr := drive(ctx, plan, opt, dir, rec, logw, logf, prov, &ran)
	if runErr != nil {
		logf("harness error: %v", runErr)
	}
	if err := rec.Close(); err != nil && runErr == nil {
		runErr = fmt.Errorf("writing the history: %w", err)
	}
	meta.Interrupted, meta.StoppedEarly = ctx.Err() != nil, ran.stopped
	if runErr != nil {
		meta.Error = &reports.RunError{Stage: reports.StageRun, Message: runErr.Error()}
		var start startError
		if errors.As(runErr, &start) {
			meta.Error.Stage = reports.StageStart
		}
	}
	if tables != nil {
		if err := history.WriteTables(dir, tables); err != nil {
			return out, err
		}
	}
	// The history is checked and drawn from its file, as harness report
	// does, for the recorder kept only a few of its events.
	if opt.BeforeCheck != nil {
		opt.BeforeCheck()
	}
	histPath := histFile.Name()
	results, err := concludeFile(histPath, meta, checker.Options{Slack: reports.DefaultSlack, Outlive: plan.Lock.Outlive(time.Duration(spec.TTL)), Timeout: opt.CheckTimeout, Tables: tables,
		Database: plan.Resource.Database, SizeHint: history.Size(histPath)})
	out.Results = results
	if err != nil {
		if werr := reports.WriteResults(dir, results); werr != nil {
			logf("writing results.json: %v", werr)
		}
		return out, cmp.Or(runErr, err)
	}
	err = ran.followedErr
	if err == nil {
		err = reports.WriteRunFrom(dir, histPath, results, true, false)
	}
	if err != nil {
		// A run whose directory could not be written is no verdict, on
		// any page or line that tells of it.
		out.Results.Valid = checker.Failed
		out.Results.Error = &reports.RunError{Stage: reports.StageRun, Message: "writing the run directory: " + err.Error()}
		reports.WriteResults(dir, out.Results)
		return out, err
	}
	return out, runErr
}

// keptWhileRunning picks the events the run reads back while it runs: the
// nemesis's (a fault waits for a promotion; what the nemesis followed)
// and the grants (what a fault after a grant followed), or, when it stops
// on an anomaly, every event, which its online audit reads.
func keptWhileRunning(opt Options) func(*history.Event) bool {
	if len(opt.StopOn) > 0 {
		return nil
	}
	return func(e *history.Event) bool {
		return e.IsNemesis() || e.F == history.Acquire && e.Type == history.OK
	}
}

// concludeFile checks the history at path as it is read. A history that
// cannot be read to its end (a recorder that could not write it whole
// leaves a torn line) is no verdict: the results it returns with the
// error say the run failed, and why.
func concludeFile(path string, meta reports.Meta, opts checker.Options) (reports.Results, error) {
	res, err := func() (reports.Results, error) {
		f, err := history.Open(path)
		if err != nil {
			return reports.Results{}, err
		}
		defer f.Close()
		return reports.ConcludeStream(f, meta, opts)
	}()
	if err == nil {
		return res, nil
	}
	err = fmt.Errorf("checking the history: %w", err)
	failed := &reports.RunError{Stage: reports.StageRun, Message: err.Error()}
	if meta.Error != nil {
		failed.Stage, failed.Message = meta.Error.Stage, meta.Error.Message+"; "+err.Error()
	}
	meta.Error = failed
	if res, cerr := reports.Conclude(nil, meta, opts); cerr == nil {
		return res, err
	}
	return reports.Results{Valid: checker.Failed, Error: failed}, err
}

// DefaultStore is the store the verbs use unless told: ./store.
const DefaultStore = "store"

// startError is a run that failed before its clients started: results.json
// says so (StageStart), so that CI can tell a machine that cannot run the
// topology from a run that broke.
type startError struct{ error }

func (e startError) Unwrap() error { return e.error }

// rig is a started run: the topology, its network, the clients and what
// faults act on.
type rig struct {
	// db is the run's database when the resource is a real one.
	db   *database
	cl   *cluster.Cluster
	net  *faults.Network
	work *workloads.Loop
	env  *faults.Env
	// stopWork ends the workload once (the close does it too).
	stopWork func() error
	// stopGrants ends the watch of where grants live (faults.WatchGrants),
	// which starts before the first client can be granted anything.
	stopGrants func()
	// kept is the topology and network as a Topologies keeps them, when
	// the run reuses (keep: give them back at the close, not stop them);
	// how says whether the topology is fresh or reused, and the reset.
	kept *keptTopology
	keep *Topologies
	how  string
	// started is when the clients started, on the history's clock and on
	// the wall's: the fault schedule counts from there.
	started   time.Duration
	startedAt time.Time
}

// startRig starts the plan's topology, one link per client and node, and
// the workers. On error, whatever started is stopped again; otherwise
// close stops everything.
func startRig(ctx context.Context, plan scenario.Plan, opt Options, dir string, rec *history.Recorder, logw io.Writer, logf func(string, ...any)) (r *rig, err error) {
	spec := plan.Spec
	r = &rig{how: "fresh"}
	reuse := opt.Reuse
	if plan.Resource.Database {
		reuse = nil // its links would outlive the database
	}
	workerBin := opt.WorkerBin
	if workerBin == "" {
		if workerBin, err = os.Executable(); err != nil {
			return r, err
		}
	}
	launcher := spec.Launcher(workerBin)
	k, how, topologyStarted := reuse.take(ctx, plan, logf)
	if k != nil {
		r.cl, r.net, r.kept, r.how = k.cl, k.net, k, how
		logf("%s", how)
		// The nodes' logs live with the topology; the run's page finds
		// them under its own nodes/, as a fresh run's.
		if rel, err := filepath.Rel(dir, k.cl.Dir()); err == nil {
			if err := os.Symlink(rel, filepath.Join(dir, "nodes")); err != nil {
				logf("linking the nodes' logs: %v", err)
			}
		}
	} else {
		r.cl, r.net = plan.Cluster.Fresh(), faults.NewNetwork()
	}
	cl := r.cl
	defer func() {
		if err != nil {
			r.close()
		}
	}()
	// The database comes first: a statement it refuses ends the run
	// before any Redis node starts.
	if plan.Resource.Database {
		logf("starting %s for the %s workload", spec.Resource, spec.Workload)
		if r.db, err = startDatabase(ctx, plan, filepath.Join(dir, spec.Resource), r.net, spec.Clients+1); err != nil {
			return r, err
		}
	}
	if r.kept == nil {
		if err := cl.Start(ctx, filepath.Join(dir, "nodes"), r.net.Proxy); err != nil {
			return r, err
		}
	}
	topologyStarted()
	// Slot Clients is the closing liveness check's own client. Every client
	// reaches every node and sentinel through links of its own.
	// A run that cuts no client's link connects its clients directly.
	direct := !plan.Nemesis.CutsClientLinks()
	hellos := make([]workloads.Hello, spec.Clients+1)
	for slot := range hellos {
		a, err := cl.ConnectClient(slot, direct)
		if err != nil {
			return r, err
		}
		hellos[slot] = workloads.HelloFor(slot, cl.Shape(), a, spec.OpTimeout.D(), workloads.DefaultReplyWithin)
		if r.db != nil {
			hellos[slot].Database = r.db.hellos[slot]
		}
	}
	r.stopGrants = faults.WatchGrants(cl, rec, plan.Lock.StoreKey, logf)
	// A run none of whose faults freezes or kills a client runs the
	// built-in workers inside the harness: a worker process costs its start
	// and, on every operation, the pipes and switches between processes
	// (make bench-ops: 2.2 times the rate inside).
	var inside *workloads.WorkerConfig
	if spec.Lock != scenario.ExecLock && !plan.Nemesis.StopsClients() {
		inside = &workloads.WorkerConfig{Lock: spec.Lock, Inside: true}
	}
	r.work, err = workloads.StartLoop(workloads.LoopConfig{
		Clients: spec.Clients, Key: spec.Key, TTL: spec.TTL.D(), Hold: spec.Hold.D(), Seed: spec.Seed, Backoff: spec.Backoff.D(),
		Fenced: plan.Lock.Fences, RecipePoints: plan.Lock.Points, Extend: plan.Lock.Extends, Writes: spec.Writes,
		FenceChecked: r.db != nil && plan.FenceChecked,
		Database:     r.db != nil, Reads: plan.Workload.Reads(), Keys: plan.Keys,
		Spawn: launcher.Command, Inside: inside,
		Hello: func(slot int) workloads.Hello { return hellos[slot] },
		Rec:   rec, Stderr: logw,
	})
	if err != nil {
		return r, err
	}
	// The schedule counts from the clients' first operations, not from
	// before their workers started: how long those take to start varies
	// with the machine's load, and a fault's place among the operations
	// should not.
	r.started, r.startedAt = rec.Now(), time.Now()
	r.stopWork = sync.OnceValue(r.work.Stop)
	r.env = &faults.Env{Cluster: cl, Net: r.net, Clients: r.work, Rec: rec, NumClients: spec.Clients,
		TTL: spec.TTL.D(), Hold: spec.Hold.D(), Key: plan.FaultKey, Log: logf,
		ClientsDirect: direct, ClientsInside: inside != nil, Undeclared: &faults.Undeclared{}}
	if reuse != nil {
		if r.kept == nil {
			r.kept = &keptTopology{cl: cl, net: r.net, dir: dir, runs: 1}
		}
		r.keep = reuse
	}
	return r, nil
}

// close stops the workers, the watch of grants, the database, and the
// topology and network (or gives them back to the keep they came from),
// in that order.
func (r *rig) close() {
	if r.stopWork != nil {
		r.stopWork()
	}
	if r.stopGrants != nil {
		r.stopGrants()
	}
	r.db.close()
	if r.keep != nil {
		r.keep.give(r.kept)
		return
	}
	r.cl.Close()
	r.net.Close()
}

// driven is what drive notes of a run besides its history.
type driven struct {
	// stopped names the anomaly that ended the run early, if one did.
	stopped string
	// followedErr is why what the nemesis followed could not be written.
	followedErr error
}

// drive runs the topology, workload and nemesis, and always stops them. It
// notes in prov which servers ran, and returns a real resource's final
// rows, read once every client stopped (also when the run was
// interrupted).
func drive(ctx context.Context, plan scenario.Plan, opt Options, dir string, rec *history.Recorder, logw io.Writer, logf func(string, ...any), prov *reports.Provenance, ran *driven) (tables *history.Tables, err error) {
	spec := plan.Spec
	where := spec.Backend + " backend"
	if spec.Image != "" {
		where += ", image " + spec.Image
	}
	logf("starting %s topology (%s) in %s", spec.Topology, where, dir)
	r, err := startRig(ctx, plan, opt, dir, rec, logw, logf)
	if err != nil {
		return nil, startError{err}
	}
	// The fault schedule's times count from when the clients started;
	// what the nemesis followed is written however the run ends, once
	// everything has stopped.
	nemesisFrom := r.started
	defer func() {
		ran.followedErr = faults.WriteFollowed(dir, faults.FollowedOf(rec.Events(), spec.Nemesis, spec.Seed, nemesisFrom))
	}()
	defer r.close()
	if r.db != nil {
		defer func() {
			r.stopWork()
			t, ferr := r.db.final(plan)
			tables, err = t, cmp.Or(err, ferr)
		}()
	}
	prov.Topology = r.how
	prov.Workers = reports.WorkersProcesses
	if r.env.ClientsInside {
		prov.Workers = reports.WorkersInside
	}
	prov.Servers = r.cl.ServerVersions(ctx)
	if r.db != nil {
		if prov.Servers == nil {
			prov.Servers = map[string]string{}
		}
		prov.Servers[spec.Resource] = r.db.srv.Version(ctx)
	}
	logf("%d clients running %s against %s for %v, nemesis %s", spec.Clients, spec.Lock, spec.Key, spec.TimeLimit, spec.Nemesis)

	defer faults.WatchRoles(r.cl, rec, logf)()
	nctx, cancel := context.WithTimeout(ctx, spec.TimeLimit.D())
	defer cancel()
	r.env.Until, _ = nctx.Deadline()
	watched := func() string { return "" }
	if len(opt.StopOn) > 0 {
		copts := checker.Options{Slack: reports.DefaultSlack, Outlive: plan.Lock.Outlive(time.Duration(spec.TTL)), Database: r.db != nil}
		watched = watchAnomalies(nctx, rec, opt.StopOn, copts, logf, cancel)
	}
	// A client that cannot go on (a worker refused by the servers) ends
	// the run now: what follows would be no evidence.
	go func() {
		select {
		case <-r.work.Failed():
			cancel()
		case <-nctx.Done():
		}
	}()
	sched := faults.Schedule{Groups: plan.Nemesis, Seed: spec.Seed, MinGap: min(spec.TTL.D()/2, time.Second), MaxGap: min(spec.TTL.D(), 2*time.Second),
		Steps: plan.Steps, Start: r.startedAt}
	if spec.Interval > 0 {
		sched.MinGap, sched.MaxGap = spec.Interval.D()/2, spec.Interval.D()*3/2
	}
	if len(plan.Steps) > 0 {
		logf("following a schedule of %d faults", len(plan.Steps))
	}
	nemesisErr := errors.Join(sched.Run(nctx, r.env), r.env.Undeclared.Err())
	<-nctx.Done()
	ran.stopped = watched()

	r.net.HealAll()
	if err := r.stopWork(); err != nil {
		return nil, err
	}
	if err := r.cl.Settle(ctx, 30*time.Second); err != nil && ctx.Err() == nil {
		logf("warning: the topology did not settle after the heal: %v", err)
	}
	if nemesisErr != nil {
		return nil, fmt.Errorf("nemesis: %w", nemesisErr)
	}
	if ctx.Err() != nil {
		return nil, nil
	}
	if ran.stopped != "" {
		// The verdict is already what the run was for; a liveness check
		// would cost a quiet, a worker and an acquire. The results say
		// liveness was not checked.
		logf("%7.3fs  healed; liveness not checked: the run stopped early", rec.Now().Seconds())
		return nil, nil
	}
	logf("%7.3fs  healed; liveness check after %v of quiet", rec.Now().Seconds(), quiet)
	// A lock service that keeps leases past their TTL (etcd after a
	// leader change) may keep the last one that long after the heal.
	ok, err := r.work.FinalAcquire(quiet, spec.TTL.D()+margin+plan.Lock.Outlive(spec.TTL.D()))
	if err != nil {
		return nil, err
	}
	logf("%7.3fs  final acquire %s", rec.Now().Seconds(), map[bool]string{true: "succeeded", false: "FAILED: the lock is stuck"}[ok])
	return nil, nil
}

// watchAnomalies audits the history while it is recorded and, as soon as
// it is certain of an anomaly in wanted, logs it and calls stop. The
// returned function ends the watch and says what stopped the run ("" if
// nothing did). An audit of a long history takes long: the next waits ten
// times as long as the last took, so that the watch takes a tenth of a core
// at most.
func watchAnomalies(ctx context.Context, rec *history.Recorder, wanted []string, opts checker.Options, logf func(string, ...any), stop func()) func() string {
	var found string
	done := make(chan struct{})
	go func() {
		defer close(done)
		wait := 100 * time.Millisecond
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
			start := time.Now()
			now := rec.Now()
			certain, ok := checker.AuditPrefix(rec.Events(), int64(now), wanted, opts)
			if ok && ctx.Err() == nil { // past the time limit it stopped nothing
				found = fmt.Sprintf("%s certain at %.3f s", certain.Anomaly, now.Seconds())
				logf("%7.3fs  stopping early: %s: %s", now.Seconds(), found, certain.Narrative)
				stop()
				return
			}
			wait = max(100*time.Millisecond, 10*time.Since(start))
		}
	}()
	return func() string {
		<-done
		return found
	}
}

// syncWriter serialises writes from workers' stderr and the harness's log.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
