// Package scenario describes one run (a Spec) and glues it together: start
// the topology, the network and the workers, run the seeded nemesis, close
// with a heal and a liveness check, check the history, write the results.
package scenario

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/lockharness/lockharness/cluster"
	"github.com/lockharness/lockharness/faults"
	"github.com/lockharness/lockharness/locks"
)

// Workloads this build knows.
var Workloads = []string{"mutex"}

// Spec is everything that defines a run. The same spec and seed make the
// same choices.
type Spec struct {
	Name     string `json:"name"`
	Topology string `json:"topology"`
	Backend  string `json:"backend"`
	// Image is the docker backend's node image (empty: cluster.DefaultImage).
	Image    string `json:"image,omitempty"`
	Lock     string `json:"lock"`
	Workload string `json:"workload"`
	Nemesis  string `json:"nemesis"`
	// Interval is the mean quiet time between faults (0: from the TTL).
	Interval Duration `json:"nemesis_interval,omitempty"`
	Clients  int      `json:"clients"`
	// Nodes is the number of independent nodes of a redlock topology.
	Nodes int `json:"nodes,omitempty"`
	// RestartDelay is how long kill-node keeps a node down (0: 0-100 ms).
	RestartDelay Duration `json:"restart_delay,omitempty"`
	TTL          Duration `json:"ttl"`
	Hold         Duration `json:"hold"`
	TimeLimit    Duration `json:"time_limit"`
	OpTimeout    Duration `json:"op_timeout"`
	Persistence  string   `json:"persistence"`
	Seed         int64    `json:"seed"`
	Key          string   `json:"key"`
}

// Defaults is the spec `harness run` starts from.
func Defaults() Spec {
	return Spec{
		Topology: "single", Backend: "local", Lock: "cad", Workload: "mutex", Nemesis: faults.None,
		Clients: 4, TTL: Duration(2 * time.Second), Hold: Duration(300 * time.Millisecond),
		TimeLimit: Duration(10 * time.Second), OpTimeout: Duration(500 * time.Millisecond),
		Persistence: cluster.PersistNone, Key: "lock:orders",
	}
}

// DefaultName names a run after what it tests.
func (s Spec) DefaultName() string {
	return fmt.Sprintf("%s-%s-%s", s.Topology, s.Lock, strings.ReplaceAll(s.Nemesis, ",", "_"))
}

// Validate reports every problem with the spec, each naming the bad value
// and the valid ones.
func (s Spec) Validate() error {
	var errs []error
	errs = append(errs, cluster.Spec{Topology: s.Topology, Backend: s.Backend, Image: s.Image, Persistence: s.Persistence}.Validate())
	if r, _, err := locks.ParseLock(s.Lock); err != nil {
		errs = append(errs, err)
	} else if !r.Supports(s.Topology) {
		errs = append(errs, fmt.Errorf("lock %s does not run on topology %s", s.Lock, s.Topology))
	}
	if s.Topology == "redlock" && s.Nodes != 0 && s.Nodes < 3 {
		errs = append(errs, fmt.Errorf("a redlock topology needs at least 3 nodes, got %d", s.Nodes))
	}
	if fs, err := faults.Lookup(s.Nemesis); err != nil {
		errs = append(errs, err)
	} else {
		errs = append(errs, faults.Check(fs, s.Topology))
	}
	errs = append(errs, cluster.OneOf("workload", s.Workload, Workloads))
	if s.Clients < 1 {
		errs = append(errs, fmt.Errorf("clients must be at least 1, got %d", s.Clients))
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
	if s.Hold < 0 {
		errs = append(errs, fmt.Errorf("hold must not be negative, got %v", s.Hold))
	}
	if s.TTL > 0 && s.TTL < Duration(100*time.Millisecond) {
		errs = append(errs, fmt.Errorf("ttl %v is too short to tell a lease from operation latency; use at least 100ms", s.TTL))
	}
	if s.Key == "" {
		errs = append(errs, errors.New("key must not be empty"))
	}
	return errors.Join(errs...)
}

// Line is the spec on one line, for summaries.
func (s Spec) Line() string {
	line := fmt.Sprintf("topology %s · lock %s · nemesis %s · %d clients · ttl %v · hold %v · %v · persistence %s",
		s.Topology, s.Lock, s.Nemesis, s.Clients, s.TTL, s.Hold, s.TimeLimit, s.Persistence)
	if s.Backend == cluster.BackendDocker {
		line += " · docker " + cmp.Or(s.Image, cluster.DefaultImage)
	}
	return line
}

// Command is the `harness run` command line that repeats this run exactly.
func (s Spec) Command() string {
	extra := ""
	if s.Backend != "" && s.Backend != cluster.BackendLocal {
		extra += " --backend " + s.Backend
	}
	if s.Image != "" {
		extra += " --image " + s.Image
	}
	if s.Nodes != 0 {
		extra += fmt.Sprintf(" --nodes %d", s.Nodes)
	}
	if s.Interval != 0 {
		extra += fmt.Sprintf(" --nemesis-interval %v", s.Interval)
	}
	if s.RestartDelay != 0 {
		extra += fmt.Sprintf(" --restart-delay %v", s.RestartDelay)
	}
	return fmt.Sprintf("harness run --topology %s --lock %s --nemesis %s --clients %d --ttl %v --hold %v --time-limit %v --op-timeout %v --persistence %s%s --seed %d --name %s",
		s.Topology, s.Lock, s.Nemesis, s.Clients, s.TTL, s.Hold, s.TimeLimit, s.OpTimeout, s.Persistence, extra, s.Seed, s.Name)
}

// Duration is a time.Duration written as "1.5s" in JSON.
type Duration time.Duration

func (d Duration) String() string { return time.Duration(d).String() }

// D is the value as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

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
