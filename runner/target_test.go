package runner

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/cluster"
	"github.com/lockharness/lockharness/internal/proc"
	"github.com/lockharness/lockharness/scenario"
)

// A deployment the harness did not start: a redis-server this test starts
// on loopback, with a password and a key of its own team. Client faults
// work through the proxies and catch the stale write; faults that control
// a node are refused up front; nothing outside the harness's prefix is
// touched.
func TestTarget(t *testing.T) {
	needRedis(t)
	t.Cleanup(proc.KillAll)
	n, err := cluster.StartLocal(context.Background(), "staging", t.TempDir(), cluster.PersistNone)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Stop()
	ctx := context.Background()
	admin := redis.NewClient(&redis.Options{Addr: n.Addr()})
	err = admin.ConfigSet(ctx, "requirepass", "s3cret").Err()
	admin.Close()
	if err != nil {
		t.Fatal(err)
	}
	team := redis.NewClient(&redis.Options{Addr: n.Addr(), Password: "s3cret"})
	defer team.Close()
	if err := team.Set(ctx, "orders:42", "theirs", 0).Err(); err != nil {
		t.Fatal(err)
	}
	url := fmt.Sprintf("redis://:s3cret@%s", n.Addr())

	s := spec("cad", "pause-client", 8*time.Second, 1)
	s.Target = url
	p, err := s.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	if p.Spec.Topology != cluster.Target || p.Spec.Key != scenario.TargetKeyPrefix+"lock:orders" || strings.Contains(p.Spec.Target, "s3cret") {
		t.Fatalf("resolved topology %q key %q target %q: want target, the prefixed key, and no password", p.Spec.Topology, p.Spec.Key, p.Spec.Target)
	}
	out, err := RunSpec(ctx, s, Options{Store: t.TempDir(), WorkerBin: workerBin})
	if err != nil {
		t.Fatal(err)
	}
	wantAnomaly(t, out.Results, checker.StaleWrite)
	if live := proc.Live(); live != 1 {
		t.Errorf("%d child processes after the run, want 1: the staging server, which is not the run's to stop", live)
	}
	if err := team.Ping(ctx).Err(); err != nil {
		t.Errorf("the target after the run: %v", err)
	}

	if v, err := team.Get(ctx, "orders:42").Result(); err != nil || v != "theirs" {
		t.Errorf("the team's key after the run: %q, %v", v, err)
	}
	keys, _ := team.Keys(ctx, "*").Result()
	for _, k := range keys {
		if k != "orders:42" && !strings.HasPrefix(k, scenario.TargetKeyPrefix) {
			t.Errorf("the run left key %q outside %s", k, scenario.TargetKeyPrefix)
		}
	}

	for _, nemesis := range []string{"kill-node", "pause-node", "clock-jump"} {
		s.Nemesis = nemesis
		if _, err := s.Resolve(); err == nil || !strings.Contains(err.Error(), "node-control") {
			t.Errorf("--nemesis %s with --target: %v, want a refusal naming node-control", nemesis, err)
		}
	}
	s.Nemesis, s.Target = "none", fmt.Sprintf("redis://:wrong@%s", n.Addr())
	if _, err := RunSpec(ctx, s, Options{Store: t.TempDir(), WorkerBin: workerBin}); err == nil || !strings.Contains(err.Error(), "WRONGPASS") {
		t.Errorf("a wrong password in --target: %v, want WRONGPASS", err)
	}
}

// A Sentinel deployment the harness did not start: a primary, two replicas
// and three sentinels this test starts as a team's would be. The run finds
// the nodes by asking the sentinels, puts every address they announce
// behind each client's own proxies, catches pause-client's stale write,
// refuses the faults that would control a node, and leaves the deployment
// running and its primary where it was.
func TestTargetSentinel(t *testing.T) {
	needRedis(t)
	t.Cleanup(proc.KillAll)
	ctx := context.Background()
	direct := func(_, upstream string) (string, error) { return upstream, nil }
	team, err := cluster.Start(ctx, cluster.Spec{Topology: cluster.Sentinel, Backend: cluster.BackendLocal, Dir: t.TempDir(), Link: direct})
	if err != nil {
		t.Fatal(err)
	}
	defer team.Close()
	before, err := team.Primary(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	var sentinels []string
	for _, s := range team.Sentinels {
		sentinels = append(sentinels, s.Addr())
	}
	url := "redis-sentinel://" + strings.Join(sentinels, ",") + "/lockharness"

	s := spec("cad", "pause-client", 8*time.Second, 1)
	s.Target = url
	p, err := s.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	if p.Spec.Topology != cluster.TargetSentinel || p.Cluster.Shape() != cluster.Sentinel || p.Spec.Key != scenario.TargetKeyPrefix+"lock:orders" {
		t.Fatalf("resolved topology %q shape %q key %q: want %s, sentinel, the prefixed key", p.Spec.Topology, p.Cluster.Shape(), p.Spec.Key, cluster.TargetSentinel)
	}
	out, err := RunSpec(ctx, s, Options{Store: t.TempDir(), WorkerBin: workerBin})
	if err != nil {
		t.Fatal(err)
	}
	wantAnomaly(t, out.Results, checker.StaleWrite)
	if prov := out.Results.Provenance; prov == nil || len(prov.Servers) != 6 {
		t.Errorf("provenance servers %v, want the 3 nodes and 3 sentinels the sentinels named", prov)
	}
	for _, n := range team.Servers() {
		if !n.Running() {
			t.Errorf("%s of the deployment is not running after the run", n.Name())
		}
	}
	if after, err := team.Primary(ctx, ""); err != nil || after.Name() != before.Name() {
		t.Errorf("the deployment's primary after the run: %v, %v; want %s", after, err, before.Name())
	}

	for _, nemesis := range []string{"kill-node", "pause-node", "partition-primary", "failover", "clock-jump"} {
		s.Nemesis = nemesis
		if _, err := s.Resolve(); err == nil || !strings.Contains(err.Error(), "topology "+cluster.TargetSentinel+" has no") {
			t.Errorf("--nemesis %s with a Sentinel --target: %v, want a refusal", nemesis, err)
		}
	}
	s.Nemesis, s.Target = "none", "redis-sentinel://"+strings.Join(sentinels, ",")+"/nosuchmaster"
	if _, err := RunSpec(ctx, s, Options{Store: t.TempDir(), WorkerBin: workerBin}); err == nil || !strings.Contains(err.Error(), `knows no primary named "nosuchmaster"`) {
		t.Errorf("an unknown master name: %v", err)
	}
}
