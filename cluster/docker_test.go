package cluster

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockharness/lockharness/internal/clockshim"
	"github.com/lockharness/lockharness/internal/proc"
	docker "github.com/moby/moby/client"
	"github.com/redis/go-redis/v9"
	"github.com/testcontainers/testcontainers-go"
)

// needDocker skips when no Docker engine answers, and only then: a missing
// image is a failure, since `make setup` builds it.
func needDocker(t *testing.T) *testcontainers.DockerClient {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: no containers")
	}
	cli, err := DockerEngine(context.Background())
	if err != nil {
		t.Skipf("skipping the docker backend's tests: %v", err)
	}
	return cli
}

// ownContainers lists the containers this test process started.
func ownContainers(t *testing.T, cli *testcontainers.DockerClient) []string {
	t.Helper()
	list, err := cli.ContainerList(context.Background(), docker.ContainerListOptions{All: true,
		Filters: make(docker.Filters).Add("label", LabelOwner+"="+strconv.Itoa(os.Getpid()))})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range list.Items {
		names = append(names, strings.Join(c.Names, ","))
	}
	return names
}

func startDocker(t *testing.T, s Spec) *Cluster {
	t.Helper()
	s.Backend = BackendDocker
	if s.Persistence == "" {
		s.Persistence = PersistNone
	}
	s.Dir = t.TempDir()
	c, err := Start(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestDockerNodeFaults(t *testing.T) {
	cli := needDocker(t)
	c := startDocker(t, Spec{Topology: "single"})
	n := c.Nodes[0]
	if _, ok := n.(*DockerNode); !ok {
		t.Fatalf("node is a %T, want *DockerNode", n)
	}
	ctx := context.Background()
	rc := redis.NewClient(&redis.Options{Addr: n.Addr(), MaxRetries: -1, ReadTimeout: 300 * time.Millisecond, DialTimeout: 300 * time.Millisecond})
	defer rc.Close()
	if err := rc.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}

	if err := n.Pause(); err != nil {
		t.Fatal(err)
	}
	if err := Ping(n.Addr(), 300*time.Millisecond); err == nil {
		t.Fatal("a paused container answered PING")
	}
	if !n.Running() {
		t.Fatal("a paused container should count as running")
	}
	if err := n.Resume(); err != nil {
		t.Fatal(err)
	}
	if err := Ping(n.Addr(), time.Second); err != nil {
		t.Fatalf("no PONG after resume: %v", err)
	}

	if err := n.Kill(); err != nil {
		t.Fatal(err)
	}
	if n.Running() {
		t.Fatal("running after Kill")
	}
	if err := Ping(n.Addr(), 300*time.Millisecond); err == nil {
		t.Fatal("a killed container answered PING")
	}
	if err := n.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	// The client's pooled connection died with the container, and a
	// loaded clean-clone CI timed the first GET out: a network error is
	// asked again, for up to 5 s; an answer is judged at once.
	v, err := rc.Get(ctx, "k").Result()
	for deadline := time.Now().Add(5 * time.Second); err != nil && err != redis.Nil && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
		v, err = rc.Get(ctx, "k").Result()
	}
	if err != redis.Nil {
		t.Fatalf("after a restart without persistence, GET k = %q, %v; want nil", v, err)
	}
	if got := ownContainers(t, cli); len(got) != 1 {
		t.Fatalf("containers %v, want the node's one", got)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if got := ownContainers(t, cli); len(got) != 0 {
		t.Fatalf("containers left after Close: %v", got)
	}
}

func TestDockerRestartKeepsTheAOF(t *testing.T) {
	needDocker(t)
	c := startDocker(t, Spec{Topology: "single", Persistence: PersistAOFAlways})
	n := c.Nodes[0]
	ctx := context.Background()
	rc := redis.NewClient(&redis.Options{Addr: n.Addr(), MaxRetries: -1})
	defer rc.Close()
	if err := rc.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := n.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := n.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if v, err := rc.Get(ctx, "k").Result(); err != nil || v != "v" {
		t.Fatalf("after a restart with aof-always, GET k = %q, %v; want v", v, err)
	}
}

func TestDockerClockShim(t *testing.T) {
	needDocker(t)
	if _, err := clockshim.Find(); err != nil {
		t.Fatal(err)
	}
	c := startDocker(t, Spec{Topology: "single", Clock: true})
	n := c.Nodes[0]
	ctx := context.Background()
	rc := redis.NewClient(&redis.Options{Addr: n.Addr(), MaxRetries: -1})
	defer rc.Close()
	before, err := rc.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	if err := rc.Set(ctx, "k", "v", 60*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	if err := n.SetClockOffset(120 * time.Second); err != nil {
		t.Fatal(err)
	}
	after, err := rc.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	if d := after.Sub(before); d < 118*time.Second || d > 122*time.Second {
		t.Fatalf("TIME moved by %v, want 120s ±2s", d)
	}
	if n, err := rc.Exists(ctx, "k").Result(); err != nil || n != 0 {
		t.Fatalf("a key with PX 60000 still exists 120 s later: %d, %v", n, err)
	}
}

func TestDockerSentinelSettles(t *testing.T) {
	needDocker(t)
	c := startDocker(t, Spec{Topology: "sentinel", Link: func(name, upstream string) (string, error) { return upstream, nil }})
	if len(c.Nodes) != 3 || len(c.Sentinels) != 3 {
		t.Fatalf("%d nodes and %d sentinels, want 3 and 3", len(c.Nodes), len(c.Sentinels))
	}
	ctx := context.Background()
	p, err := c.Primary(ctx, "")
	if err != nil || p.Name() != "n1" {
		t.Fatalf("primary %v, %v; want n1", p, err)
	}
	if err := c.Failover(ctx, "", ""); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		if p, err := c.Primary(ctx, ""); err == nil && p.Name() != "n1" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no failover within 20s")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestMissingImageSaysHowToBuildIt(t *testing.T) {
	needDocker(t)
	_, err := Start(context.Background(), Spec{Topology: "single", Backend: BackendDocker, Persistence: PersistNone,
		Dir: t.TempDir(), Image: "lockharness/no-such-image:none"})
	if err == nil || !strings.Contains(err.Error(), "no-such-image") || !strings.Contains(err.Error(), "not in the local Docker engine") {
		t.Fatalf("err = %v, want one naming the image and saying it is missing", err)
	}
}

func TestImageNeedsTheDockerBackend(t *testing.T) {
	err := Spec{Topology: "single", Backend: BackendLocal, Persistence: PersistNone, Image: "redis:7.2"}.Validate()
	if err == nil || !strings.Contains(err.Error(), "docker") {
		t.Fatalf("err = %v, want one saying --image needs the docker backend", err)
	}
}

// A harness killed with SIGKILL cannot remove its containers; the next one
// removes them, and leaves alone those of live harnesses and those started
// from another pid namespace, where the pid means something else.
func TestOrphanContainersAreRemoved(t *testing.T) {
	cli := needDocker(t)
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	run := func(owner int, ns string) string {
		ctr, err := testcontainers.Run(ctx, DefaultImage, testcontainers.WithEntrypoint("redis-server"),
			testcontainers.WithCmd("--port", "0"),
			testcontainers.WithLabels(map[string]string{LabelOwner: strconv.Itoa(owner), LabelPidNS: ns}))
		if ctr != nil {
			t.Cleanup(func() { ctr.Terminate(context.Background()) })
		}
		if err != nil {
			t.Fatal(err)
		}
		return ctr.GetContainerID()
	}
	orphan := run(dead.Process.Pid, pidNS())
	live := run(os.Getpid(), pidNS())
	elsewhere := run(dead.Process.Pid, "pid:[1]")
	if n := RemoveOrphanContainers(ctx, cli); n < 1 {
		t.Fatalf("removed %d containers, want at least the orphan", n)
	}
	if _, err := cli.ContainerInspect(ctx, orphan, docker.ContainerInspectOptions{}); err == nil {
		t.Fatal("the orphan's container is still there")
	}
	for what, id := range map[string]string{"a live harness's": live, "another pid namespace's": elsewhere} {
		if _, err := cli.ContainerInspect(ctx, id, docker.ContainerInspectOptions{}); err != nil {
			t.Errorf("%s container was removed: %v", what, err)
		}
	}
}

// A second Ctrl-C goes straight to proc.KillAll, which must remove the
// containers too: the kernel does not kill them with the harness. It finds
// them by label, so a container the backend never learnt the id of (its
// creation cut short) goes as well.
func TestKillAllRemovesContainers(t *testing.T) {
	cli := needDocker(t)
	c := startDocker(t, Spec{Topology: "redlock", Nodes: 3})
	b := c.backend.(*dockerBackend)
	stray, err := testcontainers.Run(context.Background(), DefaultImage, testcontainers.WithEntrypoint("redis-server"),
		testcontainers.WithCmd("--port", "0"),
		testcontainers.WithLabels(map[string]string{LabelOwner: strconv.Itoa(os.Getpid()), LabelCluster: b.cluster}))
	if stray != nil {
		t.Cleanup(func() { stray.Terminate(context.Background()) })
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Nodes[0].Pause(); err != nil {
		t.Fatal(err)
	}
	if got := ownContainers(t, cli); len(got) != 4 {
		t.Fatalf("containers %v, want 3 nodes and the stray one", got)
	}
	proc.KillAll()
	if got := ownContainers(t, cli); len(got) != 0 {
		t.Fatalf("containers left after KillAll: %v", got)
	}
}

// Faults overlap: a node may be paused, then killed and restarted, then
// resumed. As with SIGCONT, resuming a running node that is not paused is
// not an error; pausing twice is not either.
func TestDockerPauseKillRestartResume(t *testing.T) {
	needDocker(t)
	n := startDocker(t, Spec{Topology: "single"}).Nodes[0]
	for _, step := range []struct {
		name string
		do   func() error
	}{
		{"pause", n.Pause}, {"pause again", n.Pause}, {"kill", n.Kill},
		{"restart", func() error { return n.Restart(context.Background()) }}, {"resume", n.Resume},
	} {
		if err := step.do(); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
	}
	if err := Ping(n.Addr(), time.Second); err != nil {
		t.Fatalf("no PONG at the end: %v", err)
	}
	if err := n.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := n.Resume(); err == nil {
		t.Fatal("resuming a killed node should fail, as it does locally")
	}
}
