// Package locks holds the lock recipes under test behind one Locker
// interface. Recipes run inside worker processes, against a go-redis client
// whose every connection goes through the harness's proxies.
//
// Adding a recipe is one file with a Recipe value and one line in Recipes.
package locks

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockharness/lockharness/internal/options"
	"github.com/lockharness/lockharness/internal/version"
)

// Recipes is the registry: every recipe the harness can test.
var Recipes = []Recipe{naive, del, cad, renew, fenced, wait, redlock, redsyncRecipe, redislockRecipe, rueidislockRecipe}

// Recipe names a lock implementation and carries every trait of it that
// the rest of the harness reads.
type Recipe struct {
	Name    string
	Summary string
	// Points are the pause points inside the recipe, in the order a client
	// reaches them. A client killed at one of them shows what a crash there
	// leaves behind.
	Points []string
	// Topologies the recipe runs on; the first is the one it is built for
	// (the libs suite scores it there).
	Topologies []string
	// Extends is set for recipes whose lockers implement Extender: the
	// workload then extends each lease after its write, as a caller of the
	// library would before a long step.
	Extends bool
	// Fences is set for recipes whose grants carry a fencing token: the
	// protected resource then refuses writes with an older fence.
	Fences bool
	// Library is the Go module of the library the recipe adapts; empty for
	// the harness's own recipes.
	Library string
	// Options are what the recipe takes after its name
	// (redsync:tries=1); New finds their values in Config.Options.
	Options []options.Spec
	New     func(Config) Locker
}

// Supports reports whether the recipe runs on the topology.
func (r Recipe) Supports(topology string) bool { return slices.Contains(r.Topologies, topology) }

// Lookup returns the recipe with the name, or an error listing the valid ones.
func Lookup(name string) (Recipe, error) {
	for _, r := range Recipes {
		if r.Name == name {
			return r, nil
		}
	}
	return Recipe{}, fmt.Errorf("unknown lock %q (valid: %s)", name, strings.Join(Names(), ", "))
}

// LibraryVersions are the versions of the libraries the recipes adapt, by
// Go module, as compiled into this binary.
func LibraryVersions() map[string]string {
	out := map[string]string{}
	for _, r := range Recipes {
		if r.Library != "" {
			out[r.Library] = version.Module(r.Library)
		}
	}
	return out
}

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
	// (often the only) node.
	Client *redis.Client
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
)

// Definite reports whether err certainly means the operation did not take
// effect (fail), as opposed to an unknown outcome (info) such as a timeout
// or a broken connection, after which the command may still have run.
func Definite(err error) bool {
	if err == nil || errors.Is(err, ErrBusy) || errors.Is(err, ErrNotHeld) || errors.Is(err, ErrNoQuorum) || errors.Is(err, ErrNotSent) {
		return true
	}
	var re redis.Error
	if errors.As(err, &re) {
		msg := re.Error()
		for _, prefix := range []string{"READONLY", "NOAUTH", "LOADING", "WRONGTYPE", "NOSCRIPT", "ERR", "MASTERDOWN", "NOREPLICAS"} {
			if strings.HasPrefix(msg, prefix) {
				return true
			}
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

// Target is where a client finds the lock service: one address, several
// independent nodes (Redlock), or a sentinel-monitored primary.
type Target struct {
	Addr string
	// Addrs are independent nodes, each reached through its own address.
	Addrs []string
	// Master and Sentinels select go-redis's failover client.
	Master    string
	Sentinels []string
	// Dial maps an address the servers announce (a node's internal proxy)
	// to this client's own proxy for that node, so each client can be cut
	// off from one node alone.
	Dial map[string]string
}

// NewClients makes one client per independent node of the target, or the
// one client of a single node or a sentinel-monitored primary.
func NewClients(t Target, opTimeout time.Duration) []*redis.Client {
	if len(t.Addrs) == 0 {
		return []*redis.Client{NewClient(t, opTimeout)}
	}
	var out []*redis.Client
	for _, addr := range t.Addrs {
		out = append(out, NewClient(Target{Addr: addr, Dial: t.Dial}, opTimeout))
	}
	return out
}

// NewClient is the go-redis client every recipe runs on: no retries (a
// retried SET NX can be told "busy" by its own first attempt) and context
// deadlines honoured.
func NewClient(t Target, opTimeout time.Duration) *redis.Client {
	dialer := &net.Dialer{Timeout: opTimeout}
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		if mapped, ok := t.Dial[addr]; ok {
			addr = mapped
		}
		return dialer.DialContext(ctx, network, addr)
	}
	// One set of options serves both kinds of client; for a sentinel
	// target the addresses are the sentinels'.
	opts := &redis.UniversalOptions{
		Addrs:                 []string{t.Addr},
		Dialer:                dial,
		MaxRetries:            -1,
		DialerRetries:         1,
		ContextTimeoutEnabled: true,
		DialTimeout:           opTimeout,
		ReadTimeout:           opTimeout,
		WriteTimeout:          opTimeout,
		PoolSize:              4,
		DisableIdentity:       true,
	}
	if t.Master != "" {
		opts.MasterName, opts.Addrs = t.Master, t.Sentinels
		return redis.NewFailoverClient(opts.Failover())
	}
	return redis.NewClient(opts.Simple())
}
