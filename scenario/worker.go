package scenario

import (
	"fmt"
	"os"
	"sync"

	"github.com/lockharness/lockharness/locks"
	"github.com/lockharness/lockharness/workloads"
)

// ExecLock is the --lock value that runs an outside program (--worker-cmd)
// as every client, over the worker protocol.
const ExecLock = locks.Exec

// workerLauncher is how the spec's clients' workers start: the harness
// binary's hidden worker verb for a built-in recipe, or the user's program.
func workerLauncher(spec Spec, workerBin string) workloads.Launcher {
	if spec.Lock == ExecLock {
		return workloads.Launcher{Shell: spec.WorkerCmd}
	}
	return workloads.Launcher{Bin: workerBin, Args: []string{"worker", "--lock", spec.Lock}}
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
	r, err := workloads.Probe(workerLauncher(s, "").Command(0), os.Stderr)
	if err == nil {
		probes.Store(s.WorkerCmd, r)
	}
	return r, err
}
