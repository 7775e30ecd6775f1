package scenario

import (
	"errors"
	"strings"
	"testing"

	"github.com/lockharness/lockharness/cluster"
)

func TestClusterRefusals(t *testing.T) {
	for _, c := range []struct {
		mod  func(*Spec)
		want string
	}{
		{func(s *Spec) { s.Lock = "redlock" }, "lock redlock does not run on topology cluster (it runs on redlock)"},
		{func(s *Spec) { s.Topology, s.Nemesis = cluster.Single, "cluster-failover" }, "nemesis cluster-failover: topology single has no failover"},
		{func(s *Spec) { s.Topology, s.Nemesis = cluster.Sentinel, "cluster-failover" }, "topology sentinel has no slots (keys spread over shards by hash slot"},
		{func(s *Spec) { s.Nemesis = "cluster-failover:mode=now" }, "option mode=now: want one of plain, force, takeover"},
		{func(s *Spec) { s.Shards = 2 }, "--shards 2: a cluster needs 3 to 16 shards"},
		{func(s *Spec) { s.Workload, s.Keys = "inventory", 3 }, "--keys 3: workload inventory writes one row under one key"},
	} {
		s := Defaults()
		s.Topology = cluster.RedisCluster
		c.mod(&s)
		_, err := s.Resolve()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s/%s/%s: %v, want %q", s.Topology, s.Lock, s.Nemesis, err, c.want)
		}
		if c.want[:4] == "lock" && !errors.Is(err, ErrLockTopology) {
			t.Errorf("%v is not ErrLockTopology", err)
		}
	}
}
