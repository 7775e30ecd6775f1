package scenario

import (
	"errors"
	"slices"
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
		if got := r.Topologies; !slices.Equal(got, want) {
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
