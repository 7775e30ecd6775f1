// Package faults injects the failures a run is tested under: network faults
// through an embedded toxiproxy (one proxy per link), process faults on nodes
// and clients, clock faults, and the seeded schedule (the nemesis) that
// decides when each happens, records every start and end in the history and
// checks that everything healed.
//
// Adding a fault is one file with a Fault value and one line in Registry: the
// fault declares what it needs of the topology (Needs, NeedsClock), the
// options it takes and how reports draw it (Drawing), and everything else
// (parsing, refusal of impossible combinations, `harness list`, the plots
// and pages, the contract tests) reads those.
package faults

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/lockharness/lockharness/cluster"
	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/internal/options"

	"github.com/lockharness/lockharness/internal/suggest"
)

// Registry lists every fault the nemesis can inject.
var Registry = []Fault{
	partition, latency, pauseNode, killNode, pauseClient, killClient,
	partitionPrimary, splitBrain, killPrimary, pausePrimary, replicationLag, failover,
	partitionMajorities, partitionMinority, pauseAcquire, pausePastRelease,
	clockJump, clockStrobe, clockSkew, clockDrift, delayWrite, clusterFailover, partitionHolder,
	partitionMembers,
}

// None is the nemesis name for a run without faults.
const None = "none"

// Fault is one kind of failure, with every trait the rest of the harness
// reads.
type Fault struct {
	Name    string
	Summary string
	// Drawing is how the reports draw its windows: a colour of its own
	// and the words its entry in the key adds to its name. The reports
	// find it by name; a fault that declares none takes a colour of their
	// palette. TestEveryFaultIsDrawnInAColourOfItsOwn holds the colour
	// apart from every other fault's, TestEveryFaultIsDrawnAsItDeclares
	// (runner) from the colours the timeline draws operations in.
	Drawing history.Drawing
	// Needs lists what the topology must offer.
	Needs []cluster.Capability
	// NeedsClock: the fault moves nodes' wall clocks, so the nodes must run
	// under the clock shim (cluster.Spec.Clock).
	NeedsClock bool
	// NeedsDatabase: the fault acts on the clients' links to a real
	// resource (--resource postgres).
	NeedsDatabase bool
	// CutsClientLinks: the fault cuts or slows the clients' links to the
	// nodes (Env.ClientLinks). A run none of whose faults does connects
	// its clients to the nodes directly, through no proxy; a fault that
	// asks for a client's links there makes the run a harness error.
	CutsClientLinks bool
	// StopsClients: the fault freezes or kills a client's worker
	// (Env.Freeze). A run none of whose faults does runs its built-in
	// workers inside the harness, which nothing can freeze; a fault that
	// freezes a client there makes the run a harness error.
	StopsClients bool
	// Waits: the fault waits for a moment of the workload (a grant, a
	// client at a pause point) before it begins, so a replay starts it a
	// little before the moment it began (Step).
	Waits bool
	// Scored lists the libs scorecard's tables that score every library
	// under the fault (where its topology offers it).
	Scored []Scorecard
	// Options are what the fault takes after its name (kill-node:delay=4s).
	// An option named "node" names a node: holder, random, or a node of the
	// topology.
	Options []options.Spec
	// Run injects the fault once with its options, holds it, heals it, and
	// records its window with env.Begin and the returned end. It must heal
	// before returning, also when ctx is cancelled.
	Run func(ctx context.Context, env *Env, rng *rand.Rand, opts options.Values) error
}

// Scorecard is one table of the libs scorecard.
type Scorecard string

// The libs scorecard's tables.
const (
	// ScoreLibraries scores every library on its own topology.
	ScoreLibraries Scorecard = "libraries"
	// ScoreCluster scores a library on a Redis Cluster it also runs on.
	ScoreCluster Scorecard = "cluster"
	// ScoreLongHold scores every library holding for longer than its TTL,
	// so that only renewal keeps the lock.
	ScoreLongHold Scorecard = "long-hold"
	// ScoreFailover scores every library on each topology with failover it
	// runs on, holding past its TTL while the primary is lost: a watchdog
	// must renew on the new primary, and a grant the promoted node lacks
	// is lost.
	ScoreFailover Scorecard = "failover"
)

// ScoredIn names the faults the table scores, in the registry's order.
func ScoredIn(table Scorecard) []string {
	var names []string
	for _, f := range Registry {
		if slices.Contains(f.Scored, table) {
			names = append(names, f.Name)
		}
	}
	return names
}

// Available reports whether the fault can be injected on the topology, or
// says why not.
func (f Fault) Available(c *cluster.Cluster) error {
	for _, need := range f.Needs {
		if err := c.Can(need); err != nil {
			return fmt.Errorf("nemesis %s: %w", f.Name, err)
		}
	}
	if f.NeedsClock {
		if err := c.MoveClocks(); err != nil {
			return fmt.Errorf("nemesis %s: %w", f.Name, err)
		}
	}
	return nil
}

// Injection is a fault with the options a nemesis list gave it.
type Injection struct {
	Fault
	Options options.Values
}

// String spells the injection as a nemesis list does: "kill-node:delay=4s".
func (in Injection) String() string { return in.Options.With(in.Name) }

// Available is Fault.Available, and checks that a node option names a node
// of the topology.
func (in Injection) Available(c *cluster.Cluster) error {
	if err := in.Fault.Available(c); err != nil {
		return err
	}
	if node, ok := in.Options[optNode]; ok {
		words := in.Fault.NodeWords()
		if !slices.Contains(words, node) && !slices.Contains(c.NodeNames(), node) {
			return fmt.Errorf("nemesis %s: no node %q in topology %s (valid: %s, %s)",
				in, node, c.Topology, strings.Join(words, ", "), strings.Join(c.NodeNames(), ", "))
		}
		if node == nodePrimary && c.Can(cluster.Majorities) == nil {
			return fmt.Errorf("nemesis %s: topology %s has no primary: its nodes are independent (valid: %s, %s)", in, c.Topology,
				strings.Join(slices.DeleteFunc(slices.Clone(words), func(w string) bool { return w == nodePrimary || w == nodeReplica || w == nodeReplicas }), ", "), strings.Join(c.NodeNames(), ", "))
		}
		if (node == nodeReplica || node == nodeReplicas) && c.Can(cluster.Replication) != nil {
			return fmt.Errorf("nemesis %s: topology %s has no replicas (valid: %s, %s)", in, c.Topology,
				strings.Join(slices.DeleteFunc(words, func(w string) bool { return w == nodeReplica || w == nodeReplicas }), ", "), strings.Join(c.NodeNames(), ", "))
		}
	}
	if in.Options[optData] == dataLost {
		if err := c.LoseData(); err != nil {
			return fmt.Errorf("nemesis %s: %w", in, err)
		}
	}
	if lost, ok := in.Options[optLost]; ok {
		names := strings.Split(lost, "/")
		for _, name := range names {
			if !slices.Contains(c.NodeNames(), name) {
				return fmt.Errorf("nemesis %s: no node %q in topology %s (valid: %s)", in, name, c.Topology, strings.Join(c.NodeNames(), ", "))
			}
		}
		if most := len(c.NodeNames()) - c.Quorum(); len(names) > most {
			return fmt.Errorf("nemesis %s: %d nodes are not a minority of %d (at most %d)", in, len(names), len(c.NodeNames()), most)
		}
	}
	return nil
}

// FitsClients reports a clients option that names a slot the run does
// not have.
func (n Nemesis) FitsClients(clients int) error {
	var errs []error
	for _, g := range n {
		for _, in := range g {
			slots, _ := in.Options.Slots(optClients)
			for _, s := range slots {
				if s >= clients {
					errs = append(errs, fmt.Errorf("nemesis %s: no client %d among %d clients (slots 0 to %d)", in, s, clients, clients-1))
					break
				}
			}
		}
	}
	return errors.Join(errs...)
}

// run injects the fault once. It runs on a copy of the options, into
// which the fault writes what it draws (pin), so that its start event
// records every option as it ran and a replay can pin them all.
func (in Injection) run(ctx context.Context, env *Env, rng *rand.Rand) error {
	opts := maps.Clone(in.Options)
	if opts == nil {
		opts = options.Values{}
	}
	e := *env
	e.running, e.ran = in.Name, opts
	e.promotion = promotionWaited(ctx)
	return in.Fault.Run(ctx, &e, rng, opts)
}

// Group is faults injected together: the nemesis starts them at the same
// moment and waits for all of them, so they overlap by construction.
type Group []Injection

// String is the group as written on the command line: a+b.
func (g Group) String() string {
	names := make([]string, len(g))
	for i, in := range g {
		names[i] = in.String()
	}
	return strings.Join(names, "+")
}

// Nemesis is a parsed nemesis list: the groups the schedule picks from, one
// at a time. No groups is a run without faults.
type Nemesis []Group

// MovesRoles reports whether a fault of the list may promote a replica (it
// needs a failover): a topology it ran on may not start the next run as
// planned.
func (n Nemesis) MovesRoles() bool {
	return n.any(func(f Fault) bool { return slices.Contains(f.Needs, cluster.Failover) })
}

// any reports whether a fault of the list has the trait.
func (n Nemesis) any(trait func(Fault) bool) bool {
	for _, g := range n {
		for _, in := range g {
			if trait(in.Fault) {
				return true
			}
		}
	}
	return false
}

// String is the list as written on the command line: "none", or groups
// joined by commas.
func (n Nemesis) String() string {
	if len(n) == 0 {
		return None
	}
	parts := make([]string, len(n))
	for i, g := range n {
		parts[i] = g.String()
	}
	return strings.Join(parts, ",")
}

// WithOption is the nemesis with option key set to value on every
// injection of the named fault (the value is not checked: parse the result
// again to check it).
func (n Nemesis) WithOption(fault, key, value string) Nemesis {
	out := make(Nemesis, len(n))
	for i, g := range n {
		out[i] = make(Group, len(g))
		for j, in := range g {
			if in.Name == fault {
				opts := options.Values{key: value}
				for k, v := range in.Options {
					if k != key {
						opts[k] = v
					}
				}
				in.Options = opts
			}
			out[i][j] = in
		}
	}
	return out
}

// NeedsClock reports whether any fault moves clocks, so that the cluster
// must be started with cluster.Spec.Clock.
func (n Nemesis) NeedsClock() bool { return n.any(func(f Fault) bool { return f.NeedsClock }) }

// CutsClientLinks reports whether a fault of the list cuts or slows the
// clients' links, which the clients must then reach the nodes through. A
// schedule's faults are its plan's nemesis, so this covers them too.
func (n Nemesis) CutsClientLinks() bool {
	return n.any(func(f Fault) bool { return f.CutsClientLinks })
}

// StopsClients reports whether a fault of the list freezes or kills a
// client's worker, which then must be a process of its own.
func (n Nemesis) StopsClients() bool {
	return n.any(func(f Fault) bool { return f.StopsClients })
}

// NeedsDatabase reports whether any fault acts on the links to a real
// resource, which the run must then have.
func (n Nemesis) NeedsDatabase() []string {
	var names []string
	for _, g := range n {
		for _, in := range g {
			if in.NeedsDatabase && !slices.Contains(names, in.Name) {
				names = append(names, in.Name)
			}
		}
	}
	return names
}

// Available reports every fault that cannot be injected on the topology,
// each with the reason.
func (n Nemesis) Available(c *cluster.Cluster) error {
	var errs []error
	for _, g := range n {
		for _, in := range g {
			errs = append(errs, in.Available(c))
		}
	}
	return errors.Join(errs...)
}

// Parse reads a nemesis list: comma-separated groups, each one fault or
// several joined by "+" to be injected together, each fault optionally
// followed by options after a colon (kill-node:delay=4s). A comma followed
// by name=value continues the options of the fault before it
// (clock-jump:by=3s,node=holder); flags after the first option need a colon.
// "none" alone means no faults.
func Parse(list string) (Nemesis, error) {
	if strings.TrimSpace(list) == None {
		return nil, nil
	}
	var out Nemesis
	for _, item := range groupItems(list) {
		var g Group
		for _, spec := range strings.Split(item, "+") {
			spec = strings.TrimSpace(spec)
			name, rest, hasOpts := options.Split(spec)
			if name == None {
				return nil, fmt.Errorf("nemesis %q: \"none\" cannot be combined with faults", list)
			}
			f, ok := Lookup(name)
			if !ok {
				return nil, suggest.Unknown("nemesis", name, Names(), "; join faults with + to inject them together")
			}
			in := Injection{Fault: f, Options: options.Values{}}
			if hasOpts {
				if len(f.Options) == 0 {
					return nil, fmt.Errorf("nemesis %q: %s takes no options", spec, name)
				}
				var err error
				if in.Options, err = options.Parse(rest, f.Options); err != nil {
					return nil, fmt.Errorf("nemesis %q: %s: %w", spec, name, err)
				}
			}
			g = append(g, in)
		}
		out = append(out, g)
	}
	return out, nil
}

// groupItems splits a nemesis list at the commas between groups, keeping
// a comma that continues a fault's options (",node=holder") inside its item.
func groupItems(list string) []string {
	var items []string
	for _, part := range strings.Split(list, ",") {
		k, _, isOption := strings.Cut(part, "=")
		continues := isOption && !strings.ContainsAny(k, ":+") && len(items) > 0 &&
			strings.Contains(items[len(items)-1][strings.LastIndex(items[len(items)-1], "+")+1:], ":")
		if continues {
			items[len(items)-1] += "," + part
			continue
		}
		items = append(items, part)
	}
	return items
}

// Lookup finds a fault by name.
func Lookup(name string) (Fault, bool) {
	for _, f := range Registry {
		if f.Name == name {
			return f, true
		}
	}
	return Fault{}, false
}

// Names lists "none" and every fault, sorted.
func Names() []string {
	names := []string{None}
	for _, f := range Registry {
		names = append(names, f.Name)
	}
	sort.Strings(names)
	return names
}

// Option names and values shared by several faults.
const (
	optFor   = "for"
	optNode  = "node"
	optDelay = "delay"
	optBy    = "by"

	nodeHolder   = "holder"
	nodeRandom   = "random"
	nodePrimary  = "primary"
	nodeReplica  = "replica"
	nodeReplicas = "replicas"
)

// forOpt is the option that fixes how long a fault holds.
func forOpt(def string) options.Spec {
	return options.Spec{Name: optFor, Kind: options.Duration, Summary: "how long the fault holds (default " + def + ")"}
}

// nodeOpt is the option that picks the node a fault hits.
func nodeOpt(def string, holder bool) options.Spec {
	arg := "random|NAME"
	if holder {
		arg = "holder|random|NAME"
	}
	return options.Spec{Name: optNode, Kind: options.Word, Arg: arg, Summary: "the node it hits (default " + def + ")"}
}

// roleNodeOpt is the node option of a fault that can also hit nodes by
// their role for the lock's key: its primary, one of its replicas, or all
// of them (roleNodes).
func roleNodeOpt(def string) options.Spec {
	return options.Spec{Name: optNode, Kind: options.Word, Arg: strings.Join([]string{nodePrimary, nodeReplica, nodeReplicas, nodeHolder, nodeRandom, "NAME"}, "|"),
		Summary: "the node it hits: the key's primary, one of its replicas, all of them, the holder's node, one drawn, or one named (default " + def + ")"}
}

// NodeWords are the words the fault's node option takes besides a node's
// name (holder, random, ...); none when it has no node option.
func (f Fault) NodeWords() []string {
	for _, o := range f.Options {
		if o.Name == optNode {
			return slices.DeleteFunc(strings.Split(o.Arg, "|"), func(w string) bool { return w == "NAME" })
		}
	}
	return nil
}

// hold is how long a fault holds: its for option, or a draw in [lo, hi].
func hold(opts options.Values, rng *rand.Rand, lo, hi time.Duration) time.Duration {
	return pinnedDuration(opts, optFor, func() time.Duration { return between(rng, lo, hi).Round(time.Millisecond) })
}

// pinnedDuration is a duration option's value, or what draw returns,
// which it pins.
func pinnedDuration(opts options.Values, name string, draw func() time.Duration) time.Duration {
	d := opts.Duration(name, draw)
	pin(opts, name, d.String())
	return d
}

// pin writes a value the fault drew into its options as it runs (see
// Injection.run); nil options, a fault run on its own, keep nothing.
func pin(opts options.Values, name, value string) {
	if opts != nil {
		opts[name] = value
	}
}

// sleep waits for d or until ctx ends, and reports whether it waited fully.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// between draws a duration uniformly in [lo, hi].
func between(rng *rand.Rand, lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(rng.Int63n(int64(hi-lo)+1))
}

// scale multiplies d by f.
func scale(d time.Duration, f float64) time.Duration { return time.Duration(float64(d) * f) }

// Env is what faults act on.
type Env struct {
	Cluster *cluster.Cluster
	Net     *Network
	Clients Clients
	Rec     *history.Recorder
	// NumClients is the number of client slots.
	NumClients int
	TTL        time.Duration
	// Hold is how long a client keeps the lock after its write.
	Hold time.Duration
	// Key is the key the primary-side faults aim at, where the lock keeps
	// its grant on the (first) lock key: on a cluster, the shard whose slots
	// hold it.
	Key string
	// Log reports progress to the person running the harness.
	Log func(format string, args ...any)
	// Until is when the run's time limit ends the faults (zero: no
	// limit known); a window still open then is healed early, and its end
	// says so.
	Until time.Time
	// ClientsDirect: the clients reach the nodes through no link (no
	// planned fault CutsClientLinks). Undeclared then collects the faults
	// that asked for a client's links all the same; the run is a harness
	// error, for they cut nothing.
	ClientsDirect bool
	// ClientsInside: the clients' workers run inside the harness (no
	// planned fault StopsClients). Undeclared then collects the faults
	// that froze a client all the same.
	ClientsInside bool
	Undeclared    *Undeclared
	// running and ran are the name and options of the fault this copy of
	// the environment runs (Injection.run), recorded with its window.
	running string
	ran     options.Values
	// promotion is the promotion a followed step waited for before the
	// fault began, recorded with its window.
	promotion *history.AfterPromotion
	// down are the outages the fault caused (Down), recorded with its end.
	down []history.Outage
}

// DownIf notes, just before the fault restarts n, that n served nobody
// from from (after its kill was confirmed) until now; the fault's end
// records it. Only what this fault certainly caused is noted: n was up
// when it struck (wasUp), and is still down now, so that another fault's
// kill or restart of the same node meanwhile claims nothing.
func (e *Env) DownIf(wasUp bool, n cluster.Node, from time.Duration) {
	until := e.Rec.Now()
	if !wasUp || n.Running() {
		return
	}
	e.down = append(e.down, history.Outage{Node: n.Name(), From: int64(from), Until: int64(until), Of: len(e.Cluster.NodeNames())})
}

// Clients is what client faults need from the workload. To freeze or
// kill a client a fault calls Env.Freeze, which a workload offers by
// freezer: a run whose workers are inside the harness has none to freeze.
type Clients interface {
	// RecipePoint is the recipe's own pause point (naive: between SETNX and
	// EXPIRE; redlock: with acquire replies in flight), or before-write.
	RecipePoint() string
	// AwaitGrant returns the slot of the next client granted the lock.
	AwaitGrant(ctx context.Context) (int, error)
	// AwaitHolder returns the client holding the lock now and for how
	// long it has held it, or the next client granted it (held 0).
	AwaitHolder(ctx context.Context) (slot int, held time.Duration, err error)
	// AwaitRelease returns the slot of the next client that released it.
	AwaitRelease(ctx context.Context) (int, error)
	// Frozen lists the slots of clients stopped at a pause point now.
	Frozen() []int
}

// Begin records the start of the running fault's window, with what it
// acts on and when it struck as facts and the same in words (detail), and
// returns the function that records its end, with what the fault left
// behind (end facts, if any) and its words. The window's subject (its
// nodes or clients) is the start's, on both events.
func (e *Env) Begin(facts history.Facts, detail string) func(detail string, end ...history.Facts) {
	fault := e.running
	if e.promotion != nil {
		facts.AfterPromotion = e.promotion
		detail = fmt.Sprintf("%v after %s's promotion; %s", time.Duration(e.promotion.DelayNs), e.promotion.Node, detail)
	}
	start := e.Rec.Record(history.Event{Type: history.Info, Process: history.Nemesis, F: fault, Phase: history.Start, Target: facts.Subject(), Detail: detail,
		Options: e.ran.String(), Facts: &facts})
	e.Log("%7.3fs  %-13s start  %s %s", start.At().Seconds(), fault, start.Target, detail)
	return func(endDetail string, end ...history.Facts) {
		ended := history.Facts{}
		if len(end) > 0 {
			ended = end[0]
		}
		ended.Nodes, ended.Clients, ended.AllClients, ended.Key, ended.Shard = facts.Nodes, facts.Clients, facts.AllClients, facts.Key, facts.Shard
		if !e.Until.IsZero() && !time.Now().Before(e.Until) {
			// What the start said it drew is not what ran.
			endDetail += " (cut short by the time limit)"
			ended.CutShort = true
		}
		done := e.Rec.Record(history.Event{Type: history.Info, Process: history.Nemesis, F: fault, Phase: history.End, Target: start.Target, Detail: endDetail,
			Down: e.down, Facts: &ended})
		e.down = nil
		e.Log("%7.3fs  %-13s end    %s %s", done.At().Seconds(), fault, start.Target, endDetail)
	}
}

// Undeclared are the faults that acted on what their run does not have
// because none of its faults declared it: a client's links when the clients
// are direct, a client's worker process when the workers are inside the
// harness.
type Undeclared struct {
	mu    sync.Mutex
	links []string
	stops []string
}

// Err names them, or is nil.
func (u *Undeclared) Err() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	var errs []error
	if len(u.links) > 0 {
		errs = append(errs, fmt.Errorf("fault %s acts on the clients' links but does not declare CutsClientLinks: the clients of this run reached the nodes directly, so it cut nothing", strings.Join(u.links, ", ")))
	}
	if len(u.stops) > 0 {
		errs = append(errs, fmt.Errorf("fault %s freezes or kills a client but does not declare StopsClients: the workers of this run ran inside the harness, so it stopped nothing", strings.Join(u.stops, ", ")))
	}
	return errors.Join(errs...)
}

// note adds the running fault to one of e.Undeclared's lists.
func (e *Env) note(list *[]string) {
	e.Undeclared.mu.Lock()
	defer e.Undeclared.mu.Unlock()
	if !slices.Contains(*list, e.running) {
		*list = append(*list, e.running)
	}
}

// noClientLinks reports whether the clients are direct, and then notes the
// fault asking for their links as undeclared.
func (e *Env) noClientLinks() bool {
	if !e.ClientsDirect {
		return false
	}
	if e.Undeclared != nil {
		e.note(&e.Undeclared.links)
	}
	return true
}

// errClientsInside is why a client of a run whose workers are inside the
// harness cannot be frozen.
var errClientsInside = errors.New("the clients' workers run inside the harness, where nothing can freeze them")

// freezer is a workload whose clients a fault can freeze.
type freezer interface {
	// Freeze waits for a client to stop at the named pause point.
	Freeze(ctx context.Context, point string) (client int, resume, kill func() error, err error)
}

// Freeze waits for a client to stop at the named pause point, and returns
// it with the functions that resume it or kill it. A run whose workers are
// inside the harness freezes nothing: the fault is noted as undeclared
// (it does not declare StopsClients), and the run becomes a harness error.
func (e *Env) Freeze(ctx context.Context, point string) (client int, resume, kill func() error, err error) {
	if e.ClientsInside {
		if e.Undeclared != nil {
			e.note(&e.Undeclared.stops)
		}
		return 0, nil, nil, errClientsInside
	}
	f, ok := e.Clients.(freezer)
	if !ok {
		return 0, nil, nil, errors.New("this workload's clients cannot be frozen")
	}
	return f.Freeze(ctx, point)
}

// ClientLinks are client slot's links to every node and sentinel.
func (e *Env) ClientLinks(slot int) []*Link {
	if e.noClientLinks() {
		return nil
	}
	var out []*Link
	for _, name := range e.Cluster.ClientLinks(slot) {
		if l := e.Net.Get(name); l != nil {
			out = append(out, l)
		}
	}
	return out
}

// DatabaseLinkName names client slot's link to the database of a run
// with a real resource.
func DatabaseLinkName(slot int) string { return fmt.Sprintf("c%d-postgres", slot) }

// DatabaseLink is client slot's link to the database, nil when the run has
// none.
func (e *Env) DatabaseLink(slot int) *Link { return e.Net.Get(DatabaseLinkName(slot)) }

// ClientLink is client slot's link to one node.
func (e *Env) ClientLink(slot int, node string) *Link {
	if e.noClientLinks() {
		return nil
	}
	return e.Net.Get(e.Cluster.ClientLink(slot, node))
}

// InternalLinks are the links a node's peers and monitors reach it
// through: its replication and, on a cluster, its bus both ways.
func (e *Env) InternalLinks(node string) ([]*Link, error) {
	names, err := e.Cluster.InternalLinks(node)
	if err != nil {
		return nil, err
	}
	var out []*Link
	for _, name := range names {
		l := e.Net.Get(name)
		if l == nil {
			return nil, fmt.Errorf("no link %s", name)
		}
		out = append(out, l)
	}
	return out, nil
}
