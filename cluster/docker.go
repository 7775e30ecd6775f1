package cluster

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/lockharness/lockharness/internal/clockshim"
	"github.com/lockharness/lockharness/internal/proc"
	"github.com/moby/moby/api/types/container"
	docker "github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"
)

// DefaultImage is the docker backend's node image unless --image says
// otherwise; `make docker-image` builds it from the host's redis-server.
const DefaultImage = "lockharness/redis:local"

// Labels on every container the harness starts. LabelOwner holds the pid of
// the harness that started it, so a later harness can remove the containers
// of one that was killed before it could.
// LabelPidNS names the pid namespace that pid lives in: two harnesses in
// different containers may share one engine and one pid number.
// LabelCluster tells the clusters of one harness apart.
const (
	LabelOwner   = "lockharness.pid"
	LabelPidNS   = "lockharness.pidns"
	LabelCluster = "lockharness.cluster"
	LabelNode    = "lockharness.node"
	LabelDir     = "lockharness.dir"
)

// shimInContainer is where the clock shim is mounted inside a container.
const shimInContainer = "/lockharness/libclockshim.so"

// dockerOpTimeout bounds each call to the engine; cleanup calls get their
// own context, since the run's may already be cancelled by Ctrl-C.
const dockerOpTimeout = 30 * time.Second

var containerSeq, clusterSeq atomic.Int64

// pidNS is this process's pid namespace, as /proc/self/ns/pid names it.
func pidNS() string {
	ns, _ := os.Readlink("/proc/self/ns/pid")
	return ns
}

// dockerBackend starts nodes as containers of one image, with host
// networking: every node listens on 127.0.0.1 as a local one does, so the
// same proxies sit in front of it and the same faults reach it.
type dockerBackend struct {
	cli   *testcontainers.DockerClient
	image string
	// cluster labels every container of this backend, which is how they
	// are all found again for removal, even one whose creation was cut
	// short before its id was known.
	cluster    string
	unregister func()
}

// DockerEngine returns a client of the Docker engine the harness would use,
// or an error saying that none answers.
func DockerEngine(ctx context.Context) (*testcontainers.DockerClient, error) {
	// Ryuk, testcontainers' reaper, runs as a container whose image cannot
	// be pulled here; the harness removes its containers itself.
	if os.Getenv("TESTCONTAINERS_RYUK_DISABLED") == "" {
		os.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
	}
	tclog.SetDefault(tclog.NewNoopLogger())
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err == nil {
		_, err = cli.Ping(ctx, docker.PingOptions{})
	}
	if err != nil {
		// testcontainers appends what each of its host strategies said; the
		// first line is the one about the engine it was told to use.
		first, _, _ := strings.Cut(err.Error(), "\n")
		return nil, fmt.Errorf("docker backend: no Docker engine answers: %s", first)
	}
	return cli, nil
}

func newDockerBackend(ctx context.Context, image string) (*dockerBackend, error) {
	if image == "" {
		image = DefaultImage
	}
	cli, err := DockerEngine(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := cli.ImageInspect(ctx, image); err != nil {
		hint := "`docker pull " + image + "` where a registry is reachable"
		if image == DefaultImage {
			hint = "build it with `make docker-image`"
		}
		if !strings.Contains(strings.ToLower(err.Error()), "no such image") {
			hint += "; the engine said: " + err.Error()
		}
		cli.Close()
		return nil, fmt.Errorf("docker backend: image %q is not in the local Docker engine (%s)", image, hint)
	}
	RemoveOrphanContainers(ctx, cli)
	b := &dockerBackend{cli: cli, image: image, cluster: fmt.Sprintf("%d-%d", os.Getpid(), clusterSeq.Add(1))}
	b.unregister = proc.AtKill(b.removeAll)
	return b, nil
}

func (b *dockerBackend) start(ctx context.Context, cfg NodeConfig) (Node, error) {
	conf, err := newServerConf(cfg)
	if err != nil {
		return nil, err
	}
	n := &DockerNode{serverConf: conf, cli: b.cli, labels: map[string]string{
		LabelOwner: strconv.Itoa(os.Getpid()), LabelPidNS: pidNS(), LabelCluster: b.cluster, LabelNode: conf.name, LabelDir: conf.dir}}
	if err := n.create(ctx, b.image); err != nil {
		n.remove()
		return nil, err
	}
	if err := n.ready(ctx); err != nil {
		n.Stop()
		return nil, err
	}
	return n, nil
}

// removeAll removes every container of the backend, found by its label,
// at once and in parallel: the end of a cluster, and the path for a second
// Ctrl-C and for error exits.
func (b *dockerBackend) removeAll() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	list, err := b.cli.ContainerList(ctx, docker.ContainerListOptions{All: true,
		Filters: make(docker.Filters).Add("label", LabelCluster+"="+b.cluster)})
	if err != nil {
		return
	}
	var wg sync.WaitGroup
	for _, c := range list.Items {
		wg.Go(func() { forceRemove(ctx, b.cli, c.ID) })
	}
	wg.Wait()
}

// forceRemove removes a container whatever its state; a paused one is
// thawed first so that the kill reaches it.
func forceRemove(ctx context.Context, cli *testcontainers.DockerClient, id string) error {
	cli.ContainerUnpause(ctx, id, docker.ContainerUnpauseOptions{})
	_, err := cli.ContainerRemove(ctx, id, docker.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
	if err != nil && !strings.Contains(strings.ToLower(err.Error()), "no such container") {
		return err
	}
	return nil
}

func (b *dockerBackend) close() error {
	b.removeAll()
	b.unregister()
	return b.cli.Close()
}

// RemoveOrphanContainers removes the containers of harnesses that are no
// longer running (killed with SIGKILL, say, before they could clean up) and
// returns how many it removed. Only containers started from this pid
// namespace are judged: a pid means nothing in another one.
func RemoveOrphanContainers(ctx context.Context, cli *testcontainers.DockerClient) int {
	list, err := cli.ContainerList(ctx, docker.ContainerListOptions{All: true,
		Filters: make(docker.Filters).Add("label", LabelOwner).Add("label", LabelPidNS+"="+pidNS())})
	if err != nil {
		return 0
	}
	removed := 0
	for _, c := range list.Items {
		pid, err := strconv.Atoi(c.Labels[LabelOwner])
		if err != nil || syscall.Kill(pid, 0) != syscall.ESRCH {
			continue
		}
		if forceRemove(ctx, cli, c.ID) == nil {
			removed++
		}
	}
	return removed
}

// DockerNode is a redis-server (or sentinel) in a container with host
// networking. Its directory is bind-mounted at the same path, so its log,
// data and clock offset file are where a local node keeps them.
type DockerNode struct {
	*serverConf
	cli    *testcontainers.DockerClient
	labels map[string]string

	mu sync.Mutex
	id string
}

func (n *DockerNode) create(ctx context.Context, image string) error {
	args := n.args()
	if n.sentinel {
		args = []string{n.confPath(), "--sentinel"}
	}
	binds := []string{n.dir + ":" + n.dir}
	if n.sec != nil && n.sec.tls {
		// The run's certificates, at the path the arguments name.
		binds = append(binds, n.sec.dir+":"+n.sec.dir+":ro")
	}
	env := map[string]string{}
	if n.clockFile != "" {
		binds = append(binds, n.clockLib+":"+shimInContainer+":ro")
		for _, kv := range clockshim.Env(shimInContainer, n.clockFile) {
			k, v, _ := strings.Cut(kv, "=")
			env[k] = v
		}
	}
	n.clearData()
	name := fmt.Sprintf("lockharness-%d-%d-%s", os.Getpid(), containerSeq.Add(1), n.name)
	// An interrupt does not cut the start short: the daemon finishes a
	// create its client gave up on, after the cluster's removal by label
	// looked, and that container was left behind. The start ends, and an
	// interrupted one is an error the caller removes the container on.
	runCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), containerStartWithin)
	defer cancel()
	ctr, err := testcontainers.Run(runCtx, image,
		testcontainers.WithLogger(tclog.NewNoopLogger()),
		testcontainers.WithName(name),
		// redis-server itself, not the image's entrypoint: official images
		// start through a script that drops to a user who cannot write the
		// bind-mounted directory.
		testcontainers.WithEntrypoint("redis-server"),
		testcontainers.WithCmd(args...),
		testcontainers.WithEnv(env),
		testcontainers.WithLabels(n.labels),
		// The harness's own user: files in the run directory stay its own,
		// and it may read the server's /proc/PID/maps for the shim check.
		testcontainers.WithConfigModifier(func(c *container.Config) {
			c.User = fmt.Sprintf("%d:%d", os.Getuid(), os.Getgid())
		}),
		testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
			hc.NetworkMode = "host"
			hc.Binds = binds
		}),
	)
	if ctr != nil {
		n.mu.Lock()
		n.id = ctr.GetContainerID()
		n.mu.Unlock()
	}
	if err != nil {
		return fmt.Errorf("node %s: start container of %s: %w", n.name, image, err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("node %s: start container of %s: %w", n.name, image, err)
	}
	return nil
}

// containerStartWithin bounds a container's create and start, which an
// interrupt does not cut short.
const containerStartWithin = 2 * time.Minute

func (n *DockerNode) containerID() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.id
}

// ContainerID is the node's container.
func (n *DockerNode) ContainerID() string { return n.containerID() }

func (n *DockerNode) inspect() (*container.State, error) {
	ctx, cancel := context.WithTimeout(context.Background(), dockerOpTimeout)
	defer cancel()
	r, err := n.cli.ContainerInspect(ctx, n.containerID(), docker.ContainerInspectOptions{})
	if err != nil {
		return nil, err
	}
	if r.Container.State == nil {
		return nil, fmt.Errorf("node %s: container has no state", n.name)
	}
	return r.Container.State, nil
}

// ready waits for the server's PONG and, under the clock shim, checks that
// the shim is loaded in the container's process.
func (n *DockerNode) ready(ctx context.Context) error {
	gone := func() bool {
		st, err := n.inspect()
		return err != nil || (!st.Running && !st.Restarting)
	}
	if err := n.waitPong(ctx, gone, "its container"); err != nil {
		return err
	}
	if n.clockFile != "" {
		st, err := n.inspect()
		if err != nil {
			return fmt.Errorf("node %s: %w", n.name, err)
		}
		if err := n.checkShimLoaded(st.Pid, "redis-server in its container", shimInContainer); err != nil {
			return err
		}
	}
	return nil
}

// Running reports whether the container runs (paused counts as running).
func (n *DockerNode) Running() bool {
	st, err := n.inspect()
	return err == nil && st.Running
}

// Kill sends SIGKILL to the container's server and waits until the engine
// says it stopped: a crash, with no chance to write anything more to disk.
// The container stays, for Restart.
func (n *DockerNode) Kill() error {
	ctx, cancel := context.WithTimeout(context.Background(), dockerOpTimeout)
	defer cancel()
	id := n.containerID()
	// The wait is posted first, so that the exit cannot slip between the
	// kill and the wait; the engine then reports it as soon as it happens,
	// sooner than polling the container's state would see it.
	exited := n.cli.ContainerWait(ctx, id, docker.ContainerWaitOptions{Condition: container.WaitConditionNotRunning})
	if _, err := n.cli.ContainerKill(ctx, id, docker.ContainerKillOptions{Signal: "KILL"}); err != nil && n.Running() {
		return fmt.Errorf("node %s: kill container: %w", n.name, err)
	}
	select {
	case <-exited.Result:
	case err := <-exited.Error:
		if n.Running() {
			return fmt.Errorf("node %s: waiting for the killed container: %w", n.name, err)
		}
	case <-time.After(10 * time.Second):
		return fmt.Errorf("node %s: container still running 10s after SIGKILL", n.name)
	}
	return nil
}

// Restart starts the killed container again: same port, same directory,
// same clock file. With persistence none it comes back empty.
func (n *DockerNode) Restart(ctx context.Context) error {
	if n.Running() {
		return fmt.Errorf("node %s: restart while running", n.name)
	}
	n.clearData()
	if _, err := n.cli.ContainerStart(ctx, n.containerID(), docker.ContainerStartOptions{}); err != nil {
		return fmt.Errorf("node %s: start container: %w", n.name, err)
	}
	return n.ready(ctx)
}

// Paused reports whether the container is paused.
func (n *DockerNode) Paused() bool {
	st, err := n.inspect()
	return err == nil && st.Paused
}

// freezeTries is how many times a pause is asked of runc before its
// "unable to freeze" is taken for an answer.
const freezeTries = 5

// Pause freezes every process of the container (the cgroup freezer behind
// `docker pause`), as a long GC or VM stall would.
func (n *DockerNode) Pause() error { return n.setPaused(true) }

// Resume thaws a paused container. Like SIGCONT, it is a no-op on one that
// is not paused (a pause and a kill may overlap, and the restart thaws).
func (n *DockerNode) Resume() error { return n.setPaused(false) }

// setPaused pauses or unpauses the container. The engine refuses to pause
// a paused container or unpause a running one; that refusal is no error
// when the container ends up as asked.
func (n *DockerNode) setPaused(paused bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), dockerOpTimeout)
	defer cancel()
	op, err := "pause", error(nil)
	if paused {
		// runc freezes a cgroup by chance: on a busy machine the freezer
		// can miss a process that is forking or exiting, and runc gives
		// up ("unable to freeze") with the container left running
		// (opencontainers/runc#2791). Another try almost always takes.
		for try := 0; ; try++ {
			_, err = n.cli.ContainerPause(ctx, n.containerID(), docker.ContainerPauseOptions{})
			if err == nil || try == freezeTries-1 || !strings.Contains(err.Error(), "unable to freeze") {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	} else {
		op = "unpause"
		_, err = n.cli.ContainerUnpause(ctx, n.containerID(), docker.ContainerUnpauseOptions{})
	}
	if err != nil {
		if st, ierr := n.inspect(); ierr == nil && st.Running && st.Paused == paused {
			return nil
		}
		return fmt.Errorf("node %s: %s container: %w", n.name, op, err)
	}
	return nil
}

// Stop removes the container, paused or not. Nothing restarts a stopped
// node: Stop is for the end of a run.
func (n *DockerNode) Stop() error { return n.remove() }

func (n *DockerNode) remove() error {
	id := n.containerID()
	if id == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), dockerOpTimeout)
	defer cancel()
	if err := forceRemove(ctx, n.cli, id); err != nil {
		return fmt.Errorf("node %s: remove container: %w", n.name, err)
	}
	n.mu.Lock()
	n.id = ""
	n.mu.Unlock()
	return nil
}

var _ Node = (*DockerNode)(nil)
