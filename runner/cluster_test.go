package runner

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/cluster"
	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/internal/proc"
	"github.com/lockharness/lockharness/scenario"
)

// Redis Cluster both ways: without faults the lock holds, with and without
// several keys over the shards; a lock granted on a primary cut off from its
// shard is granted again by the replica that takes its slots, and the
// takeover is in the history as an observed event, not a fault window.
func TestClusterClean(t *testing.T) { runEntry(t, "cluster-clean", 1) }

func TestClusterKeysOverShards(t *testing.T) {
	s := entrySpec(cluster.RedisCluster, "fenced", "none", 2*sec, 100*time.Millisecond, 6*sec)
	s.Keys, s.Seed = 6, 1
	r := run(t, s)
	if r.Valid != checker.Valid {
		t.Fatalf("6 keys over 3 shards, no faults: %v %v %v", r.Valid, r.Anomalies, r.Checker.Notes)
	}
	if r.Checker.Counter.Acknowledged == 0 || r.Checker.Counter.Final != int64(r.Checker.Counter.Acknowledged) {
		t.Errorf("counter: %+v, want every acknowledged write in the counters' sum", r.Checker.Counter)
	}
}

func TestClusterFailoverDoubleGrant(t *testing.T) {
	needRedis(t)
	t.Cleanup(proc.KillAll)
	e, err := scenario.Lookup("cluster-failover-double-grant")
	if err != nil {
		t.Fatal(err)
	}
	e.Spec.Seed = 1
	out, err := RunSpec(context.Background(), e.Spec, Options{Store: t.TempDir(), WorkerBin: workerBin})
	if err != nil {
		t.Fatal(err)
	}
	if ok, why := e.Expect.Met(out.Results); !ok {
		t.Errorf("expectation %q not met: %s; anomalies %v", e.Expect, why, out.Results.Anomalies)
	}
	events, err := history.ReadFile(filepath.Join(out.Dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var fault, takeover string
	for _, ev := range events {
		switch {
		case ev.F == "partition-primary" && ev.Phase == history.Start:
			fault = ev.Target
		case ev.F == "slot-owner":
			takeover = ev.Target + ": " + ev.Detail
		}
	}
	if fault != "n2 (lock:orders, slot 9244 of 5461-10921)" {
		t.Errorf("the fault's target %q does not name the lock's shard", fault)
	}
	if !strings.HasPrefix(takeover, "n5: n5 took slots 5461-10921 from n2") {
		t.Errorf("takeover event %q, want n5 taking n2's slots", takeover)
	}
	if out.Results.Faults["slot-owner"] != 0 {
		t.Errorf("slot-owner counted as a fault window: %v", out.Results.Faults)
	}
}
