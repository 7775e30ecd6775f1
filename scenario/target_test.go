package scenario

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
	if p.Spec.Topology != cluster.Target || p.Spec.Key != TargetKeyPrefix+"lock:orders" || strings.Contains(p.Spec.Target, "s3cret") {
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
		if k != "orders:42" && !strings.HasPrefix(k, TargetKeyPrefix) {
			t.Errorf("the run left key %q outside %s", k, TargetKeyPrefix)
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

func TestTargetURLs(t *testing.T) {
	for raw, want := range map[string]string{
		"http://x:1":                          `scheme "http" (valid: redis, rediss)`,
		"redis://host":                        "want HOST:PORT",
		"redis-sentinel://a:1,b:2/m":          "sentinel deployments are not supported yet",
		"redis://a:1,b:2":                     "one server only",
		"redis://a:1/3":                       "lock clients use database 0",
		"redis://a:1?ca=/etc/hosts":           "?ca= goes with rediss://",
		"rediss://a:1?ca=/nonexistent/ca.pem": "the CA file",
	} {
		if _, err := cluster.ParseTarget(raw); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseTarget(%q) = %v, want %q", raw, err, want)
		}
	}
	s := spec("cad", "none", time.Second, 1)
	s.Target, s.Topology = "redis://127.0.0.1:1", cluster.Sentinel
	if _, err := s.Resolve(); err == nil || !strings.Contains(err.Error(), "drop --topology sentinel") {
		t.Errorf("--target with --topology sentinel: %v", err)
	}
}
