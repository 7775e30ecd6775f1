package scenario

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/cluster"
	"github.com/lockharness/lockharness/reports"
	"github.com/lockharness/lockharness/resource"
)

// Entry is a named, seeded scenario of the catalog (docs/scenarios.md):
// a spec and what a correct harness must report for it.
type Entry struct {
	Name   string
	Source string
	// Story is the fault and sequence in a sentence.
	Story  string
	Spec   Spec
	Expect Expect
	// Compare names a scenario whose rates this one's report shows beside
	// its own (failover-wait against failover-double-grant).
	Compare string
}

// Expect is a catalog row's expectation. Unsafe scenarios must be caught
// (verdict invalid, and the named anomaly counted when one is named); safe
// ones must pass. A harness that is blind fails the first kind, one that
// cries wolf the second.
type Expect struct {
	Unsafe  bool
	Anomaly string
	// Fenced safe scenarios must also show the stale write being refused.
	Fenced bool
}

func (e Expect) String() string {
	switch {
	case e.Unsafe && e.Anomaly != "":
		return "unsafe: " + e.Anomaly
	case e.Unsafe:
		return "unsafe"
	case e.Fenced:
		return "safe: fencing.rejected >= 1"
	}
	return "safe"
}

// Met reports whether a run's results meet the expectation, and why not.
func (e Expect) Met(r reports.Results) (bool, string) {
	if e.Unsafe {
		if r.Valid != checker.Invalid {
			return false, fmt.Sprintf("verdict %s, want invalid", r.Valid)
		}
		if e.Anomaly != "" && r.Anomalies[e.Anomaly] < 1 {
			return false, fmt.Sprintf("no %s found", e.Anomaly)
		}
		return true, ""
	}
	if r.Valid != checker.Valid {
		return false, fmt.Sprintf("verdict %s, want valid", r.Valid)
	}
	if e.Fenced && r.Fencing.Rejected < 1 {
		return false, "no stale write was refused by fencing"
	}
	return true, ""
}

// StopOn is what a run meeting the expectation can stop early on: an
// unsafe scenario's anomaly (every online one when it names none, or when
// it names one only the whole history shows); nothing for a safe one,
// which must run its course to pass.
func (e Expect) StopOn() []string {
	if !e.Unsafe {
		return nil
	}
	if e.Anomaly == "" {
		return checker.OnlineAnomalies
	}
	for _, a := range checker.OnlineAnomalies {
		if a == e.Anomaly {
			return []string{a}
		}
	}
	return nil
}

func entrySpec(topology, lock, nemesis string, ttl, hold, limit time.Duration) Spec {
	s := Defaults()
	s.Topology, s.Lock, s.Nemesis = topology, lock, nemesis
	s.TTL, s.Hold, s.TimeLimit = Duration(ttl), Duration(hold), Duration(limit)
	return s
}

// execSpec is a single-node scenario whose clients are an outside worker.
func execSpec(workerCmd, nemesis string, ttl, hold, limit time.Duration) Spec {
	s := entrySpec(cluster.Single, ExecLock, nemesis, ttl, hold, limit)
	s.WorkerCmd = workerCmd
	return s
}

// failoverSpec is a Sentinel failover row: 2.4 s leases held 2.2 s, the
// primary cut off while a client holds the lock (partition-primary:
// at=grant), its first fault 0.1-0.3 s in, when the first holder A has
// held about that long. The promotion comes 2.1-3.3 s after the cut, so
// 2.2-3.6 s after A's grant; A's replicated key expires on the promoted
// replica 2.4 s after it; the grant there comes between 2.4 and 3.6 s,
// while B, granted on the old primary unreplicated when A released at
// 2.2 s, holds until 4.4 s.
func failoverSpec(lock string) Spec {
	s := entrySpec(cluster.Sentinel, lock, "partition-primary:at=grant", 2400*time.Millisecond, 2200*time.Millisecond, 12*sec)
	s.Interval = Duration(200 * time.Millisecond)
	return s
}

// redlockClockJumpSpec is the Redlock rows' spec with 2 s leases and its
// first fault 0.1-0.3 s in: the clock jump waits out the lease held when
// the partition began (its release reaches one side only), so shorter
// leases and an earlier partition bring the verdict sooner.
func redlockClockJumpSpec() Spec {
	s := redlockSpec("partition-majorities+clock-jump")
	s.TTL, s.Interval = Duration(2*sec), Duration(200*time.Millisecond)
	return s
}

func withPersistence(s Spec, p string) Spec { s.Persistence = p; return s }

// inventorySpec is a single-node scenario whose clients sell the seed's
// inventory row in PostgreSQL, fenced as given.
func inventorySpec(lock, fencing, nemesis string) Spec {
	s := entrySpec(cluster.Single, lock, nemesis, sec, 300*time.Millisecond, 10*sec)
	s.Workload, s.Resource, s.Fencing = WorkloadInventory, resource.Postgres, fencing
	return s
}

// redlockSpec is a Redlock scenario: five nodes and two clients whose ring
// majorities (when partitioned) share exactly one node, n3, the way the
// published attacks draw it.
func redlockSpec(nemesis string) Spec {
	s := entrySpec(cluster.Redlock, "redlock", nemesis, 3*sec, sec, 10*sec)
	s.Clients, s.Nodes = 2, 5
	return s
}

const sec = time.Second

// librarySpec is redsync over the redlock topology, shaped like redlockSpec
// with time for one whole pause of up to 3 TTLs.
// The scenarios use tries=1: the workload retries by itself, and an acquire
// that retries inside the library for seconds leaves the checker unsure
// when its lease began.
func librarySpec(lock, nemesis string) Spec {
	s := redlockSpec(nemesis)
	s.Lock, s.TimeLimit = lock, Duration(14*time.Second)
	return s
}

// Catalog is every named scenario. It is what must never regress.
var Catalog = []Entry{
	{Name: "clean-cad", Source: "baseline", Story: "no faults",
		Spec: entrySpec(cluster.Single, "cad", "none", 2*sec, 300*time.Millisecond, 8*sec), Expect: Expect{}},
	{Name: "gc-pause", Source: "Kleppmann 2016", Story: "a holder is frozen after acquiring, before its write, for longer than the TTL; another acquires and writes; the first wakes and writes",
		Spec: entrySpec(cluster.Single, "cad", "pause-client", sec, 300*time.Millisecond, 10*sec), Expect: Expect{Unsafe: true, Anomaly: checker.StaleWrite}},
	{Name: "gc-pause-fenced", Source: "Kleppmann 2016", Story: "as gc-pause, with fencing tokens checked by the resource",
		Spec: entrySpec(cluster.Single, "fenced", "pause-client", sec, 300*time.Millisecond, 10*sec), Expect: Expect{Fenced: true}},
	{Name: "gc-pause-renew", Source: "Redisson-style watchdogs", Story: "as gc-pause; the renewing watchdog freezes with the process",
		Spec: entrySpec(cluster.Single, "renew", "pause-client", sec, 300*time.Millisecond, 10*sec), Expect: Expect{Unsafe: true, Anomaly: checker.StaleWrite}},
	{Name: "del-release", Source: "Redis distributed-lock page", Story: "a holder overruns its TTL, another acquires, the first's plain DEL removes the second's lock, a third acquires",
		Spec: entrySpec(cluster.Single, "del", "pause-client", sec, 300*time.Millisecond, 10*sec), Expect: Expect{Unsafe: true, Anomaly: checker.ForeignRelease}},
	{Name: "naive-crash", Source: "SETNX+EXPIRE folklore", Story: "the holder dies between SETNX and EXPIRE",
		Spec: entrySpec(cluster.Single, "naive", "kill-client", 2*sec, 300*time.Millisecond, 6*sec), Expect: Expect{Unsafe: true, Anomaly: checker.StuckLock}},
	{Name: "restart-no-persist", Source: "Kleppmann 2016 (one node)", Story: "a client holds; the node is killed and restarts empty; another acquires",
		// The holder holds for 1 s, longer than any backend takes to bring
		// the node back (a container restart takes 150-300 ms), so the
		// restarted node grants while the first holder still holds.
		Spec: entrySpec(cluster.Single, "cad", "kill-node", 2*sec, sec, 8*sec), Expect: Expect{Unsafe: true, Anomaly: checker.DoubleGrant}},
	{Name: "restart-aof-always", Source: "Redis persistence docs", Story: "as restart-no-persist, with appendonly yes and appendfsync always",
		Spec: withPersistence(entrySpec(cluster.Single, "cad", "kill-node", 2*sec, sec, 8*sec), "aof-always"), Expect: Expect{}},
	{Name: "clock-jump-single", Source: "Kleppmann 2016", Story: "a client holds; the node's wall clock jumps forward past the TTL; another acquires",
		Spec: entrySpec(cluster.Single, "cad", "clock-jump", 2*sec, 500*time.Millisecond, 8*sec), Expect: Expect{Unsafe: true, Anomaly: checker.DoubleGrant}},
	{Name: "failover-double-grant", Source: "Redis Sentinel docs; Jepsen Redis 2013", Story: "while a client holds the lock, the primary is cut off from its replicas, the sentinels and some clients; the holder's release and the next grant happen on it, unreplicated; the sentinels promote a replica that never saw the key; a client acquires there while the first still holds",
		Spec: failoverSpec("cad"), Expect: Expect{Unsafe: true, Anomaly: checker.DoubleGrant}},
	{Name: "split-brain", Source: "Jepsen Redis 2013", Story: "the primary and some clients are partitioned from the majority; both sides grant the lock until the partition heals and the old primary is demoted",
		Spec: entrySpec(cluster.Sentinel, "cad", "split-brain", sec, 300*time.Millisecond, 8*sec), Expect: Expect{Unsafe: true, Anomaly: checker.DoubleGrant}},
	{Name: "failover-wait", Source: "Redis WAIT docs", Story: "as failover-double-grant, with WAIT 1 after each grant; unacknowledged grants are released unused",
		Spec: failoverSpec("wait"), Expect: Expect{Unsafe: true}, Compare: "failover-double-grant"},
	{Name: "cluster-clean", Source: "Redis Cluster specification", Story: "cad on a Redis Cluster of three shards, each a primary and a replica; no faults",
		Spec: entrySpec(cluster.RedisCluster, "cad", "none", 2*sec, 300*time.Millisecond, 8*sec), Expect: Expect{}},
	{Name: "cluster-failover-double-grant", Source: "Redis Cluster specification", Story: "a third of a second before the holder releases, the primary of the lock's shard is cut off from its replica, its peers' cluster bus and some clients; the release and the next grant happen on it, unreplicated, before it sees itself in the minority; its replica is elected and takes the slots without the key; a client acquires there while the first still holds",
		Spec: entrySpec(cluster.RedisCluster, "cad", "partition-primary", 5*sec, 4*sec, 12*sec), Expect: Expect{Unsafe: true, Anomaly: checker.DoubleGrant}},
	{Name: "cluster-failover-wait", Source: "Redis WAIT docs; Redis Cluster specification", Story: "as cluster-failover-double-grant, with WAIT 1 after each grant; unacknowledged grants are released unused",
		Spec: entrySpec(cluster.RedisCluster, "wait", "partition-primary", 5*sec, 4*sec, 12*sec), Expect: Expect{Unsafe: true}, Compare: "cluster-failover-double-grant"},
	{Name: "cluster-kill-primary", Source: "Redis Cluster specification", Story: "the primary of the lock's shard is killed at a random moment and restarts empty 5-7 s later; its replica, which holds every grant replicated within a millisecond, is promoted and the restarted node rejoins as its replica",
		Spec: entrySpec(cluster.RedisCluster, "cad", "kill-primary", 2*sec, sec, 10*sec), Expect: Expect{}},
	{Name: "redlock-clean", Source: "Redis distributed-lock page", Story: "Redlock over five nodes, no faults",
		Spec: redlockSpec("none"), Expect: Expect{}},
	{Name: "redlock-partition-minority", Source: "Redis distributed-lock page", Story: "two of the five nodes are unreachable for some clients; a majority still decides",
		Spec: redlockSpec("partition-minority"), Expect: Expect{}},
	{Name: "redlock-clock-jump", Source: "Kleppmann 2016", Story: "A locks n1-n3 (n4, n5 unreachable for A); n3's clock jumps past the TTL; B locks n3-n5 (n1, n2 unreachable for B)",
		Spec: redlockClockJumpSpec(), Expect: Expect{Unsafe: true, Anomaly: checker.DoubleGrant}},
	{Name: "redlock-restart", Source: "Kleppmann 2016", Story: "A locks n1-n3; n3 restarts without persistence; B locks n3-n5",
		Spec: redlockSpec("partition-majorities+kill-node"), Expect: Expect{Unsafe: true, Anomaly: checker.DoubleGrant}},
	{Name: "redlock-delayed-restart", Source: "antirez 2016; Redis distributed-lock page", Story: "as redlock-restart, but n3 stays down longer than the TTL, as the page advises",
		Spec: redlockSpec("partition-majorities+kill-node:delay=4s"), Expect: Expect{}},
	{Name: "redsync-extend-after-expiry", Source: "go-redsync issue tracker", Story: "A (redsync with WithSetNXOnExtend) freezes past the TTL, B acquires and releases, A's Extend re-creates the keys and succeeds: A believed it held the lock throughout",
		Spec: librarySpec("redsync:setnx-on-extend:tries=1", "pause-past-release"), Expect: Expect{Unsafe: true, Anomaly: checker.ForeignRelease}},
	{Name: "redsync-quorum-loss", Source: "Kleppmann 2016; go-redsync", Story: "A wins with exactly a quorum; one of those nodes restarts empty; B gains a quorum",
		Spec: librarySpec("redsync:tries=1", "partition-majorities+kill-node"), Expect: Expect{Unsafe: true, Anomaly: checker.DoubleGrant}},
	{Name: "redis-py-clean", Source: "redis-py", Story: "redis-py's own redis.lock.Lock, run by a Python worker over the worker protocol; no faults",
		Spec: execSpec(RedisPyWorker, "none", 2*sec, 300*time.Millisecond, 8*sec), Expect: Expect{}},
	{Name: "redis-py-gc-pause", Source: "Kleppmann 2016; redis-py", Story: "as gc-pause, with redis-py's Lock: the Python process is frozen after acquiring, before its write, past the TTL",
		Spec: execSpec(RedisPyWorker, "pause-client", sec, 300*time.Millisecond, 10*sec), Expect: Expect{Unsafe: true, Anomaly: checker.StaleWrite}},
	{Name: "redis-py-restart", Source: "Kleppmann 2016 (one node); redis-py", Story: "as restart-no-persist, with redis-py's Lock: the node restarts empty under a holder",
		Spec: execSpec(RedisPyWorker, "kill-node", 2*sec, sec, 8*sec), Expect: Expect{Unsafe: true, Anomaly: checker.DoubleGrant}},
	{Name: "delayed-write", Source: "Kleppmann 2016", Story: "a holder's write to PostgreSQL is held up in the network past the TTL; another acquires and sells first; the old write lands after it",
		Spec: inventorySpec("cad", resource.FenceNone, "delay-write"), Expect: Expect{Unsafe: true, Anomaly: checker.StaleWrite}},
	{Name: "delayed-write-fenced", Source: "Kleppmann 2016", Story: "as delayed-write, with fencing tokens in the statement: UPDATE ... WHERE lock_token < $fence refuses the late write",
		Spec: inventorySpec("fenced", resource.FenceWhere, "delay-write"), Expect: Expect{Fenced: true}},
	{Name: "gc-pause-postgres", Source: "Kleppmann 2016", Story: "as gc-pause, with the write a plain UPDATE of the seed's inventory row in PostgreSQL",
		Spec: inventorySpec("cad", resource.FenceNone, "pause-client"), Expect: Expect{Unsafe: true, Anomaly: checker.StaleWrite}},
	{Name: "gc-pause-postgres-where", Source: "Kleppmann 2016; the seed's fencing SQL", Story: "as gc-pause-postgres, fenced by the database: UPDATE ... WHERE sku = $1 AND lock_token < $fence",
		Spec: inventorySpec("fenced", resource.FenceWhere, "pause-client"), Expect: Expect{Fenced: true}},
	// The client reads lock_token after it wakes, so the newer holder's
	// token is already there and the client's own comparison refuses; the
	// mistake would take a stop between the read and the UPDATE, a
	// window of well under a millisecond that pause-client never hits.
	{Name: "gc-pause-postgres-app-check", Source: "the check-then-act mistake", Story: "as gc-pause-postgres-where, with the check in the client: SELECT lock_token, compare, then a plain UPDATE; the pause comes before the read, so the check sees the newer token",
		Spec: inventorySpec("fenced", resource.FenceAppCheck, "pause-client"), Expect: Expect{Fenced: true}},
	{Name: "redlock-acquire-pause", Source: "Kleppmann 2016; antirez 2016", Story: "A freezes while its acquire replies are in flight, past the TTL; a correct validity computation rejects the late grant",
		Spec: redlockSpec("pause-acquire"), Expect: Expect{}},
}

// Lookup finds a catalog entry by name, or lists the valid names.
func Lookup(name string) (Entry, error) {
	var names []string
	for _, e := range Catalog {
		if e.Name == name {
			e.Spec.Name = e.Name
			return e, nil
		}
		names = append(names, e.Name)
	}
	sort.Strings(names)
	return Entry{}, fmt.Errorf("unknown scenario %q (valid: %s)", name, strings.Join(names, ", "))
}
