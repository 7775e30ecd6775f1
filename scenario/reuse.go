package scenario

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/lockharness/lockharness/cluster"
	"github.com/lockharness/lockharness/faults"
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
	idle []*keptTopology
	// closing are the topologies a reset refused, stopping in the
	// background so that the run waiting for a fresh one need not wait
	// for them too; Close waits for them.
	closing sync.WaitGroup
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
func NewTopologies() *Topologies { return &Topologies{} }

// take returns a reset topology that starts as planned does, and what
// the reset did; nil when none is kept or none could be reset.
func (t *Topologies) take(ctx context.Context, planned *cluster.Cluster, logf func(string, ...any)) (*keptTopology, string) {
	if t == nil {
		return nil, ""
	}
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
		k.net.HealAll()
		did, err := k.cl.Reset(ctx, 10*time.Second)
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

// Close stops every kept topology.
func (t *Topologies) Close() {
	if t == nil {
		return
	}
	t.mu.Lock()
	idle := t.idle
	t.idle = nil
	t.mu.Unlock()
	var wg sync.WaitGroup
	for _, k := range idle {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k.close()
		}()
	}
	wg.Wait()
	t.closing.Wait()
}

func (k *keptTopology) close() {
	k.cl.Close()
	k.net.Close()
}
