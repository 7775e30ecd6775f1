package scenario

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/lockharness/lockharness/examples/workers"
	"github.com/lockharness/lockharness/internal/shell"
	"github.com/lockharness/lockharness/locks"
	"github.com/lockharness/lockharness/workloads"
)

// ExecLock is the --lock value that runs an outside program (--worker-cmd)
// as every client, over the worker protocol.
const ExecLock = locks.Exec

// Launcher is how the spec's clients' workers start: the harness binary
// (workerBin) with its hidden worker verb for a built-in recipe, or the
// user's program.
func (s Spec) Launcher(workerBin string) workloads.Launcher {
	if s.Lock == ExecLock {
		return workloads.Launcher{Shell: s.WorkerCmd}
	}
	return workloads.Launcher{Bin: workerBin, Args: []string{"worker", "--lock", s.Lock}}
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

// WorkerTopologies are the topologies a worker runs on as its ready line
// announces them, its home first; none is an error that says why.
func WorkerTopologies(r workloads.Ready) ([]string, error) {
	topologies := lockTopologies(locks.Recipe{Needs: r.Needs, Prefers: r.Prefers}, r)
	if len(topologies) == 0 {
		return nil, errors.New(runsNowhere(r.Needs))
	}
	return topologies, nil
}

// probes remembers each worker command's ready line: a suite resolves the
// same worker for many runs.
var probes sync.Map // worker command → workloads.Ready

func probe(s Spec) (workloads.Ready, error) {
	if r, ok := probes.Load(s.WorkerCmd); ok {
		return r.(workloads.Ready), nil
	}
	r, err := workloads.Probe(s.Launcher("").Command(0), os.Stderr)
	if err == nil {
		probes.Store(s.WorkerCmd, r)
	}
	return r, err
}

// RedisPyWorker runs redis-py's own redis.lock.Lock as a worker. It needs
// Debian's python3-redis, which only Debian's python3 imports.
var RedisPyWorker = "/usr/bin/python3 " + shell.Quote(repoFile("examples/workers/redis_py_lock.py"))

// repoFile finds a file of the repository (a reference worker) from
// wherever the harness runs: the working directory or one above it (a
// package's tests), or the checkout the binary was built into (bin/harness);
// failing those, a reference worker the binary carries (workers.Files) is
// written out once to the user's cache and run from there, so that a
// harness installed far from any checkout runs the catalog's rows. It
// returns rel itself when none has it.
func repoFile(rel string) string {
	var roots []string
	if wd, err := os.Getwd(); err == nil {
		roots = append(roots, wd, filepath.Dir(wd))
	}
	if exe, err := os.Executable(); err == nil {
		roots = append(roots, filepath.Dir(filepath.Dir(exe)))
	}
	for _, root := range roots {
		if p := filepath.Join(root, rel); fileExists(p) {
			return p
		}
	}
	if data, ok := workers.Files[rel]; ok {
		if p, err := writeOut(rel, data); err == nil {
			return p
		}
	}
	return rel
}

// writeOut writes a file the binary carries under the user's cache (the
// temporary directory without one), named by its content, and returns its
// path: runs at once write the same bytes, and a rename makes each write
// whole.
func writeOut(rel string, data []byte) (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		dir = os.TempDir()
	}
	sum := sha256.Sum256(data)
	dir = filepath.Join(dir, "lockharness", "workers", hex.EncodeToString(sum[:6]))
	p := filepath.Join(dir, filepath.Base(rel))
	if b, err := os.ReadFile(p); err == nil && bytes.Equal(b, data) {
		return p, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(dir, ".write-*")
	if err != nil {
		return "", err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return "", err
	}
	tmp.Close()
	if err := os.Rename(tmp.Name(), p); err != nil {
		os.Remove(tmp.Name())
		return "", err
	}
	return p, nil
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}
