// Package locks holds the lock recipes under test behind one Locker
// interface. Recipes run inside worker processes, against a go-redis client
// whose every connection goes through the harness's proxies.
//
// Adding a recipe is one file with a Recipe value and one line in Recipes.
package locks

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"github.com/lockharness/lockharness/access"
	"net"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"

	"github.com/lockharness/lockharness/internal/hashslot"
	"github.com/lockharness/lockharness/internal/options"

	"github.com/lockharness/lockharness/internal/suggest"
)

// Recipes is the registry: every recipe the harness can test.
var Recipes = []Recipe{naive, del, cad, renew, fenced, wait, redlock, redsyncRecipe, redislockRecipe, rueidislockRecipe, etcdRecipe, etcdFencedRecipe}

// Recipe names a lock implementation and carries every trait of it that
// the rest of the harness reads.
type Recipe struct {
	Name    string
	Summary string
	// Points are the pause points inside the recipe, in the order a client
	// reaches them. A client killed at one of them shows what a crash there
	// leaves behind.
	Points []string
	// Needs lists what the recipe needs of a topology (access.Primary,
	// ...): it runs on every topology that offers all of it, one added
	// later included, and is refused elsewhere with what is lacking. Never
	// a topology's name: a recipe says what it does, a topology what it
	// offers.
	Needs []access.Capability
	// Prefers lists what the recipe is built for but can do without (a
	// Redlock's majorities, which one node reduces to a quorum of one):
	// the topologies that also offer it come first, and the first of all
	// is the one the libs suite scores it on and compare runs it on.
	Prefers []access.Capability
	// Extends is set for recipes whose lockers implement Extender: the
	// workload then extends each lease after its write, as a caller of the
	// library would before a long step.
	Extends bool
	// Renews is set for recipes that renew their leases in the background
	// (a watchdog) and report every renewal through Config.Observe.
	Renews bool
	// Fences is set for recipes whose grants carry a fencing token: the
	// protected resource then refuses writes with an older fence.
	Fences bool
	// TTLUnit, when set, is what the lock's leases are counted in: a TTL
	// must be a whole number of them (etcd's leases are whole seconds),
	// which a run's spec is held to before it starts.
	TTLUnit time.Duration
	// Outlives, when set, is how long past a lease's TTL the lock service
	// may keep it (etcd: until its lessor's next round, and a TTL more
	// after a leader change), which the checker allows a lease.
	Outlives func(ttl time.Duration) time.Duration
	// Library is the Go module of the library the recipe adapts; empty for
	// the harness's own recipes.
	Library string
	// Options are what the recipe takes after its name
	// (redsync:tries=1); New finds their values in Config.Options.
	Options []options.Spec
	// Stores is the key a grant of the lock on key lives in when that is
	// not key itself (rueidislock:0:key); nil: key. On a cluster its slot
	// decides the shard the lock's faults aim at.
	Stores func(key string) string
	New    func(Config) Locker
}

// Outlive is how long past ttl the lock service may keep a lease
// (Outlives); 0 for Redis, which expires a key at its TTL.
func (r Recipe) Outlive(ttl time.Duration) time.Duration {
	if r.Outlives == nil {
		return 0
	}
	return r.Outlives(ttl)
}

// StoreKey is the key a grant of the lock on key lives in (Stores).
func (r Recipe) StoreKey(key string) string {
	if r.Stores == nil {
		return key
	}
	return r.Stores(key)
}

// Register adds a recipe from outside this package (a lock in another
// module) to the registry. The name must be new and the recipe complete.
func Register(r Recipe) error {
	switch {
	case r.Name == "" || strings.ContainsAny(r.Name, ":, "):
		return fmt.Errorf("register lock %q: a name is one word without ':', ',' or spaces", r.Name)
	case r.New == nil:
		return fmt.Errorf("register lock %s: New is nil", r.Name)
	case len(r.Needs) == 0:
		return fmt.Errorf("register lock %s: it names nothing it needs of a topology (Needs: %s)", r.Name, access.Join(access.Capabilities, ", "))
	}
	for _, c := range append(slices.Clone(r.Needs), r.Prefers...) {
		if !slices.Contains(access.Capabilities, c) {
			return fmt.Errorf("register lock %s: %q is nothing a lock client can need of a topology; it can need %s", r.Name, c, access.Join(access.Capabilities, ", "))
		}
	}
	if _, err := Lookup(r.Name); err == nil {
		return fmt.Errorf("register lock %s: a lock of that name exists", r.Name)
	}
	Recipes = append(Recipes, r)
	return nil
}

// Lookup returns the recipe with the name, or an error listing the valid ones.
func Lookup(name string) (Recipe, error) {
	for _, r := range Recipes {
		if r.Name == name {
			return r, nil
		}
	}
	return Recipe{}, suggest.Unknown("lock", name, append(Names(), Exec), "; exec runs a worker of your own, with --worker-cmd")
}

// Exec is the name of the lock an outside worker runs (--lock exec
// --worker-cmd): no recipe of the registry, but a lock a run may name.
const Exec = "exec"

// Names lists the recipe names, sorted.
func Names() []string {
	var names []string
	for _, r := range Recipes {
		names = append(names, r.Name)
	}
	sort.Strings(names)
	return names
}

// Lease is what a client holds after a successful acquire.
type Lease struct {
	Key   string
	Token string
	// Fence is the fencing token, 0 for recipes without one.
	Fence int64
	// Valid is how long the client may believe it holds the lock, counted
	// from the start of the acquire.
	Valid time.Duration
}

// Locker is one lock recipe bound to one client.
type Locker interface {
	// Acquire tries once to take the lock with the given token. It returns
	// ErrBusy when another holder has it.
	Acquire(ctx context.Context, key, token string, ttl time.Duration) (Lease, error)
	// Release gives the lock up. It returns ErrNotHeld when the server says
	// the lease was no longer there to release.
	Release(ctx context.Context, l Lease) error
	// Close stops background work (watchdogs).
	Close()
}

// Config is what a recipe needs from its worker.
type Config struct {
	// Client is the lock service for single-instance recipes: the first
	// (often the only) node, or a Redis Cluster (a *redis.ClusterClient,
	// which routes each key to its shard's primary and follows MOVED and
	// ASK).
	Client redis.UniversalClient
	// Nodes are every independent node, for multi-node recipes (Redlock).
	Nodes []*redis.Client
	// OpTimeout bounds each Redis command.
	OpTimeout time.Duration
	// Pause is called at each named pause point; the worker freezes there
	// when the harness armed that point.
	Pause func(point string)
	// Observe reports operations the recipe performs on its own, such as a
	// watchdog's renewals, so that they enter the history.
	Observe func(Op)
	// Options are the recipe's options as the lock spec gave them.
	Options options.Values
	// Access is how this client reaches the lock service, for recipes
	// whose service is not Redis (an etcd cluster's members).
	Access access.Access
}

// Op is a background operation reported through Config.Observe: first with
// Outcome "invoke", then with its completion.
type Op struct {
	F       string
	Outcome string // invoke, ok, fail, info
	Key     string
	Token   string
	TTL     time.Duration
	Err     error
}

// Pause point names.
const (
	// PointAfterSetNX is between SETNX and EXPIRE in the naive recipe.
	PointAfterSetNX = "after-setnx"
)

var (
	// ErrBusy: the lock is held by someone else (a definite "no").
	ErrBusy = errors.New("lock busy")
	// ErrNotHeld: release or extend found the lease gone or someone else's.
	ErrNotHeld = errors.New("lock not held")
	// ErrNotSent: the command never left the client (no connection could
	// carry it): it certainly did not happen, which says nothing about the
	// lock (a rejection).
	ErrNotSent = errors.New("command not sent: no connection")
	// ErrNotTried: an acquire failed before it tried the lock (an etcd
	// lease that could not be granted): certainly no grant.
	ErrNotTried = errors.New("the lock was not tried")
)

// Definite reports whether err certainly means the operation did not take
// effect (fail), as opposed to an unknown outcome (info) such as a timeout
// or a broken connection, after which the command may still have run. A
// server's refusal counts, from go-redis or from rueidis (whose clients
// rueidislock builds itself): among them a refused login (WRONGPASS,
// NOAUTH) and a command the client's ACL user may not run (NOPERM).
func Definite(err error) bool {
	if err == nil || errors.Is(err, ErrBusy) || errors.Is(err, ErrNotHeld) || errors.Is(err, ErrNoQuorum) || errors.Is(err, ErrNotSent) || errors.Is(err, ErrNotTried) {
		return true
	}
	var re redis.Error
	if errors.As(err, &re) {
		return refusal(re.Error())
	}
	var rre *rueidis.RedisError
	if errors.As(err, &rre) {
		return refusal(rre.Error())
	}
	return false
}

// refusal reports whether a server's error reply says it did not run the
// command.
func refusal(msg string) bool {
	for _, prefix := range []string{"READONLY", "NOAUTH", "WRONGPASS", "NOPERM", "LOADING", "WRONGTYPE", "NOSCRIPT", "ERR", "MASTERDOWN", "NOREPLICAS",
		// a cluster node that does not serve the key, or not now
		"MOVED", "ASK", "CLUSTERDOWN", "TRYAGAIN"} {
		if strings.HasPrefix(msg, prefix) {
			return true
		}
	}
	return false
}

// command runs fn with the per-command timeout. go-redis honours the context
// deadline because the client is built with ContextTimeoutEnabled.
func command[T any](ctx context.Context, timeout time.Duration, fn func(context.Context) (T, error)) (T, error) {
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return fn(cctx)
}

// KeyPatterns are the keys a lock on key touches, whatever its recipe, as
// Redis glob patterns for an ACL that grants a lock client exactly them:
// the key itself, the fenced recipe's counter beside it (FenceKey), and
// the keys rueidislock derives from it (rueidislock:<i>:<key>).
func KeyPatterns(key string) []string {
	k := globEscape(key)
	return []string{k, globEscape(FenceKey(key)), "rueidislock:*:" + k}
}

// FenceKey is the fenced recipe's counter for key: key:fence within key's
// hash tag, so that on a cluster the two are in one slot and one script
// can touch both ({lock}:fence beside lock; {a}b:fence beside {a}b).
func FenceKey(key string) string { return hashslot.Beside(key, ":fence") }

// globEscape makes s match only itself as a Redis glob pattern.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// NewService makes the clients of the target a recipe is given
// (Config.Client and Config.Nodes): for a cluster, the one cluster client
// and no nodes.
func NewService(t access.Access, opTimeout time.Duration) (redis.UniversalClient, []*redis.Client) {
	if t.Cluster {
		return NewClusterClient(t, opTimeout), nil
	}
	nodes := NewClients(t, opTimeout)
	return nodes[0], nodes
}

// NewClients makes one client per independent node of the target, or the
// one client of a single node or a sentinel-monitored primary.
func NewClients(t access.Access, opTimeout time.Duration) []*redis.Client {
	if len(t.Nodes) <= 1 {
		return []*redis.Client{NewClient(t, opTimeout)}
	}
	var out []*redis.Client
	for _, addr := range t.Nodes {
		one := t
		one.Nodes = []string{addr}
		out = append(out, NewClient(one, opTimeout))
	}
	return out
}

// NewClient is the go-redis client every recipe runs on: no retries (a
// retried SET NX can be told "busy" by its own first attempt) and context
// deadlines honoured.
//
// With TLS the dialer makes the handshake itself (go-redis applies its
// TLSConfig only when it dials), verifying the server against the CA for
// the host it was asked to reach; the configuration is also in the
// client's Options().TLSConfig, for clients built from those options.
func NewClient(t access.Access, opTimeout time.Duration) *redis.Client {
	opts := clientOptions(t, opTimeout)
	if t.Master != "" {
		opts.MasterName, opts.Addrs = t.Master, t.Sentinels
		opts.SentinelUsername, opts.SentinelPassword = t.Username, t.Password
		return redis.NewFailoverClient(opts.Failover())
	}
	return redis.NewClient(opts.Simple())
}

// NewClusterClient is go-redis's cluster client on the target's seeds,
// under the rule of NewClient: it follows MOVED and ASK, and retries a
// command the server refused without running it (CLUSTERDOWN, TRYAGAIN)
// or one that could not be sent, but never one whose connection broke
// after it was sent: a retried SET NX can be told "busy" by its own first
// attempt.
func NewClusterClient(t access.Access, opTimeout time.Duration) *redis.ClusterClient {
	opts := clientOptions(t, opTimeout)
	opts.Addrs = t.Nodes
	cfg := opts.Cluster()
	// Routing by key alone: go-redis's command routing policies ask the
	// nodes for COMMAND first, which a lock client's ACL does not grant
	// (go-redis marks the switch experimental; with ReadOnly off nothing
	// else asks for COMMAND).
	cfg.DisableRoutingPolicies = true
	c := redis.NewClusterClient(cfg)
	c.OnNewNode(func(node *redis.Client) { node.AddHook(sentOnce{}) })
	return c
}

// sentOnce is the hook on every node of a cluster client that keeps the
// cluster client from resending a command whose fate is unknown: go-redis
// retries on io.EOF, timeouts and other network errors (found with
// errors.Is and errors.As), so the hook hides them in an error of its own
// that does not unwrap. An error that says the command never left (a
// failed dial) stays as it is.
type sentOnce struct{}

func (sentOnce) DialHook(next redis.DialHook) redis.DialHook { return next }

func (sentOnce) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if unknownOutcome(err) {
			err = &sentError{err}
			cmd.SetErr(err)
		}
		return err
	}
}

func (sentOnce) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		if unknownOutcome(err) {
			err = &sentError{err}
			for _, cmd := range cmds {
				if unknownOutcome(cmd.Err()) {
					cmd.SetErr(&sentError{cmd.Err()})
				}
			}
		}
		return err
	}
}

// unknownOutcome: a failure that is not the server's answer and not a
// dial that failed, so the command may have run.
func unknownOutcome(err error) bool {
	if err == nil || err == redis.Nil {
		return false
	}
	var re redis.Error
	if errors.As(err, &re) {
		return false
	}
	var op *net.OpError
	return !(errors.As(err, &op) && op.Op == "dial")
}

// sentError is a failure after the command may have been sent.
type sentError struct{ err error }

func (e *sentError) Error() string { return e.err.Error() }

// service is how another library's client reaches the service a go-redis
// client does: the same addresses, dialer (the worker's own proxies),
// login and TLS.
type service struct {
	addrs              []string
	dial               func(ctx context.Context, network, addr string) (net.Conn, error)
	username, password string
	tls                *tls.Config
	// cluster: addrs are a Redis Cluster's seeds.
	cluster bool
}

// serviceOf reads a go-redis client's service. A sentinel-monitored
// primary's address is go-redis's placeholder, which its dialer resolves
// to the primary.
func serviceOf(c redis.UniversalClient) service {
	switch c := c.(type) {
	case *redis.ClusterClient:
		o := c.Options()
		return service{o.Addrs, o.Dialer, o.Username, o.Password, o.TLSConfig, true}
	case *redis.Client:
		o := c.Options()
		return service{[]string{o.Addr}, o.Dialer, o.Username, o.Password, o.TLSConfig, false}
	}
	return service{}
}

// noDialBreaker is a pool size a run's failed dials in a row reach only
// after half a minute of a node refusing every few tens of milliseconds
// (a client's backoff between attempts); go-redis keeps a slice of that
// many idle connections' pointers per node, 8 KB.
const noDialBreaker = 1024

// clientOptions are the client options of the target, for any kind of client:
// a single node's (the first of Nodes), a sentinel target's (its sentinels
// given by the caller) or a cluster's (its seeds given by the caller).
func clientOptions(t access.Access, opTimeout time.Duration) *redis.UniversalOptions {
	dialer := &net.Dialer{Timeout: opTimeout}
	tlsConfig, tlsErr := tlsConfig(t)
	// A command whose connection could not be made never left the client:
	// certainly not done (ErrNotSent), whatever the reason (a refused
	// connection, a TLS handshake that never finished).
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		if mapped, ok := t.Dial[addr]; ok {
			addr = mapped
		}
		if tlsErr != nil {
			return nil, tlsErr
		}
		var conn net.Conn
		var err error
		if tlsConfig == nil {
			conn, err = dialer.DialContext(ctx, network, addr)
		} else {
			conn, err = dialTLS(ctx, dialer, network, addr, tlsConfig)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrNotSent, err)
		}
		return conn, nil
	}
	// One set of options serves both kinds of client; for a sentinel
	// target the addresses are the sentinels'.
	opts := &redis.UniversalOptions{
		Addrs:                 t.Nodes[:min(1, len(t.Nodes))],
		Dialer:                dial,
		MaxRetries:            -1,
		DialerRetries:         1,
		ContextTimeoutEnabled: true,
		DialTimeout:           opTimeout,
		ReadTimeout:           opTimeout,
		WriteTimeout:          opTimeout,
		// A worker uses a connection or two (a request and a renewal);
		// the pool is this large because go-redis stops dialing a node
		// after PoolSize dials in a row failed and then tries once a
		// second: with 4, a client kept off a restarted node for up to a
		// second was a double grant the run never saw. Through a proxy
		// every dial succeeded, so this was hidden until clients went
		// direct.
		PoolSize:        noDialBreaker,
		DisableIdentity: true,
		Username:        t.Username,
		Password:        t.Password,
		TLSConfig:       tlsConfig,
	}
	return opts
}

// tlsConfig is the target's TLS configuration: nil without TLS, an error
// when its CA file cannot be read (every dial then fails with it).
func tlsConfig(t access.Access) (*tls.Config, error) {
	if !t.TLS {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName}
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("tls: the CA file: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("tls: no PEM certificate in the CA file %s", t.CAFile)
		}
	}
	return cfg, nil
}

// dialTLS dials addr with dialer and makes a TLS handshake with cfg, for
// the host of addr unless cfg names a server, within ctx.
func dialTLS(ctx context.Context, dialer *net.Dialer, network, addr string, cfg *tls.Config) (net.Conn, error) {
	if cfg.ServerName == "" {
		cfg = cfg.Clone()
		cfg.ServerName, _, _ = net.SplitHostPort(addr)
	}
	return (&tls.Dialer{NetDialer: dialer, Config: cfg}).DialContext(ctx, network, addr)
}
