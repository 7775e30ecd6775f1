package reports

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/history"
)

// builder writes a history by hand, one event at a time.
type builder struct{ events []history.Event }

// at appends e at t seconds and returns its index.
func (b *builder) at(t float64, e history.Event) int {
	e.Index = len(b.events)
	e.Time = int64(t * 1e9)
	b.events = append(b.events, e)
	return e.Index
}

func sec(t float64) time.Duration { return time.Duration(t * 1e9) }

func acq(typ string, p history.Process, client int, token string) history.Event {
	return history.Event{Type: typ, Process: p, Client: client, F: history.Acquire, Key: "lock:orders", Token: token, TTLMs: 1000}
}

func op(typ, f string, p history.Process, client int, token string) history.Event {
	return history.Event{Type: typ, Process: p, Client: client, F: f, Key: "lock:orders", Token: token}
}

// recordedRuns are the run directories recorded in testdata/runs.
func recordedRuns(t *testing.T) []string {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join("..", "testdata", "runs", "*"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no recorded runs: %v", err)
	}
	return dirs
}

func fault(f, phase, target, detail string) history.Event {
	e := history.Event{Type: history.Info, Process: history.Nemesis, F: f, Phase: phase, Target: target, Detail: detail}
	e.Facts = history.FactsFromWords(e)
	return e
}

func with(e history.Event, set func(*history.Event)) history.Event {
	set(&e)
	return e
}

// pausedHolder is a small run that has a bit of everything: client 0 is
// paused holding the lock (fence 5) while its lease runs out, client 1 is
// granted it (fence 6), writes and releases, and client 0 then writes
// after it: a stale write, and a double grant as the clients believed it.
// Client 2's write ends in an info (its process is replaced) during a node
// kill that never heals; client 1 writes with an old fence (rejected) and
// starts another acquire without releasing. Client 3 is the final check.
func pausedHolder() ([]history.Event, Results) {
	var b builder
	b.at(0.100, acq(history.Invoke, 0, 0, "a0"))
	b.at(0.102, with(acq(history.OK, 0, 0, "a0"), func(e *history.Event) { e.Fence, e.ValidMs = 5, 990 }))
	b.at(0.103, with(op(history.Invoke, history.Write, 0, 0, "a0"), func(e *history.Event) { e.Fence, e.Value = 5, history.Int64(0) }))
	b.at(0.104, fault("pause-client", history.Start, "client 0", "frozen before its write"))
	b.at(0.500, acq(history.Invoke, 1, 1, "b0"))
	b.at(0.501, with(acq(history.Fail, 1, 1, "b0"), func(e *history.Event) { e.Error = "lock busy" }))
	b.at(1.200, acq(history.Invoke, 1, 1, "b1"))
	b.at(1.202, with(acq(history.OK, 1, 1, "b1"), func(e *history.Event) { e.Fence, e.ValidMs = 6, 990 }))
	b.at(1.203, with(op(history.Invoke, history.Write, 1, 1, "b1"), func(e *history.Event) { e.Fence, e.Value = 6, history.Int64(0) }))
	b.at(1.204, with(op(history.OK, history.Write, 1, 1, "b1"), func(e *history.Event) { e.Fence, e.Value = 6, history.Int64(1) }))
	b.at(1.500, op(history.Invoke, history.Release, 1, 1, "b1")) // 10
	b.at(1.501, op(history.OK, history.Release, 1, 1, "b1"))
	b.at(2.000, fault("pause-client", history.End, "client 0", "resumed"))
	b.at(2.001, with(op(history.OK, history.Write, 0, 0, "a0"), func(e *history.Event) { e.Fence, e.Value = 5, history.Int64(1) }))
	b.at(2.300, op(history.Invoke, history.Release, 0, 0, "a0"))
	b.at(2.301, with(op(history.Fail, history.Release, 0, 0, "a0"), func(e *history.Event) { e.Error = "lock not held" }))
	b.at(2.400, acq(history.Invoke, 2, 2, "c0"))
	b.at(2.402, with(acq(history.OK, 2, 2, "c0"), func(e *history.Event) { e.Fence, e.ValidMs = 7, 990 }))
	b.at(2.403, with(op(history.Invoke, history.Write, 2, 2, "c0"), func(e *history.Event) { e.Fence, e.Value = 7, history.Int64(1) }))
	b.at(2.404, fault("kill-node", history.Start, "n1", "client 2 just acquired"))
	b.at(2.900, with(op(history.Info, history.Write, 2, 2, "c0"), func(e *history.Event) { e.Error = "EOF" })) // 20
	b.at(3.000, acq(history.Invoke, 1, 1, "b2"))
	b.at(3.002, with(acq(history.OK, 1, 1, "b2"), func(e *history.Event) { e.Fence, e.ValidMs = 4, 990 }))
	b.at(3.003, with(op(history.Invoke, history.Write, 1, 1, "b2"), func(e *history.Event) { e.Fence, e.Value = 4, history.Int64(1) }))
	b.at(3.004, with(op(history.Fail, history.Write, 1, 1, "b2"), func(e *history.Event) {
		e.Fence, e.Value, e.Error = 4, history.Int64(2), "fence 4 is below the highest accepted fence 6"
	}))
	b.at(3.500, acq(history.Invoke, 1, 1, "b3"))
	b.at(3.501, with(acq(history.Fail, 1, 1, "b3"), func(e *history.Event) { e.Error = "lock busy" }))
	b.at(3.600, with(acq(history.Invoke, 3, 3, "f0"), func(e *history.Event) { e.Final = true }))
	b.at(3.602, with(acq(history.OK, 3, 3, "f0"), func(e *history.Event) { e.Final, e.ValidMs = true, 990 }))

	res := Results{
		Valid:     checker.Invalid,
		Anomalies: map[string]int{checker.DoubleGrant: 1, checker.StaleWrite: 1},
		Fencing:   checker.Fencing{Rejected: 1},
		Stats: map[string]checker.OpStats{
			"acquire": {OK: 5, Fail: 2, P50Ms: 2, P99Ms: 2, MaxMs: 2},
			"write":   {OK: 2, Fail: 1, Info: 1, P50Ms: 1, P99Ms: 1898, MaxMs: 1898},
		},
		Seed:    1,
		Spec:    json.RawMessage(`{"name":"single-cad-pause-client","lock":"cad","nemesis":"pause-client","ttl":"1s","seed":1}`),
		Command: "harness run --lock cad --nemesis pause-client --ttl 1s --time-limit 15s --seed 1",
		Faults:  map[string]int{"pause-client": 1, "kill-node": 1},
		Checker: CheckerReport{Liveness: checker.LivenessOK, SlackMs: 2, Findings: []checker.Finding{
			{Anomaly: checker.DoubleGrant, Key: "lock:orders", Events: []int{0, 1, 6, 7, 10},
				Narrative: "0.102 s client 0 (process 0) acquired lock:orders token a0 (fence 5); 1.202 s client 1 (process 1) acquired lock:orders token b1 (fence 6)"},
			{Anomaly: checker.StaleWrite, Key: "lock:orders", Events: []int{0, 1, 2, 6, 7, 8, 9, 13},
				Narrative: "0.102 s client 0 (process 0) acquired lock:orders token a0 (fence 5); 2.001 s the resource accepted the first holder's write (stored 1) after the newer holder's"},
		}},
	}
	return b.events, res
}

// writeRun lays out a run directory as the harness leaves it, under
// store/<name>/<stamp>/.
func writeRun(t *testing.T, store, name, stamp string, events []history.Event, res Results) string {
	t.Helper()
	dir := filepath.Join(store, name, stamp)
	if err := os.MkdirAll(filepath.Join(dir, "nodes", "n1"), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if err := history.Encode(f, events); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := WriteResults(dir, res); err != nil {
		t.Fatal(err)
	}
	for path, text := range map[string]string{
		"harness.log":         "starting single topology\n",
		"nodes/n1/redis.log":  "Ready to accept connections\n",
		"nodes/n1/redis.conf": "port 0\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, path), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
