// Package workloads is what clients do during a run: the worker protocol
// (the one way the harness talks to any lock client, the built-in Go worker
// or a program in any language; docs/worker-protocol.md), the built-in
// worker that runs a recipe, the harness-side clients that drive workers and
// record every operation in the history, the mutex workload, and the
// protected resource whose writes the checker audits.
package workloads

import (
	"slices"

	"github.com/lockharness/lockharness/access"
)

// Protocol is the version of the worker protocol this harness speaks. A
// worker announcing another one is refused before any operation.
const Protocol = 1

// OpHello is the op of the hello line.
const OpHello = "hello"

// NewHello is the hello of slot's worker, without the service (a probe
// needs none).
func NewHello(slot int) Hello { return Hello{Op: OpHello, Protocol: Protocol, Client: slot} }

// Hello is the first line the harness sends a worker: the protocol version
// and where the lock service is. A probe hello (Probe set) carries no
// service: the harness only wants the worker's ready line, and then closes
// its stdin.
type Hello struct {
	Op       string `json:"op"` // OpHello
	Protocol int    `json:"protocol"`
	Probe    bool   `json:"probe,omitempty"`
	// Client is the client slot the worker serves.
	Client int `json:"client"`
	// Topology is the run's topology: single, sentinel, redlock or cluster.
	Topology string `json:"topology,omitempty"`
	// OpTimeoutMs bounds each Redis command the worker sends.
	OpTimeoutMs int64 `json:"op_timeout_ms"`
	// ReplyWithinMs is how long the harness waits for a reply before it
	// records the operation as info and kills the worker.
	ReplyWithinMs int64 `json:"reply_within_ms"`
	// Nodes are the addresses (host:port) the worker talks to: the one
	// node, or every independent node (redlock), each through the worker's
	// own proxy; for a cluster, the seeds, as the nodes announce them.
	Nodes []string `json:"nodes,omitempty"`
	// Cluster: the service is a Redis Cluster whose seeds are Nodes; the
	// worker follows MOVED and ASK, and dials every address the nodes
	// announce through Dial.
	Cluster bool `json:"cluster,omitempty"`
	// Etcd: the service is an etcd cluster (v3 API over gRPC, no TLS)
	// whose members' client addresses are Nodes, each through the
	// worker's own link.
	Etcd bool `json:"etcd,omitempty"`
	// Sentinel names the sentinel-monitored primary (sentinel topology).
	Sentinel *SentinelService `json:"sentinel,omitempty"`
	// Dial maps an address a server announces (a sentinel's answer, a
	// cluster's slot map) to the address this worker must dial instead:
	// its own proxy for that node.
	Dial map[string]string `json:"dial,omitempty"`
	// Auth and TLS are set when the run's servers require them.
	Auth *Auth `json:"auth,omitempty"`
	TLS  *TLS  `json:"tls,omitempty"`
	// Database is set when the protected resource is a real database the
	// worker writes to itself (a worker whose ready line lists it in
	// writes).
	Database *Database `json:"database,omitempty"`
}

// Database is where and how a worker writes its protected writes.
type Database struct {
	// Kind is the database: postgres.
	Kind string `json:"kind"`
	// DSN reaches it through the worker's own link.
	DSN string `json:"dsn"`
	// Workload is inventory (decrement one unit of SKU) or jobs (record
	// the job a read returned as done).
	Workload string `json:"workload"`
	SKU      string `json:"sku,omitempty"`
	// Fencing is none, where, cas, app-check, or sql: then SQL is the
	// statement to run, with :sku, :fence, :token and :client.
	Fencing string `json:"fencing,omitempty"`
	SQL     string `json:"sql,omitempty"`
	// Idempotent: a job's done row is unique; insert with ON CONFLICT
	// (job) DO NOTHING.
	Idempotent bool `json:"idempotent,omitempty"`
	// TimeoutMs bounds each read or write.
	TimeoutMs int64 `json:"timeout_ms"`
}

// SentinelService is a primary found through sentinels.
type SentinelService struct {
	Master string   `json:"master"`
	Addrs  []string `json:"addrs"`
}

// Auth is the ACL user a lock client logs in as.
type Auth struct {
	Username string `json:"username"`
	Password string `json:"password"`
}

// TLS is what a client needs to talk TLS to the servers: the CA that signed
// their certificates (PEM) and the name the certificates carry.
type TLS struct {
	CAFile     string `json:"ca_file"`
	ServerName string `json:"server_name"`
}

// Renewal disclosures a worker makes in its ready line.
const (
	// RenewNone: the lock never extends a lease unless asked (extend).
	RenewNone = "none"
	// RenewReported: the lock renews leases in the background and the
	// worker reports each renewal as an event.
	RenewReported = "reported"
	// RenewUnreported: the lock renews in the background and the worker
	// cannot see it. The checker then judges no expiry-based finding
	// about that worker's leases: they are unknown.
	RenewUnreported = "unreported"
)

// Ready is the worker's answer to hello: who it is and what it does.
type Ready struct {
	Kind     string `json:"kind"` // "ready"
	Protocol int    `json:"protocol"`
	// Name and Version name the lock client (redis-py-lock, 4.3.4); the
	// run is named after Name.
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
	// Extend: the worker answers extend requests.
	Extend bool `json:"extend,omitempty"`
	// Fences: its grants carry a fencing token that only grows.
	Fences bool `json:"fences,omitempty"`
	// Renewals is none (default), reported or unreported.
	Renewals string `json:"renewals,omitempty"`
	// Points are the pause points inside the lock client, in the order a
	// client reaches them; the harness arms them in requests.
	Points []string `json:"points,omitempty"`
	// Needs lists what the worker needs of a topology, as a recipe's Needs
	// do: it runs on every topology that offers all of it, one added
	// later included. A worker that announces Needs is not read for
	// Topologies (ParseReady drops them), which it may still send for
	// harnesses older than Needs.
	Needs []access.Capability `json:"needs,omitempty"`
	// Prefers, with Needs, is what the worker is built for but can do
	// without, as a recipe's Prefers: the topologies that also offer it
	// come first.
	Prefers []access.Capability `json:"prefers,omitempty"`
	// Topologies the worker can run on, by name, when it announces no
	// Needs (default: single).
	Topologies []string `json:"topologies,omitempty"`
	// Unsupported says, by topology, why the worker does not run on one
	// it is refused on; a run there is refused with the reason.
	Unsupported map[string]string `json:"unsupported,omitempty"`
	// Writes lists the databases the worker writes to itself (postgres);
	// only such a worker runs with a real resource.
	Writes []string `json:"writes,omitempty"`
	// Workloads lists the database workloads it knows how to write
	// (inventory, jobs); none: every workload the harness has, as the
	// built-in worker writes them from the registry.
	Workloads []string `json:"workloads,omitempty"`
}

// WritesWorkload reports whether the worker writes the workload's writes
// itself, as its ready line says.
func (r Ready) WritesWorkload(name string) bool {
	return len(r.Workloads) == 0 || slices.Contains(r.Workloads, name)
}

// Request is one line the harness sends a worker after hello: an operation
// to perform.
type Request struct {
	ID    int64  `json:"id"`
	Op    string `json:"op"` // acquire, release, extend, read, write
	Key   string `json:"key"`
	Token string `json:"token,omitempty"`
	TTLMs int64  `json:"ttl_ms,omitempty"`
	// Value is, for write, the counter value the harness read (memory)
	// or the job the worker's read returned (jobs).
	Value int64 `json:"value,omitempty"`
	// Pause lists the armed pause points: the worker stops itself with
	// SIGSTOP when it reaches one of them during this operation.
	Pause []string `json:"pause,omitempty"`
}

// Message kinds a worker sends.
const (
	KindReady  = "ready"
	KindReply  = "reply"
	KindPaused = "paused"
	KindEvent  = "event"
	// KindFatal: the worker cannot go on (the servers refuse its
	// credentials, its library is missing). The run ends as a harness
	// error with the worker's message, never as a verdict.
	KindFatal = "fatal"
)

// Message is one line a worker sends after ready: the reply to a request,
// the notice that it is about to stop at a pause point, or a background
// event (a renewal starting or completing, the library saying the lock is
// lost). Workers report durations, never absolute times: the harness stamps
// every line on its own clock.
type Message struct {
	Kind string `json:"kind"`
	ID   int64  `json:"id,omitempty"`
	// Type is ok, fail or info for replies and event completions, invoke
	// for an event's start.
	Type    string `json:"type,omitempty"`
	F       string `json:"f,omitempty"`
	Key     string `json:"key,omitempty"`
	Token   string `json:"token,omitempty"`
	Fence   int64  `json:"fence,omitempty"`
	TTLMs   int64  `json:"ttl_ms,omitempty"`
	ValidMs int64  `json:"valid_ms,omitempty"`
	Value   int64  `json:"value,omitempty"`
	Point   string `json:"point,omitempty"`
	// Refused marks a grant the client will not use (a WAIT that no replica
	// acknowledged): the harness releases it without writing.
	Refused bool   `json:"refused,omitempty"`
	Error   string `json:"error,omitempty"`
	// Reason says why a fail failed: busy, not-held or rejected.
	Reason string `json:"reason,omitempty"`
}

// PointBeforeWrite is between a successful acquire and the protected write:
// where a GC pause hurts most. It is the harness's own point: it stops the
// worker's whole process group there, so no worker needs to offer it.
const PointBeforeWrite = "before-write"
