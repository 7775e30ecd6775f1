package locks

import (
	"context"
	"errors"
	"fmt"
	"github.com/lockharness/lockharness/access"
	"io"
	"net"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockharness/lockharness/cluster"
)

func newLocker(t *testing.T, name string) (Locker, *[]string, *[]Op) {
	t.Helper()
	r, err := Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	service := startService(t, r)
	client := NewClient(service, time.Second)
	t.Cleanup(func() { client.Close() })
	var mu sync.Mutex
	points, ops := &[]string{}, &[]Op{}
	l := r.New(Config{Access: service, Client: client, Nodes: []*redis.Client{client}, OpTimeout: time.Second,
		Pause:   func(p string) { *points = append(*points, p) },
		Observe: func(op Op) { mu.Lock(); *ops = append(*ops, op); mu.Unlock() }})
	t.Cleanup(l.Close)
	return l, points, ops
}

// startService starts what the recipe locks: one redis-server, or for a
// recipe of etcd's an etcd topology, its clients going straight to the
// members.
func startService(t *testing.T, r Recipe) access.Access {
	t.Helper()
	if slices.Contains(r.Needs, access.Etcd) {
		if _, err := exec.LookPath("etcd"); err != nil {
			t.Skip("etcd not installed; run `make setup`")
		}
		direct := func(_, upstream string) (string, error) { return upstream, nil }
		c, err := cluster.Start(context.Background(), cluster.Spec{Topology: cluster.Etcd, Backend: cluster.BackendLocal, Dir: t.TempDir(), Link: direct})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		a, err := c.ConnectClient(0, true)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server not installed; run `make setup`")
	}
	n, err := cluster.StartLocal(context.Background(), "n1", t.TempDir(), cluster.PersistNone)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Stop() })
	return access.Access{Nodes: []string{n.Addr()}}
}

func TestEveryRecipeExcludesAndReleases(t *testing.T) {
	ctx := context.Background()
	for _, name := range Names() {
		if name == "wait" || name == "redsync" {
			continue // wait needs a replica (TestWaitNeedsAReplica); redsync waits for the lock (libraries_test.go)
		}
		t.Run(name, func(t *testing.T) {
			l, _, _ := newLocker(t, name)
			a, err := acquireTrying(t, l, "k", "A", 2*time.Second)
			if err != nil {
				t.Fatalf("first acquire: %v", err)
			}
			// Redlock's validity is what is left of the TTL, and its refusal
			// is "no quorum", never "busy" (see ErrNoQuorum).
			busy, valid := ErrBusy, a.Valid == 2*time.Second
			if name == "redlock" {
				busy, valid = ErrNoQuorum, a.Valid > time.Second && a.Valid < 2*time.Second
			}
			if !valid || a.Token != "A" {
				t.Errorf("lease %+v", a)
			}
			if _, err := l.Acquire(ctx, "k", "B", 2*time.Second); !errors.Is(err, busy) {
				t.Fatalf("second acquire while held: %v, want %v", err, busy)
			}
			if err := l.Release(ctx, a); err != nil {
				t.Fatalf("release: %v", err)
			}
			if err := l.Release(ctx, a); !errors.Is(err, ErrNotHeld) {
				t.Fatalf("second release: %v, want ErrNotHeld", err)
			}
			if _, err := l.Acquire(ctx, "k", "C", 2*time.Second); err != nil {
				t.Fatalf("acquire after release: %v", err)
			}
		})
	}
}

// What tells the recipes apart: whose lock a release may delete.
func TestReleaseOfAnExpiredLease(t *testing.T) {
	ctx := context.Background()
	for name, deletesOthers := range map[string]bool{"del": true, "naive": true, "cad": false, "fenced": false} {
		t.Run(name, func(t *testing.T) {
			l, _, _ := newLocker(t, name)
			a, _ := l.Acquire(ctx, "k", "A", 150*time.Millisecond)
			time.Sleep(250 * time.Millisecond)
			if _, err := l.Acquire(ctx, "k", "B", 5*time.Second); err != nil {
				t.Fatalf("acquire after expiry: %v", err)
			}
			err := l.Release(ctx, a)
			if deletesOthers && err != nil {
				t.Fatalf("%s: A's release after expiry = %v; the recipe deletes whatever is there", name, err)
			}
			if !deletesOthers && !errors.Is(err, ErrNotHeld) {
				t.Fatalf("%s: A's release after expiry = %v, want ErrNotHeld", name, err)
			}
			_, err = l.Acquire(ctx, "k", "C", time.Second)
			if deletesOthers != (err == nil) {
				t.Fatalf("%s: acquire by C after A's release = %v", name, err)
			}
		})
	}
}

func TestFencesIncrease(t *testing.T) {
	ctx := context.Background()
	l, _, _ := newLocker(t, "fenced")
	var last int64
	for i := 0; i < 3; i++ {
		lease, err := l.Acquire(ctx, "k", "t", time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if lease.Fence <= last {
			t.Fatalf("fence %d after %d", lease.Fence, last)
		}
		last = lease.Fence
		l.Release(ctx, lease)
	}
}

func TestNaivePausesBetweenSetNXAndExpire(t *testing.T) {
	l, points, _ := newLocker(t, "naive")
	if _, err := l.Acquire(context.Background(), "k", "A", time.Second); err != nil {
		t.Fatal(err)
	}
	if len(*points) != 1 || (*points)[0] != PointAfterSetNX {
		t.Fatalf("pause points reached: %v", *points)
	}
}

func TestRenewKeepsTheLeaseAlive(t *testing.T) {
	ctx := context.Background()
	l, _, ops := newLocker(t, "renew")
	a, err := l.Acquire(ctx, "k", "A", 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(900 * time.Millisecond)
	if _, err := l.Acquire(ctx, "k", "B", time.Second); !errors.Is(err, ErrBusy) {
		t.Fatalf("lease lapsed despite the watchdog: %v", err)
	}
	if err := l.Release(ctx, a); err != nil {
		t.Fatal(err)
	}
	oks := 0
	for _, op := range *ops {
		if op.F == "extend" && op.Outcome == "ok" {
			oks++
		}
	}
	if oks < 2 {
		t.Fatalf("watchdog renewed %d times in 900ms with ttl 300ms: %+v", oks, *ops)
	}
}

func TestDefinite(t *testing.T) {
	if !Definite(ErrBusy) || !Definite(ErrNotHeld) {
		t.Error("busy and not-held are definite")
	}
	if Definite(context.DeadlineExceeded) || Definite(errors.New("i/o timeout")) {
		t.Error("timeouts are not definite")
	}
}

func TestWaitNeedsAReplica(t *testing.T) {
	ctx := context.Background()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server not installed; run `make setup`")
	}
	primary, err := cluster.StartLocalConfig(ctx, cluster.NodeConfig{Name: "n1", Dir: t.TempDir(),
		Args: []string{"--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "0"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { primary.Stop() })
	client := NewClient(access.Access{Nodes: []string{primary.Addr()}}, time.Second)
	t.Cleanup(func() { client.Close() })
	l := wait.New(Config{Client: client, OpTimeout: time.Second})

	lease, err := l.Acquire(ctx, "k", "A", time.Second)
	if !errors.Is(err, ErrUnreplicated) || lease.Token != "A" {
		t.Fatalf("without replicas: %+v, %v; want the lease and ErrUnreplicated", lease, err)
	}
	if err := l.Release(ctx, lease); err != nil {
		t.Fatalf("releasing the unreplicated grant: %v", err)
	}

	host, port, _ := strings.Cut(primary.Addr(), ":")
	replica, err := cluster.StartLocalConfig(ctx, cluster.NodeConfig{Name: "n2", Dir: t.TempDir(), Args: []string{"--replicaof", host, port}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { replica.Stop() })
	deadline := time.Now().Add(10 * time.Second)
	for {
		lease, err = l.Acquire(ctx, "k", "B", time.Second)
		if err == nil {
			break
		}
		l.Release(ctx, lease)
		if time.Now().After(deadline) {
			t.Fatalf("with a replica attached: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Redlock, ours and redsync's, needs a majority of independent nodes, and
// only a majority; a refusal says "no quorum", never "busy".
func TestQuorum(t *testing.T) {
	ctx := context.Background()
	for _, spec := range []string{"redlock", "redsync:tries=1"} {
		t.Run(spec, func(t *testing.T) {
			nodes, clients := startNodes(t, 3)
			l, _ := libLocker(t, spec, clients)
			nodes[0].Kill()
			lease, err := l.Acquire(ctx, "k", "A", 2*time.Second)
			for try := 2; try <= 3 && errors.Is(err, ErrNoQuorum) && strings.Contains(err.Error(), "timeout"); try++ {
				// A loaded machine can outlast redlock's per-node timeout
				// (a fiftieth of the TTL: 40 ms; a clean-clone CI of
				// 27b0f33 did); what the attempt left expires with the TTL.
				t.Logf("acquire, try %d: %v; trying again after the TTL", try-1, err)
				time.Sleep(2 * time.Second)
				lease, err = l.Acquire(ctx, "k", fmt.Sprint("A", try), 2*time.Second)
			}
			if err != nil {
				t.Fatalf("2 of 3 nodes up: %v", err)
			}
			if lease.Valid <= 0 || lease.Valid >= 2*time.Second {
				t.Errorf("validity %v, want below the TTL", lease.Valid)
			}
			if _, err := l.Acquire(ctx, "k", "B", 2*time.Second); !errors.Is(err, ErrNoQuorum) || strings.Contains(err.Error(), "busy") {
				t.Fatalf("second acquire: %v, want no quorum (and never \"busy\")", err)
			}
			if err := l.Release(ctx, lease); err != nil {
				t.Fatal(err)
			}
			// With two nodes refusing connections, ours says no quorum;
			// redsync reports the dial errors as an unknown outcome, which
			// is also a refusal and never "busy".
			nodes[1].Kill()
			_, err = l.Acquire(ctx, "k", "C", 2*time.Second)
			if err == nil || strings.Contains(err.Error(), "busy") || spec == "redlock" && !errors.Is(err, ErrNoQuorum) {
				t.Fatalf("1 of 3 nodes up: %v, want a refusal (for redlock: no quorum)", err)
			}
		})
	}
}

func TestRegister(t *testing.T) {
	saved := Recipes
	t.Cleanup(func() { Recipes = saved })
	ours := Recipe{Name: "ours", Needs: []access.Capability{access.Primary}, New: cad.New}
	if err := Register(ours); err != nil {
		t.Fatal(err)
	}
	if _, err := ParseLock("ours"); err != nil {
		t.Fatalf("a registered lock does not parse: %v", err)
	}
	primary := []access.Capability{access.Primary}
	for name, c := range map[string]struct {
		r    Recipe
		want string
	}{
		"taken":      {ours, "a lock of that name exists"},
		"a built-in": {Recipe{Name: "cad", Needs: primary, New: cad.New}, "a lock of that name exists"},
		"no name":    {Recipe{Needs: primary, New: cad.New}, "a name is one word"},
		"a colon":    {Recipe{Name: "a:b", Needs: primary, New: cad.New}, "a name is one word"},
		"no New":     {Recipe{Name: "nonew", Needs: primary}, "New is nil"},
		"no needs":   {Recipe{Name: "nowhere", New: cad.New}, "it names nothing it needs of a topology (Needs: primary, independent, majorities, replicas, sentinels, slots, etcd)"},
		"a topology's name": {Recipe{Name: "byname", Needs: []access.Capability{"single"}, New: cad.New},
			`"single" is nothing a lock client can need of a topology; it can need primary, independent`},
		"a fault's capability": {Recipe{Name: "faulty", Needs: []access.Capability{access.Primary, cluster.NodeControl}, New: cad.New},
			`"node-control" is nothing a lock client can need`},
		"an unknown preference": {Recipe{Name: "picky", Needs: primary, Prefers: []access.Capability{"fast"}, New: cad.New},
			`"fast" is nothing a lock client can need`},
	} {
		err := Register(c.r)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Register(%q): %v, want %q", name, c.r.Name, err, c.want)
		}
	}
}

// Every built-in recipe says what it needs in the words Register accepts,
// and some topology offers it all.
func TestEveryRecipeNeedsWhatATopologyOffers(t *testing.T) {
	for _, r := range Recipes {
		if len(r.Needs) == 0 {
			t.Errorf("%s needs nothing", r.Name)
		}
		for _, c := range append(slices.Clone(r.Needs), r.Prefers...) {
			if !slices.Contains(access.Capabilities, c) {
				t.Errorf("%s: %q is no capability a lock client can need", r.Name, c)
			}
		}
		if len(cluster.Offering(r.Needs, r.Prefers)) == 0 {
			t.Errorf("%s needs %v, which no topology offers", r.Name, r.Needs)
		}
	}
}

// A cluster client must not resend a command whose connection broke after
// it was sent; one that never left (a failed dial) may go elsewhere.
func TestSentOnceHidesWhatGoRedisRetries(t *testing.T) {
	dial := &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}
	read := &net.OpError{Op: "read", Net: "tcp", Err: errors.New("connection reset by peer")}
	for _, c := range []struct {
		err  error
		want bool
	}{{nil, false}, {redis.Nil, false}, {dial, false}, {io.EOF, true}, {read, true}, {context.DeadlineExceeded, true}} {
		if got := unknownOutcome(c.err); got != c.want {
			t.Errorf("unknownOutcome(%v) = %v, want %v", c.err, got, c.want)
		}
	}
	hidden := &sentError{io.EOF}
	var op *net.OpError
	if errors.Is(hidden, io.EOF) || errors.As(&sentError{read}, &op) {
		t.Error("a sentError shows go-redis the error it would retry")
	}
	if Definite(hidden) {
		t.Error("a broken connection after sending reads as definite")
	}
	for _, msg := range []string{"MOVED 9244 127.0.0.1:7001", "CLUSTERDOWN The cluster is down", "TRYAGAIN"} {
		if !refusal(msg) {
			t.Errorf("%q is no refusal", msg)
		}
	}
}

// TestClientReachesARestartedNodeAtOnce: a client whose dials a dead node
// refused many times in a row dials it again as soon as it is back. With a
// small pool go-redis stopped dialing after PoolSize failures and tried
// once a second, so a run's clients stayed off a restarted node, and the
// double grant it made, for up to a second.
func TestClientReachesARestartedNodeAtOnce(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server not installed; run `make setup`")
	}
	ctx := context.Background()
	n, err := cluster.StartLocal(ctx, "n1", t.TempDir(), cluster.PersistNone)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Stop() })
	client := NewClient(access.Access{Nodes: []string{n.Addr()}}, time.Second)
	t.Cleanup(func() { client.Close() })
	if err := client.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if err := n.Kill(); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		if err := client.Ping(ctx).Err(); err == nil {
			t.Fatalf("ping %d reached a killed node", i)
		}
	}
	if err := n.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if err := client.Ping(ctx).Err(); err != nil {
		t.Errorf("the first ping after the node came back: %v", err)
	}
}
