package scenario

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/cluster"
	"github.com/lockharness/lockharness/faults"
	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/locks"
	"github.com/lockharness/lockharness/reports"
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
}

// Outcome is a finished run.
type Outcome struct {
	Dir     string
	Results reports.Results
}

// quiet is the pause between the final heal and the liveness check, and
// margin is how long past the TTL the final acquire may take.
const (
	quiet  = 500 * time.Millisecond
	margin = time.Second
)

// Run carries out one run. An interrupted run (ctx cancelled) still stops
// everything, checks what it recorded and writes results.json, with the
// verdict unknown. The error is for the harness's own failures.
func Run(ctx context.Context, spec Spec, opt Options) (Outcome, error) {
	if spec.Name == "" {
		spec.Name = spec.DefaultName()
	}
	if err := spec.Validate(); err != nil {
		return Outcome{}, err
	}
	if spec.Backend == cluster.BackendDocker && spec.Image == "" {
		// Recorded, so results.json says which server was tested.
		spec.Image = cluster.DefaultImage
	}
	recipe, _, _ := locks.ParseLock(spec.Lock)
	nemesis, _ := faults.Lookup(spec.Nemesis)
	dir, err := reports.NewRunDir(opt.Store, spec.Name, time.Now())
	if err != nil {
		return Outcome{}, err
	}
	out := Outcome{Dir: dir}

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
	rec := history.NewRecorder(histFile)

	runErr := drive(ctx, spec, opt, recipe, nemesis, dir, rec, logw, logf)
	if runErr != nil {
		logf("harness error: %v", runErr)
	}
	if err := rec.Err(); err != nil && runErr == nil {
		runErr = fmt.Errorf("writing the history: %w", err)
	}

	meta := reports.Meta{Seed: spec.Seed, Command: spec.Command(), Interrupted: ctx.Err() != nil}
	if meta.Spec, err = json.Marshal(spec); err != nil {
		return out, err
	}
	if runErr != nil {
		meta.Error = runErr.Error()
	}
	events := rec.Events()
	results, err := reports.Conclude(events, meta, checker.Options{Slack: reports.DefaultSlack, Timeout: opt.CheckTimeout})
	if err != nil {
		return out, fmt.Errorf("checking the history: %w", err)
	}
	out.Results = results
	if err := reports.WriteRun(dir, events, results, true); err != nil {
		return out, err
	}
	return out, runErr
}

// drive runs the topology, workload and nemesis, and always stops them.
func drive(ctx context.Context, spec Spec, opt Options, recipe locks.Recipe, nemesis []faults.Group,
	dir string, rec *history.Recorder, logw io.Writer, logf func(string, ...any)) error {
	where := spec.Backend + " backend"
	if spec.Image != "" {
		where += ", image " + spec.Image
	}
	logf("starting %s topology (%s) in %s", spec.Topology, where, dir)
	net := faults.NewNetwork()
	defer net.Close()
	cl, err := cluster.Start(ctx, cluster.Spec{Topology: spec.Topology, Backend: spec.Backend, Image: spec.Image,
		Persistence: spec.Persistence, Dir: filepath.Join(dir, "nodes"), Link: net.Proxy, Nodes: spec.Nodes,
		Clock: faults.NeedsClock(nemesis)})
	if err != nil {
		return err
	}
	defer cl.Close()

	// Slot Clients is the closing liveness check's own client. Every client
	// reaches every node and sentinel through a link of its own.
	for slot := 0; slot <= spec.Clients; slot++ {
		for _, n := range append(append([]cluster.Node(nil), cl.Nodes...), cl.Sentinels...) {
			if _, err := net.Link(clientLink(slot, n.Name()), n.Addr()); err != nil {
				return err
			}
		}
	}
	clientLinks := func(slot int) []*faults.Link { return net.Links(fmt.Sprintf("c%d-", slot)) }

	workerBin := opt.WorkerBin
	if workerBin == "" {
		if workerBin, err = os.Executable(); err != nil {
			return err
		}
	}
	spawn := func(slot int) *exec.Cmd {
		args := []string{"worker", "--lock", spec.Lock, "--op-timeout", spec.OpTimeout.String()}
		return exec.Command(workerBin, append(args, workerTarget(cl, net, slot)...)...)
	}
	work, err := workloads.StartMutex(workloads.MutexConfig{
		Clients: spec.Clients, Key: spec.Key, TTL: spec.TTL.D(), Hold: spec.Hold.D(), Seed: spec.Seed,
		Fenced: recipe.Name == "fenced", RecipePoints: recipe.Points, Extend: recipe.Extends,
		Spawn: spawn, Rec: rec, Stderr: logw,
	})
	if err != nil {
		return err
	}
	stopWork := sync.OnceValue(work.Stop)
	defer stopWork()
	logf("%d clients running %s against %s for %v, nemesis %s", spec.Clients, spec.Lock, spec.Key, spec.TimeLimit, spec.Nemesis)

	env := &faults.Env{Cluster: cl, Net: net, Clients: work, Rec: rec, NumClients: spec.Clients,
		ClientLinks: clientLinks, TTL: spec.TTL.D(), Hold: spec.Hold.D(), RestartDelay: spec.RestartDelay.D(), Log: logf,
		ClientLink: func(slot int, node string) *faults.Link { return net.Get(clientLink(slot, node)) }}
	watchCtx, stopWatch := context.WithCancel(context.Background())
	defer stopWatch()
	faults.WatchRoles(watchCtx, cl, rec, logf)
	nctx, cancel := context.WithTimeout(ctx, spec.TimeLimit.D())
	defer cancel()
	sched := faults.Schedule{Groups: nemesis, Seed: spec.Seed, MinGap: min(spec.TTL.D()/2, time.Second), MaxGap: min(spec.TTL.D(), 2*time.Second)}
	if spec.Interval > 0 {
		sched.MinGap, sched.MaxGap = spec.Interval.D()/2, spec.Interval.D()*3/2
	}
	nemesisErr := sched.Run(nctx, env)
	<-nctx.Done()

	net.HealAll()
	if err := stopWork(); err != nil {
		return err
	}
	if err := cl.Settle(ctx, 30*time.Second); err != nil && ctx.Err() == nil {
		logf("warning: the topology did not settle after the heal: %v", err)
	}
	if nemesisErr != nil {
		return fmt.Errorf("nemesis: %w", nemesisErr)
	}
	if ctx.Err() != nil {
		return nil
	}
	logf("%7.3fs  healed; liveness check after %v of quiet", rec.Now().Seconds(), quiet)
	time.Sleep(quiet)
	ok, err := work.FinalAcquire(spec.TTL.D() + margin)
	if err != nil {
		return err
	}
	logf("%7.3fs  final acquire %s", rec.Now().Seconds(), map[bool]string{true: "succeeded", false: "FAILED: the lock is stuck"}[ok])
	return nil
}

func clientLink(slot int, node string) string { return fmt.Sprintf("c%d-%s", slot, node) }

// workerTarget is how a worker in slot reaches the lock service: its own
// link to the single node, or the sentinels through its own links, with
// every node's internal address mapped to the slot's link to that node.
func workerTarget(cl *cluster.Cluster, net *faults.Network, slot int) []string {
	link := func(node string) string { return net.Get(clientLink(slot, node)).Addr() }
	switch {
	case cl.Topology == "redlock":
		var addrs []string
		for _, n := range cl.Nodes {
			addrs = append(addrs, link(n.Name()))
		}
		return []string{"--addrs", strings.Join(addrs, ",")}
	case len(cl.Sentinels) == 0:
		return []string{"--addr", link(cl.Nodes[0].Name())}
	}
	var sentinels, dial []string
	for _, s := range cl.Sentinels {
		sentinels = append(sentinels, link(s.Name()))
	}
	for _, n := range cl.Nodes {
		dial = append(dial, cl.Internal[n.Name()]+"="+link(n.Name()))
	}
	return []string{"--master", cl.Master, "--sentinels", strings.Join(sentinels, ","), "--map", strings.Join(dial, ",")}
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
