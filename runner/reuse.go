package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/lockharness/lockharness/cluster"
	"github.com/lockharness/lockharness/faults"
	"github.com/lockharness/lockharness/scenario"
)

// Topologies keeps the topologies runs have finished with, so that the
// next run planned to start the same one (cluster.SameStart) resets one
// instead of starting it: repro's seeds and a suite's rows of one shape
// then skip the start (a second or more; Sentinel's discovery alone takes
// two). A topology whose reset cannot be proven is closed and the run
// starts a fresh one; a run says in its log and its results which it got.
// Close stops whatever is kept. Safe for concurrent runs: each takes a
// topology of its own.
type Topologies struct {
	mu   sync.Mutex
	cond *sync.Cond
	idle []*keptTopology
	// spares are the starts planned to be used up (Plan), each with the
	// fresh topologies started ahead for its next runs.
	spares []*spareShape
	// closing are the topologies a reset refused, stopping in the
	// background so that the run waiting for a fresh one need not wait
	// for them too, and the spares starting; Close waits for them.
	closing sync.WaitGroup
	// ctx bounds the spares' starts; Close cancels it.
	ctx    context.Context
	cancel context.CancelFunc
	closed bool
}

// spareShape is one planned start whose runs leave their topology unfit for
// the next (a failover moves the primary for good), so that each run would
// otherwise start a fresh one itself.
type spareShape struct {
	planned *cluster.Cluster
	// runs is how many runs of it have yet to take a topology, taken how
	// many have; depth how many spares to keep ahead at most (as many as
	// run at once).
	runs, taken, depth int
	// dir holds the spares' nodes, one directory each.
	dir      string
	ready    []*keptTopology
	starting int
}

// keptTopology is a started topology between runs, with the network its
// links live in and the run that started it.
type keptTopology struct {
	cl  *cluster.Cluster
	net *faults.Network
	// dir is the run directory its nodes' data and logs are under.
	dir  string
	runs int
}

// NewTopologies makes an empty keep.
func NewTopologies() *Topologies {
	t := &Topologies{}
	t.cond = sync.NewCond(&t.mu)
	t.ctx, t.cancel = context.WithCancel(context.Background())
	return t
}

// Expect says that runs runs of p are coming, at most depth at once. When
// each would leave its topology unfit for the next (its nemesis moves
// roles: faults.Nemesis.MovesRoles), the keep starts fresh topologies for
// the later ones ahead, in the background, each under a directory of its
// own in store/.spares, so that a run finds one ready instead of starting
// it: a second or more of every such run. Spares no run took are stopped
// and their directories removed at Close. Runs with a database never
// reuse, and are not counted.
func (t *Topologies) Expect(p scenario.Plan, runs, depth int, store string) {
	if t == nil || runs <= 0 || !usesUp(p) {
		return
	}
	t.expect(p.Cluster, runs, depth, filepath.Join(store, ".spares"))
}

// expect plans spares of planned's start, under dir.
func (t *Topologies) expect(planned *cluster.Cluster, runs, depth int, dir string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if sh := t.shapeOf(planned); sh != nil {
		sh.runs += runs
		sh.depth = max(sh.depth, depth)
		return
	}
	t.spares = append(t.spares, &spareShape{planned: planned, runs: runs, depth: max(1, depth), dir: dir})
}

// shapeOf is planned's spareShape, nil if it has none; t.mu is held.
func (t *Topologies) shapeOf(planned *cluster.Cluster) *spareShape {
	for _, sh := range t.spares {
		if sh.planned.SameStart(planned) {
			return sh
		}
	}
	return nil
}

// spare counts a run of planned's start and, if it wants one, returns a
// spare, waiting for one being started; nil when none is planned, none is
// under way or ctx ends.
func (t *Topologies) spare(ctx context.Context, planned *cluster.Cluster, want bool) *keptTopology {
	t.mu.Lock()
	defer t.mu.Unlock()
	sh := t.shapeOf(planned)
	if sh == nil {
		return nil
	}
	sh.runs--
	first := sh.taken < sh.depth // among the runs that start at once
	sh.taken++
	if !want {
		return nil
	}
	// A later run that finds none ready waits for one under way rather
	// than starting another: that one has had a head start. The first
	// runs start their own, and the spares for the runs after them. An
	// ended run waits no more.
	stop := context.AfterFunc(ctx, func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		t.cond.Broadcast()
	})
	defer stop()
	for len(sh.ready) == 0 && sh.starting > 0 && !first && ctx.Err() == nil {
		t.cond.Wait()
	}
	var k *keptTopology
	if len(sh.ready) > 0 {
		k, sh.ready = sh.ready[0], sh.ready[1:]
	}
	return k
}

// replenish starts spares of planned's start for the runs still to come,
// but for the first ones, which start their own. A run calls it (take's
// started) once its own topology is up, so that the spares do not slow
// that start.
func (t *Topologies) replenish(planned *cluster.Cluster) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	sh := t.shapeOf(planned)
	if sh == nil {
		return
	}
	for want := min(sh.depth, sh.runs-max(0, sh.depth-sh.taken)); len(sh.ready)+sh.starting < want && !t.closed; {
		t.startSpare(sh)
	}
}

// startSpare starts one spare of sh's start in the background; t.mu is
// held.
func (t *Topologies) startSpare(sh *spareShape) {
	sh.starting++
	t.closing.Add(1)
	go func() {
		defer t.closing.Done()
		k, err := t.startFresh(sh)
		t.mu.Lock()
		defer t.mu.Unlock()
		sh.starting--
		if err == nil && !t.closed {
			sh.ready = append(sh.ready, k)
		} else if k != nil {
			k.close()
			os.RemoveAll(k.dir)
		}
		t.cond.Broadcast()
	}()
}

func (t *Topologies) startFresh(sh *spareShape) (*keptTopology, error) {
	if err := os.MkdirAll(sh.dir, 0o755); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(sh.dir, "topology-")
	if err != nil {
		return nil, err
	}
	k := &keptTopology{cl: sh.planned.Fresh(), net: faults.NewNetwork(), dir: dir}
	return k, k.cl.Start(t.ctx, filepath.Join(dir, "nodes"), k.net.Proxy)
}

// take returns a reset topology that starts as p's does, and what the
// reset did, or else a spare started ahead for it (Expect) and says so;
// nil when none is kept, none could be reset and no spare is ready or
// under way for it. started is to be called once the run's own topology
// is up: it starts the spares of its start for the runs still to come.
func (t *Topologies) take(ctx context.Context, p scenario.Plan, logf func(string, ...any)) (k *keptTopology, how string, started func()) {
	if t == nil {
		return nil, "", func() {}
	}
	planned := p.Cluster
	// Spares for the runs still to come start once this run's own
	// topology has: the run comes first.
	started = func() { t.replenish(planned) }
	k, how = t.reset(ctx, planned, logf)
	if !usesUp(p) {
		return k, how, started
	}
	// A run that moves roles counts as one of its start's, whichever
	// topology it gets.
	if s := t.spare(ctx, planned, k == nil); s != nil {
		s.runs = 1
		return s, fmt.Sprintf("fresh: a spare %s topology started ahead of this run, its nodes under %s", s.cl.Topology, s.dir), started
	}
	return k, how, started
}

// usesUp reports whether p's runs leave their topology unfit for the next
// and so are counted for spares (Expect).
func usesUp(p scenario.Plan) bool {
	return p.Nemesis.MovesRoles() && !p.Resource.Database
}

// reset returns a kept topology of planned's start, reset, and what the
// reset did; nil when none is kept or none could be reset.
func (t *Topologies) reset(ctx context.Context, planned *cluster.Cluster, logf func(string, ...any)) (*keptTopology, string) {
	for {
		t.mu.Lock()
		var k *keptTopology
		for i, c := range t.idle {
			if c.cl.SameStart(planned) {
				k = c
				t.idle = append(t.idle[:i], t.idle[i+1:]...)
				break
			}
		}
		t.mu.Unlock()
		if k == nil {
			return nil, ""
		}
		// A link still shedding a toxic would slow the next run: such a
		// topology is not reused.
		err := k.net.HealAll()
		var did string
		if err == nil {
			did, err = k.cl.Reset(ctx, 10*time.Second)
		}
		if err == nil {
			k.runs++
			return k, fmt.Sprintf("reused the %s topology started by %s (run %d on it); reset: every link healed, %s", k.cl.Topology, k.dir, k.runs, did)
		}
		logf("not reusing the %s topology started by %s: %v; starting a fresh one", k.cl.Topology, k.dir, err)
		t.closing.Add(1)
		go func() {
			defer t.closing.Done()
			k.close()
		}()
	}
}

// give keeps a topology for a later run.
func (t *Topologies) give(k *keptTopology) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.idle = append(t.idle, k)
}

// Trim stops every kept topology but one of each start the plans will
// take (a reset one serves each of a row of runs one at a time), and the
// spares no run took, and waits for them all to stop: what runs next has
// the machine to itself (a suite's runs alone).
func (t *Topologies) Trim(plans []scenario.Plan) {
	if t == nil {
		return
	}
	t.mu.Lock()
	var keep, stop []*keptTopology
	for _, k := range t.idle {
		wanted := slices.ContainsFunc(plans, func(p scenario.Plan) bool { return k.cl.SameStart(p.Cluster) })
		if wanted && !slices.ContainsFunc(keep, func(o *keptTopology) bool { return o.cl.SameStart(k.cl) }) {
			keep = append(keep, k)
		} else {
			stop = append(stop, k)
		}
	}
	t.idle = keep
	unused := t.untakenSpares()
	t.mu.Unlock()
	t.stop(stop, unused)
}

// stop stops kept topologies and spares no run took, waits for those the
// resets refused too, and removes the spares' directories: no run refers
// to them.
func (t *Topologies) stop(kept, unused []*keptTopology) {
	closeAll(append(kept, unused...))
	t.closing.Wait()
	for _, k := range unused {
		os.RemoveAll(k.dir)
	}
}

// untakenSpares hands over the spares started that no run took; t.mu is
// held.
func (t *Topologies) untakenSpares() []*keptTopology {
	var unused []*keptTopology
	for _, sh := range t.spares {
		unused = append(unused, sh.ready...)
		sh.ready = nil
	}
	return unused
}

// closeAll stops the topologies, all at once, and returns when they have.
func closeAll(ks []*keptTopology) {
	var wg sync.WaitGroup
	for _, k := range ks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k.close()
		}()
	}
	wg.Wait()
}

// Close stops every kept topology.
func (t *Topologies) Close() {
	if t == nil {
		return
	}
	t.mu.Lock()
	t.closed = true
	t.cancel()
	idle := t.idle
	t.idle = nil
	unused := t.untakenSpares()
	t.mu.Unlock()
	t.stop(idle, unused)
	t.mu.Lock()
	for _, sh := range t.spares {
		os.Remove(sh.dir) // if empty
	}
	t.mu.Unlock()
}

func (k *keptTopology) close() {
	k.cl.Close()
	k.net.Close()
}
