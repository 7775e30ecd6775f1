package scenario

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/lockharness/lockharness/cluster"
	"github.com/lockharness/lockharness/locks"
)

// namedTopologies are the topologies each built-in recipe ran on when the
// recipes named them, recorded from the last recipes that did; the first
// is the one the libs suite and compare run it on.
var namedTopologies = map[string][]string{
	"naive":       {"single", "sentinel", "cluster"},
	"del":         {"single", "sentinel", "cluster"},
	"cad":         {"single", "sentinel", "cluster"},
	"renew":       {"single", "sentinel", "cluster"},
	"fenced":      {"single", "sentinel", "cluster"},
	"wait":        {"sentinel", "cluster"},
	"redlock":     {"redlock"},
	"redsync":     {"redlock", "single"},
	"redislock":   {"single", "sentinel", "cluster"},
	"rueidislock": {"single", "sentinel", "cluster"},
	"etcd":        {"etcd"},
	"etcd-fenced": {"etcd"},
}

// Every built-in recipe runs on the topologies it ran on by name, in the
// same order, so that the libs suite and compare pick the same home.
func TestRecipesRunWhereTheyRanByName(t *testing.T) {
	for _, r := range locks.Recipes {
		want, ok := namedTopologies[r.Name]
		if !ok {
			t.Errorf("recipe %s has no recorded topologies", r.Name)
			continue
		}
		if got := cluster.Offering(r.Needs, r.Prefers); !slices.Equal(got, want) {
			t.Errorf("recipe %s runs on %v, ran on %v", r.Name, got, want)
		}
	}
	if len(locks.Recipes) != len(namedTopologies) {
		t.Errorf("%d recipes, %d recorded", len(locks.Recipes), len(namedTopologies))
	}
}

// A spec is refused for its lock's topology exactly where it was when the
// recipes named their topologies: a target as the topology it is shaped
// as.
func TestResolveRefusesLocksWhereItDidByName(t *testing.T) {
	shapes := map[string]string{cluster.Target: cluster.Single, cluster.TargetSentinel: cluster.Sentinel}
	targets := map[string]string{cluster.Target: "redis://127.0.0.1:1", cluster.TargetSentinel: "redis-sentinel://127.0.0.1:1/m"}
	for _, topology := range cluster.Topologies {
		for name, ranOn := range namedTopologies {
			s := Defaults()
			s.Lock = name
			if url, ok := targets[topology]; ok {
				s.Target = url
			} else {
				s.Topology = topology
			}
			_, err := s.Resolve()
			shape := topology
			if sh, ok := shapes[topology]; ok {
				shape = sh
			}
			if refused, want := errors.Is(err, ErrLockTopology), !slices.Contains(ranOn, shape); refused != want {
				t.Errorf("lock %s on %s: refused %v, want %v (%v)", name, topology, refused, want, err)
			}
		}
	}
}

// A refusal names where the lock runs and what the topology lacks.
func TestALockRefusedSaysWhatItNeeds(t *testing.T) {
	for _, c := range []struct{ lock, topology, target, want string }{
		{"cad", cluster.Redlock, "", "unsupported topology: lock cad does not run on topology redlock (it runs on single, sentinel, cluster): it needs primary (one primary per key that takes every client's writes to it)"},
		{"wait", cluster.Single, "", "lock wait does not run on topology single (it runs on sentinel, cluster): it needs replicas (replicas a client can wait for (WAIT))"},
		{"redlock", cluster.Target, "redis://127.0.0.1:1", "lock redlock does not run on topology single (it runs on redlock): it needs majorities (independent nodes of which a client needs a majority)"},
		{"redsync", cluster.RedisCluster, "", "lock redsync does not run on topology cluster (it runs on redlock, single): it needs independent ("},
	} {
		s := Defaults()
		s.Lock, s.Topology, s.Target = c.lock, c.topology, c.target
		_, err := s.Resolve()
		if !errors.Is(err, ErrLockTopology) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s on %s: %v, want %q", c.lock, c.topology, err, c.want)
		}
	}
}

// readyWorker is a worker command that announces ready and does nothing
// else: enough for a spec to resolve.
func readyWorker(ready string) string {
	return "echo '" + ready + "'; cat >/dev/null"
}

// An outside worker that announces what it needs runs on every topology
// that offers it, targets answering for themselves; one that names its
// topologies runs on those, a target as the topology it is shaped as, as
// before needs.
func TestAWorkerRunsWhereItsReadyLineSays(t *testing.T) {
	needy := readyWorker(`{"kind":"ready","protocol":1,"name":"needy","needs":["primary","replicas"],"unsupported":{"single":"WAIT needs a replica"}}`)
	nowhere := readyWorker(`{"kind":"ready","protocol":1,"name":"nowhere","needs":["majorities","sentinels"]}`)
	named := readyWorker(`{"kind":"ready","protocol":1,"name":"named","topologies":["single","sentinel"],"unsupported":{"redlock":"one server only"}}`)
	targets := map[string]string{cluster.Target: "redis://127.0.0.1:1", cluster.TargetSentinel: "redis-sentinel://127.0.0.1:1/m"}
	for _, c := range []struct {
		worker, topology, refusal string
	}{
		{needy, cluster.Sentinel, ""},
		{needy, cluster.RedisCluster, ""},
		{needy, cluster.TargetSentinel, ""},
		{needy, cluster.Single, "lock worker needy does not run on topology single (it runs on sentinel, cluster): it needs replicas (replicas a client can wait for (WAIT)): WAIT needs a replica"},
		{needy, cluster.Target, "lock worker needy does not run on topology single (it runs on sentinel, cluster): it needs replicas"},
		{needy, cluster.Redlock, "lock worker needy does not run on topology redlock (it runs on sentinel, cluster): it needs primary (one primary per key that takes every client's writes to it) and replicas"},
		{nowhere, cluster.Sentinel, "lock worker nowhere does not run on topology sentinel (no topology offers all it needs: majorities, sentinels): it needs majorities"},
		{named, cluster.Single, ""},
		{named, cluster.Sentinel, ""},
		{named, cluster.Target, ""},
		{named, cluster.TargetSentinel, ""},
		{named, cluster.Redlock, "unsupported topology: lock worker named does not run on topology redlock (it runs on single, sentinel): one server only"},
		{named, cluster.RedisCluster, "unsupported topology: lock worker named does not run on topology cluster (it runs on single, sentinel)"},
	} {
		s := Defaults()
		s.Lock, s.WorkerCmd = ExecLock, c.worker
		if url, ok := targets[c.topology]; ok {
			s.Target = url
		} else {
			s.Topology = c.topology
		}
		_, err := s.Resolve()
		switch {
		case c.refusal == "" && errors.Is(err, ErrLockTopology):
			t.Errorf("%s on %s refused: %v", c.worker, c.topology, err)
		case c.refusal != "" && (!errors.Is(err, ErrLockTopology) || !strings.Contains(err.Error(), c.refusal)):
			t.Errorf("%s on %s: %v, want %q", c.worker, c.topology, err, c.refusal)
		}
	}
}
