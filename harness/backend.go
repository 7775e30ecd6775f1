package harness

import (
	"flag"
	"strings"

	"github.com/lockharness/lockharness/scenario"
)

// overrides are the flags a verb that runs catalog scenarios takes to
// change what every scenario runs on, or with which lock.
type overrides struct {
	backend, image, lock, workerCmd *string
}

// overrideFlags adds --backend, --image, --lock and --worker-cmd to a verb
// that runs catalog scenarios.
func overrideFlags(fs *command) overrides {
	return overrides{
		backend:   fs.String("backend", "", specUsage("backend")+" (default: the scenario's)"),
		image:     fs.String("image", "", specUsage("image")),
		lock:      fs.String("lock", "", "run the scenarios with this lock instead of their own (exec: the worker of --worker-cmd)"),
		workerCmd: fs.String("worker-cmd", "", "with --lock exec: the `command` every client runs, a worker speaking the worker protocol (docs/worker-protocol.md)"),
	}
}

// specUsage is the help of a spec's own flag, as run declares it.
func specUsage(name string) string {
	fs := flag.NewFlagSet("spec", flag.ContinueOnError)
	s := scenario.Defaults()
	s.RegisterFlags(fs)
	return fs.Lookup(name).Usage
}

// apply changes a scenario's spec where a flag was given, leaving the
// catalog's choice elsewhere.
func (o overrides) apply(s *scenario.Spec) {
	if *o.backend != "" {
		s.Backend = *o.backend
	}
	if *o.image != "" {
		s.Image = *o.image
	}
	switch {
	case *o.lock != "":
		s.Lock, s.WorkerCmd = *o.lock, *o.workerCmd
	case *o.workerCmd != "":
		s.Lock, s.WorkerCmd = scenario.ExecLock, *o.workerCmd
	}
}

// changesLock reports whether the scenarios run with another lock.
func (o overrides) changesLock() bool { return *o.lock != "" || *o.workerCmd != "" }

// String names the overrides given, as flags, for a suite's record.
func (o overrides) String() string {
	var parts []string
	for _, f := range []struct{ name, v string }{{"backend", *o.backend}, {"image", *o.image}, {"lock", *o.lock}, {"worker-cmd", *o.workerCmd}} {
		if f.v != "" {
			parts = append(parts, "--"+f.name+" "+f.v)
		}
	}
	return strings.Join(parts, " ")
}
