// Package access is how one client reaches the lock service: the one type
// a topology hands each client (cluster), the built-in recipes' clients
// dial (locks), and the worker protocol's hello carries to a worker of any
// language (workloads), a Redis service's or an etcd cluster's. Every
// address in it is that client's own link, so that each client can be cut
// off alone. What a client may need of the
// service it reaches (Capability) is named here too, for the same
// packages.
package access

// Access is how one client reaches the lock service.
type Access struct {
	// Nodes are the nodes a client talks to directly: the one node or
	// primary, or every independent node (a Redlock's); for a Cluster,
	// its seeds as the nodes announce them, to be dialled through Dial.
	Nodes []string
	// Master and Sentinels: ask the sentinels for the primary named
	// Master (Nodes is then empty).
	Master    string
	Sentinels []string
	// Cluster: Nodes are the seeds of a Redis Cluster, and the client
	// follows MOVED and ASK.
	Cluster bool
	// Etcd: Nodes are the client addresses of an etcd cluster's members
	// (plain gRPC, v3 API), which a client balances over itself.
	Etcd bool
	// Dial maps an address the servers announce (a node's internal link,
	// a sentinel's answer, a cluster's slot map) to this client's own link
	// for that node.
	Dial map[string]string
	// Username and Password log in to every node (an ACL user and its
	// password; a password alone is the default user's) and, with the same
	// pair, to the sentinels. Empty: no login.
	Username, Password string
	// TLS: every address speaks TLS only, verified against the CA in the
	// PEM file CAFile (empty: the system's roots) and ServerName (empty:
	// the host of the address dialled).
	TLS        bool
	CAFile     string
	ServerName string
}
