package cluster_test

import (
	"context"
	"fmt"
	"github.com/lockharness/lockharness/access"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockharness/lockharness/cluster"
	"github.com/lockharness/lockharness/faults"
	"github.com/lockharness/lockharness/locks"
)

const secureKey = "lock:secure"

// startSecure starts a topology with Auth and TLS as asked, behind a
// toxiproxy network (TLS passes through it), on the local backend unless
// the spec names one; everything stops when the test ends, failed or not.
func startSecure(t *testing.T, s cluster.Spec) *cluster.Cluster {
	c, _ := startSecureIn(t, s)
	return c
}

// startSecureIn is startSecure, and says the run directory.
func startSecureIn(t *testing.T, s cluster.Spec) (*cluster.Cluster, string) {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server not installed; run `make setup`")
	}
	net := faults.NewNetwork()
	t.Cleanup(net.Close)
	if s.Backend == "" {
		s.Backend = cluster.BackendLocal
	}
	s.Persistence, s.Dir, s.Link = cluster.PersistNone, t.TempDir(), net.Proxy
	s.LockKeys = locks.KeyPatterns(secureKey)
	c, err := cluster.Start(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, s.Dir
}

// target is what a worker would be told, from the cluster's access.Access.
func target(t *testing.T, c *cluster.Cluster, slot int) access.Access {
	t.Helper()
	a, err := c.ConnectClient(slot, false)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func newClient(t *testing.T, tg access.Access) *redis.Client {
	t.Helper()
	c := locks.NewClient(tg, 2*time.Second)
	t.Cleanup(func() { c.Close() })
	return c
}

// What a lock client does, as the ACL user over TLS.
func lockRoundTrip(t *testing.T, rc *redis.Client) {
	t.Helper()
	ctx := context.Background()
	ok, err := rc.SetNX(ctx, secureKey, "A", 5*time.Second).Result()
	if err != nil || !ok {
		t.Fatalf("SET NX PX as the client user over TLS: %v, %v", ok, err)
	}
	del := `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`
	if n, err := rc.Eval(ctx, del, []string{secureKey}, "A").Int(); err != nil || n != 1 {
		t.Fatalf("compare-and-delete EVAL: %v, %v", n, err)
	}
}

// needDocker skips the docker backend's variant when no engine answers
// (and under -short), as the backend's own tests do.
func needDocker(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: no containers")
	}
	cli, err := cluster.DockerEngine(context.Background())
	if err != nil {
		t.Skipf("skipping the docker backend's tests: %v", err)
	}
	cli.Close()
}

func TestAuthAndTLSOnASingleNode(t *testing.T) {
	checkSingleNode(t, cluster.BackendLocal)
}

// The docker backend takes the same flags: the containers mount the run's
// certificates, and its image holds the TLS libraries redis-server loads.
func TestDockerAuthAndTLSOnASingleNode(t *testing.T) {
	needDocker(t)
	checkSingleNode(t, cluster.BackendDocker)
}

func TestDockerAuthAndTLSSentinelFailsOver(t *testing.T) {
	needDocker(t)
	checkSentinelFailover(t, startSecure(t, cluster.Spec{Topology: cluster.Sentinel, Backend: cluster.BackendDocker, Auth: true, TLS: true}))
}

func checkSingleNode(t *testing.T, backend string) {
	c, dir := startSecureIn(t, cluster.Spec{Topology: cluster.Single, Backend: backend, Auth: true, TLS: true})
	ctx := context.Background()
	tg := target(t, c, 0)
	if tg.Username != cluster.ClientUser || tg.Password == "" || !tg.TLS || tg.CAFile == "" {
		t.Fatalf("client access %+v: want the client user, a password, TLS and a CA file", tg)
	}
	if _, err := os.Stat(tg.CAFile); err != nil || !strings.HasPrefix(tg.CAFile, dir) {
		t.Fatalf("CA file %s: %v; want it in the run directory %s", tg.CAFile, err, dir)
	}
	rc := newClient(t, tg)
	lockRoundTrip(t, rc)
	if log, err := c.Do(ctx, c.Nodes[0], "ACL", "LOG"); err != nil || len(log.([]any)) != 0 {
		t.Errorf("ACL LOG after a lock client's round trip: %v, %v; want no denials", log, err)
	}

	// The client user may not leave the lock's keys nor run what an
	// operator keeps: each refusal is a definite NOPERM.
	for _, cmd := range [][]any{{"SET", "other", "x"}, {"FLUSHALL"}, {"CONFIG", "GET", "maxmemory"}, {"KEYS", "*"}, {"REPLICAOF", "NO", "ONE"}} {
		err := rc.Do(ctx, cmd...).Err()
		if err == nil || !strings.HasPrefix(err.Error(), "NOPERM") || !locks.Definite(err) {
			t.Errorf("%v as the client user: %v; want a definite NOPERM", cmd, err)
		}
	}
	// The harness's own path (the default user, the admin password) can.
	for _, cmd := range [][]any{{"CONFIG", "GET", "maxmemory"}, {"FLUSHALL"}, {"INFO", "server"}} {
		if _, err := c.Do(ctx, c.Nodes[0], cmd...); err != nil {
			t.Errorf("%v on the harness's path: %v", cmd, err)
		}
	}
	if err := c.Ping(c.Nodes[0], time.Second); err != nil {
		t.Errorf("harness PING: %v", err)
	}
	if v := c.ServerVersions(ctx)["n1"]; !strings.HasPrefix(v, "7.") {
		t.Errorf("server version %q", v)
	}
	// A restarted node comes back as secured as it was.
	if err := c.Nodes[0].Kill(); err != nil {
		t.Fatal(err)
	}
	if err := c.Nodes[0].Restart(ctx); err != nil {
		t.Fatal(err)
	}
	lockRoundTrip(t, newClient(t, tg))

	// A wrong or missing password fails at once, definitely, and says why.
	for _, tc := range []struct {
		name, user, pass, want string
	}{
		{"wrong password", cluster.ClientUser, "wrong", "WRONGPASS"},
		{"unknown user", "nobody", tg.Password, "WRONGPASS"},
		{"no password", "", "", "NOAUTH"},
	} {
		bad := tg
		bad.Username, bad.Password = tc.user, tc.pass
		err := newClient(t, bad).SetNX(ctx, secureKey, "B", time.Second).Err()
		t.Logf("%s: %v", tc.name, err)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !locks.Definite(err) {
			t.Errorf("%s: %v; want a definite %s", tc.name, err, tc.want)
		}
	}
	if n, err := c.Do(ctx, c.Nodes[0], "EXISTS", secureKey); err != nil || n != int64(0) {
		t.Errorf("after the refused clients, EXISTS %s = %v, %v; want 0", secureKey, n, err)
	}

	// Without TLS, or trusting another run's CA, nothing gets through.
	plain := tg
	plain.TLS, plain.CAFile = false, ""
	if err := newClient(t, plain).Ping(ctx).Err(); err == nil {
		t.Error("a client without TLS talked to the TLS port")
	}
	if err := cluster.Ping(c.Nodes[0].Addr(), time.Second); err == nil {
		t.Error("a plain PING got an answer from the TLS port")
	}
	other := startSecure(t, cluster.Spec{Topology: cluster.Single, TLS: true})
	foreign := tg
	foreign.CAFile = target(t, other, 0).CAFile
	if err := newClient(t, foreign).Ping(ctx).Err(); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("a client trusting another CA: %v; want a certificate error", err)
	}
}

// The same with Auth or TLS alone, and a plain run still plain.
func TestAuthOrTLSAlone(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name      string
		auth, tls bool
	}{{"auth", true, false}, {"tls", false, true}, {"plain", false, false}} {
		t.Run(tc.name, func(t *testing.T) {
			c, dir := startSecureIn(t, cluster.Spec{Topology: cluster.Single, Auth: tc.auth, TLS: tc.tls})
			tg := target(t, c, 0)
			if (tg.Password != "") != tc.auth || tg.TLS != tc.tls || (tg.CAFile != "") != tc.tls {
				t.Fatalf("client access %+v", tg)
			}
			lockRoundTrip(t, newClient(t, tg))
			_, err := os.Stat(filepath.Join(dir, "tls"))
			if tc.tls == os.IsNotExist(err) {
				t.Errorf("tls directory: %v", err)
			}
			plainPing := cluster.Ping(c.Nodes[0].Addr(), time.Second)
			if (plainPing == nil) != (!tc.auth && !tc.tls) {
				t.Errorf("plain PING: %v", plainPing)
			}
			if tc.auth {
				bad := tg
				bad.Password = "wrong"
				if err := newClient(t, bad).Ping(ctx).Err(); err == nil || !strings.Contains(err.Error(), "WRONGPASS") || !locks.Definite(err) {
					t.Errorf("wrong password: %v", err)
				}
			}
		})
	}
}

// Any --key works: the ACL grants exactly its keys (white space, which a
// configuration line cannot hold in a rule, as any one character).
func TestAuthGrantsAnyKey(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server not installed; run `make setup`")
	}
	ctx := context.Background()
	key := "lock:it's \"mine\" *\tnow"
	c, err := cluster.Start(ctx, cluster.Spec{Topology: cluster.Single, Backend: cluster.BackendLocal, Persistence: cluster.PersistNone,
		Dir: t.TempDir(), Auth: true, LockKeys: locks.KeyPatterns(key), Link: func(_, upstream string) (string, error) { return upstream, nil }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	rc := newClient(t, target(t, c, 0))
	for _, k := range []string{key, locks.FenceKey(key), "rueidislock:0:" + key} {
		if err := rc.Set(ctx, k, "A", time.Second).Err(); err != nil {
			t.Errorf("SET %q: %v", k, err)
		}
	}
	for _, k := range []string{"lock:it's \"mine\" x\tnow", "lock:other", "rueidislock:0:lock:other"} {
		if err := rc.Set(ctx, k, "A", time.Second).Err(); err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
			t.Errorf("SET %q: %v; want NOPERM", k, err)
		}
	}
}

// Replication and monitoring work under TLS and Auth: the topology
// settles, fails over when asked, and the lock client follows the
// sentinels (as the ACL user, on them too) to the new primary.
func TestAuthAndTLSSentinelFailsOver(t *testing.T) {
	if _, err := exec.LookPath("redis-sentinel"); err != nil {
		t.Skip("redis-sentinel not installed; run `make setup`")
	}
	checkSentinelFailover(t, startSecure(t, cluster.Spec{Topology: cluster.Sentinel, Auth: true, TLS: true}))
}

func checkSentinelFailover(t *testing.T, c *cluster.Cluster) {
	t.Helper()
	ctx := context.Background()
	tg := target(t, c, 0)
	if tg.Master == "" || len(tg.Sentinels) != 3 || tg.Username == "" || !tg.TLS {
		t.Fatalf("client access %+v", tg)
	}
	lockRoundTrip(t, newClient(t, tg))
	p, err := c.Primary(ctx, "")
	if err != nil || p.Name() != "n1" {
		t.Fatalf("primary %v, %v; want n1", p, err)
	}
	// The sentinels refuse the client user anything but finding the
	// primary.
	sc := redis.NewSentinelClient(&redis.Options{Addr: tg.Sentinels[0], Username: tg.Username, Password: tg.Password,
		Dialer: newClient(t, access.Access{Nodes: []string{tg.Sentinels[0]}, TLS: true, CAFile: tg.CAFile}).Options().Dialer})
	defer sc.Close()
	if _, err := sc.GetMasterAddrByName(ctx, "lockharness").Result(); err != nil {
		t.Errorf("client user asks a sentinel for the primary: %v", err)
	}
	if err := sc.Failover(ctx, "lockharness").Err(); err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
		t.Errorf("client user asks a sentinel to fail over: %v; want NOPERM", err)
	}
	if err := c.Failover(ctx, "", ""); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		if p, err = c.Primary(ctx, ""); err == nil && p.Name() != "n1" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no failover within 20s: %v %v", p, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := c.Settle(ctx, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	t.Logf("promoted %s", p.Name())
	// A restarted sentinel reads back the configuration it rewrote (its
	// TLS, passwords and client user included) and names the new primary.
	s2 := c.Sentinels[1]
	if err := s2.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := s2.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	want, _ := c.Do(ctx, c.Sentinels[0], "SENTINEL", "get-master-addr-by-name", "lockharness")
	if got, err := c.Do(ctx, s2, "SENTINEL", "get-master-addr-by-name", "lockharness"); err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("restarted %s names %v, %v; want %v", s2.Name(), got, err, want)
	}
	// A fresh client finds the new primary and writes there.
	lockRoundTrip(t, newClient(t, tg))
	// A replica follows the new primary, over TLS with the admin password
	// (the old primary rejoins only on the sentinels' next look, up to 10 s).
	deadline = time.Now().Add(20 * time.Second)
	for {
		v, err := c.Do(ctx, p, "INFO", "replication")
		if s, _ := v.(string); err == nil && strings.Count(s, "state=online") >= 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the new primary %s has no replica online: %v %v", p.Name(), v, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestAuthAndTLSRedlockEveryNodeReachable(t *testing.T) {
	c := startSecure(t, cluster.Spec{Topology: cluster.Redlock, Nodes: 3, Auth: true, TLS: true})
	tg := target(t, c, 1)
	clients := locks.NewClients(tg, 2*time.Second)
	if len(clients) != 3 {
		t.Fatalf("%d clients, want 3", len(clients))
	}
	for i, rc := range clients {
		t.Cleanup(func() { rc.Close() })
		lockRoundTrip(t, rc)
		bad := tg
		bad.Nodes, bad.Password = []string{tg.Nodes[i]}, "wrong"
		if err := newClient(t, bad).Ping(context.Background()).Err(); err == nil || !strings.Contains(err.Error(), "WRONGPASS") {
			t.Errorf("node %d with a wrong password: %v", i+1, err)
		}
	}
}
