package scenario

import (
	"fmt"
	"github.com/lockharness/lockharness/access"
	"os"
	"os/exec"
	"sync"

	"github.com/lockharness/lockharness/locks"
	"github.com/lockharness/lockharness/workloads"
)

// ExecLock is the --lock value that runs an outside program (--worker-cmd)
// as every client, over the worker protocol.
const ExecLock = locks.Exec

// workerCommand is the command of a slot's worker: the harness binary's
// hidden worker verb for a built-in recipe, or the user's program, run by
// /bin/sh so that its command line reads as it would in a terminal. Either
// way the worker gets its own process group (proc.Start), which pauses and
// kills act on as a whole.
func workerCommand(spec Spec, workerBin string, slot int) *exec.Cmd {
	if spec.Lock == ExecLock {
		return workloads.ShellCommand(spec.WorkerCmd, slot)
	}
	cmd := exec.Command(workerBin, "worker", "--lock", spec.Lock)
	cmd.Env = workloads.WorkerEnv(slot)
	return cmd
}

// hello is the hello line of a slot's worker: how that client reaches the
// lock service, every address its own link.
func hello(spec Spec, topology string, a access.Access, slot int, replyWithin int64) workloads.Hello {
	h := workloads.NewHello(slot)
	h.Topology, h.OpTimeoutMs, h.ReplyWithinMs = topology, spec.OpTimeout.D().Milliseconds(), replyWithin
	h.SetAccess(a)
	return h
}

// execLock probes the worker of an exec spec for its ready line and makes
// of what it announces the lock the run is planned around.
func execLock(s Spec) (locks.Lock, workloads.Ready, error) {
	if s.WorkerCmd == "" {
		return locks.Lock{}, workloads.Ready{}, fmt.Errorf("lock %s needs --worker-cmd 'PROGRAM ARGS': the worker every client runs (docs/worker-protocol.md)", ExecLock)
	}
	r, err := probe(s)
	if err != nil {
		return locks.Lock{}, r, fmt.Errorf("--worker-cmd: %w", err)
	}
	return locks.Lock{Recipe: locks.Recipe{Name: ExecLock, Summary: r.Name + " " + r.Version, Needs: r.Needs, Prefers: r.Prefers,
		Points: r.Points, Extends: r.Extend, Fences: r.Fences, Renews: r.Renewals == workloads.RenewReported}}, r, nil
}

// probes remembers each worker command's ready line: a suite resolves the
// same worker for many runs.
var probes sync.Map // worker command → workloads.Ready

func probe(s Spec) (workloads.Ready, error) {
	if r, ok := probes.Load(s.WorkerCmd); ok {
		return r.(workloads.Ready), nil
	}
	r, err := workloads.Probe(workerCommand(s, "", 0), os.Stderr)
	if err == nil {
		probes.Store(s.WorkerCmd, r)
	}
	return r, err
}
