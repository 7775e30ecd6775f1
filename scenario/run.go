package scenario

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
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
	slack  = 2 * time.Millisecond
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
	recipe, _ := locks.Lookup(spec.Lock)
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

	res, err := checker.Check(rec.Events(), checker.Options{Slack: slack})
	if err != nil {
		res = checker.Result{Valid: checker.Unknown, Notes: []string{"history could not be checked: " + err.Error()}}
	}
	switch {
	case runErr != nil:
		res.Valid = checker.Unknown
	case ctx.Err() != nil:
		// What was found in the recorded part stands; a clean part proves
		// nothing about the rest.
		if res.Valid != checker.Invalid {
			res.Valid = checker.Unknown
		}
		res.Notes = append(res.Notes, "the run was interrupted before it finished")
	}
	results, err := reports.NewResults(res, spec.Seed, spec, spec.Command(), faultCounts(rec.Events()), float64(slack)/1e6)
	if err != nil {
		return out, err
	}
	if runErr != nil {
		results.Error = runErr.Error()
	}
	out.Results = results
	if err := reports.WriteResults(dir, results); err != nil {
		return out, err
	}
	return out, runErr
}

// drive runs the topology, workload and nemesis, and always stops them.
func drive(ctx context.Context, spec Spec, opt Options, recipe locks.Recipe, nemesis []faults.Fault,
	dir string, rec *history.Recorder, logw io.Writer, logf func(string, ...any)) error {
	logf("starting %s topology (%s backend) in %s", spec.Topology, spec.Backend, dir)
	cl, err := cluster.Start(ctx, cluster.Spec{Topology: spec.Topology, Backend: spec.Backend,
		Persistence: spec.Persistence, Dir: filepath.Join(dir, "nodes")})
	if err != nil {
		return err
	}
	defer cl.Close()

	net := faults.NewNetwork()
	defer net.Close()
	linkName := func(slot int, node string) string { return fmt.Sprintf("c%d-%s", slot, node) }
	// Slot Clients is the closing liveness check's own client.
	for slot := 0; slot <= spec.Clients; slot++ {
		for _, n := range cl.Nodes {
			if _, err := net.Link(linkName(slot, n.Name()), n.Addr()); err != nil {
				return err
			}
		}
	}
	clientLinks := func(slot int) []*faults.Link { return net.Links(fmt.Sprintf("c%d-", slot)) }
	addr := func(slot int) string { return clientLinks(slot)[0].Addr() }

	workerBin := opt.WorkerBin
	if workerBin == "" {
		if workerBin, err = os.Executable(); err != nil {
			return err
		}
	}
	spawn := func(addr string) *exec.Cmd {
		return exec.Command(workerBin, "worker", "--addr", addr, "--lock", spec.Lock, "--op-timeout", spec.OpTimeout.String())
	}
	work, err := workloads.StartMutex(workloads.MutexConfig{
		Clients: spec.Clients, Key: spec.Key, TTL: spec.TTL.D(), Hold: spec.Hold.D(), Seed: spec.Seed,
		Fenced: recipe.Name == "fenced", RecipePoints: recipe.Points,
		Addr: addr, Spawn: spawn, Rec: rec, Stderr: logw,
	})
	if err != nil {
		return err
	}
	stopWork := sync.OnceValue(work.Stop)
	defer stopWork()
	logf("%d clients running %s against %s for %v, nemesis %s", spec.Clients, spec.Lock, spec.Key, spec.TimeLimit, spec.Nemesis)

	env := &faults.Env{Cluster: cl, Net: net, Clients: work, Rec: rec, NumClients: spec.Clients,
		ClientLinks: clientLinks, TTL: spec.TTL.D(), Log: logf}
	nctx, cancel := context.WithTimeout(ctx, spec.TimeLimit.D())
	defer cancel()
	sched := faults.Schedule{Faults: nemesis, Seed: spec.Seed, MinGap: spec.TTL.D() / 2, MaxGap: spec.TTL.D()}
	nemesisErr := sched.Run(nctx, env)
	<-nctx.Done()

	net.HealAll()
	if err := stopWork(); err != nil {
		return err
	}
	if nemesisErr != nil {
		return fmt.Errorf("nemesis: %w", nemesisErr)
	}
	if ctx.Err() != nil {
		return nil
	}
	logf("%7.3fs  healed; liveness check after %v of quiet", rec.Now().Seconds(), quiet)
	time.Sleep(quiet)
	ok, err := work.FinalAcquire(addr(spec.Clients), spec.TTL.D()+margin)
	if err != nil {
		return err
	}
	logf("%7.3fs  final acquire %s", rec.Now().Seconds(), map[bool]string{true: "succeeded", false: "FAILED: the lock is stuck"}[ok])
	return nil
}

func faultCounts(events []history.Event) map[string]int {
	counts := map[string]int{}
	for _, e := range events {
		if e.IsNemesis() && e.Phase == history.Start {
			counts[e.F]++
		}
	}
	return counts
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
