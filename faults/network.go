package faults

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"
)

// Network is an embedded toxiproxy with one proxy per link. Nothing talks to
// a node except through a link, so any link can be cut or slowed alone.
type Network struct {
	server *toxiproxy.ApiServer
	mu     sync.Mutex
	links  map[string]*proxied
}

// proxied is one proxied connection path, such as client 2 → n1, with
// every toxic on it, whoever added it.
type proxied struct {
	Name  string
	proxy *toxiproxy.Proxy
	mu    sync.Mutex
	toxic []string
	// seq numbers the toxics, so that two faults' toxics of one kind
	// stack on the link instead of clashing by name.
	seq int
	// refusers counts the holders that stopped the proxy (Refuse); it
	// listens again when the last of them heals.
	refusers int
	// removing counts the removals of toxics that outlasted
	// removeTimeout and are still under way.
	removing atomic.Int32
}

// removeTimeout bounds how long a heal waits for a toxic's removal.
// toxiproxy flushes what a latency toxic holds into the link's output as
// it removes it, up to 5 s a chunk, and holds the proxy's toxics locked
// meanwhile: on a link whose destination stopped reading, with seconds of
// latency queued, that is minutes (Shopify/toxiproxy#558; here a
// replication-lag of 6 s each way, its node killed, took 320 s).
const removeTimeout = 3 * time.Second

// remove removes toxics, one after another, waiting at most removeTimeout
// for all of them: removals still under way then finish on their own, and
// until they have, Faulted names the link and HealAll fails, so that no
// run starts on it.
func (l *proxied) remove(names []string) {
	if len(names) == 0 {
		return
	}
	done := make(chan struct{})
	go func() {
		for _, name := range names {
			l.proxy.Toxics.RemoveToxic(context.Background(), name)
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(removeTimeout):
		l.removing.Add(1)
		go func() {
			<-done
			l.removing.Add(-1)
		}()
	}
}

// Link is a proxied path as one holder (a fault's window) sees it: Heal
// removes what this holder added, and only that, so that two faults whose
// windows overlap on a link (a schedule followed, a+b) each end their
// own. Every Network.Link and Get is a holder of its own.
type Link struct {
	*proxied
	added   []string
	refused bool
}

// NewNetwork starts an embedded toxiproxy with no proxies.
func NewNetwork() *Network {
	// Metrics stay off: a nil container panics, and registering Prometheus
	// collectors twice panics too.
	return &Network{
		server: toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop()),
		links:  map[string]*proxied{},
	}
}

// Link creates (or returns) the proxy named name that forwards to upstream.
func (n *Network) Link(name, upstream string) (*Link, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if l, ok := n.links[name]; ok {
		return &Link{proxied: l}, nil
	}
	p := toxiproxy.NewProxy(n.server, name, "127.0.0.1:0", upstream)
	if err := n.server.Collection.Add(p, true); err != nil {
		return nil, fmt.Errorf("link %s: %w", name, err)
	}
	l := &proxied{Name: name, proxy: p}
	n.links[name] = l
	return &Link{proxied: l}, nil
}

// Proxy creates a link and returns its address; it is how topologies
// route their nodes' own traffic through the network.
func (n *Network) Proxy(name, upstream string) (string, error) {
	l, err := n.Link(name, upstream)
	if err != nil {
		return "", err
	}
	return l.Addr(), nil
}

// Get returns the link with the name, as a holder of its own, or nil.
func (n *Network) Get(name string) *Link {
	n.mu.Lock()
	defer n.mu.Unlock()
	if l, ok := n.links[name]; ok {
		return &Link{proxied: l}
	}
	return nil
}

// all returns every link, sorted by name.
func (n *Network) all() []*proxied {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]*proxied, 0, len(n.links))
	for _, l := range n.links {
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// HealAll removes every toxic from every link and starts every refusing
// one again; it returns what could not be healed.
func (n *Network) HealAll() error {
	var errs []error
	for _, l := range n.all() {
		errs = append(errs, l.healAll())
	}
	return errors.Join(errs...)
}

// Faulted names every link that still carries a toxic, with its toxics.
func (n *Network) Faulted() []string {
	var out []string
	for _, l := range n.all() {
		l.mu.Lock()
		faults := slices.Clone(l.toxic)
		if l.refusers > 0 {
			faults = append(faults, "refusing connections")
		}
		if l.removing.Load() > 0 {
			faults = append(faults, "toxics still being removed")
		}
		if len(faults) > 0 {
			out = append(out, l.Name+" ("+strings.Join(faults, ", ")+")")
		}
		l.mu.Unlock()
	}
	return out
}

// Close stops every proxy and closes their connections.
func (n *Network) Close() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.server.Collection.Clear()
	n.links = map[string]*proxied{}
}

// Addr is where clients connect to use the link.
func (l *Link) Addr() string { return l.proxy.Listen }

// Blackhole drops everything in both directions, like a partition that
// loses packets: connections stay open and requests go unanswered.
func (l *Link) Blackhole() error {
	return l.both("timeout", map[string]any{"timeout": 0})
}

// Refuse stops the link: its open connections close and new ones are
// refused, so a client learns at once that nothing it sends gets through
// and that nothing it sends from now on was sent (unlike Blackhole, where
// requests go unanswered and their outcome stays unknown).
func (l *Link) Refuse() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.refused {
		return
	}
	l.proxy.Stop()
	l.refusers++
	l.refused = true
}

// Delay adds d of latency in each direction (toxiproxy's latency is one-way).
func (l *Link) Delay(d time.Duration) error {
	return l.both("latency", map[string]any{"latency": d.Milliseconds(), "jitter": 0})
}

// DelayRequests adds d of latency to what clients send only: a request
// is held up on its way, its answer comes back at once.
func (l *Link) DelayRequests(d time.Duration) error {
	return l.add("latency", []string{"upstream"}, map[string]any{"latency": d.Milliseconds(), "jitter": 0})
}

func (l *Link) both(kind string, attrs map[string]any) error {
	return l.add(kind, []string{"upstream", "downstream"}, attrs)
}

func (l *Link) add(kind string, streams []string, attrs map[string]any) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, stream := range streams {
		name := fmt.Sprintf("%s_%s_%d", kind, stream, l.seq)
		l.seq++
		js := fmt.Sprintf(`{"name":%q,"type":%q,"stream":%q,"toxicity":1,"attributes":%s}`,
			name, kind, stream, attrsJSON(attrs))
		if _, err := l.proxy.Toxics.AddToxicJson(strings.NewReader(js)); err != nil {
			return fmt.Errorf("link %s: add %s: %w", l.Name, name, err)
		}
		l.toxic = append(l.toxic, name)
		l.added = append(l.added, name)
	}
	return nil
}

func attrsJSON(attrs map[string]any) string {
	keys := make([]string, 0, len(attrs))
	for k := range attrs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%q:%v", k, attrs[k])
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// Heal removes the toxics this holder added and, if it had the link
// refuse connections and no other holder still does, takes them again.
// Removing a blackhole closes the connections it held, so clients
// reconnect. A refusing link listens again on its own address; should that
// address have been taken meanwhile, it says so and stays refusing
// (Faulted names it).
func (l *Link) Heal() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.remove(l.added)
	for _, name := range l.added {
		l.toxic = slices.DeleteFunc(l.toxic, func(t string) bool { return t == name })
	}
	l.added = nil
	if !l.refused {
		return nil
	}
	l.refused = false
	l.refusers--
	if l.refusers > 0 {
		return nil
	}
	return l.listen()
}

// healAll removes every toxic of the link, whoever added it, and takes
// connections again.
func (l *proxied) healAll() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.remove(l.toxic)
	l.toxic = nil
	var err error
	if l.refusers > 0 {
		l.refusers = 0
		err = l.listen()
	}
	if l.removing.Load() > 0 {
		err = errors.Join(err, fmt.Errorf("link %s: toxics still being removed after %v (toxiproxy flushes what they hold)", l.Name, removeTimeout))
	}
	return err
}

// listen starts a stopped proxy again, under l.mu.
func (l *proxied) listen() error {
	var err error
	for try := 0; try < 50; try++ {
		if err = l.proxy.Start(); err == nil || errors.Is(err, toxiproxy.ErrProxyAlreadyStarted) {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	l.refusers = max(l.refusers, 1) // still refusing: Faulted names it
	return fmt.Errorf("link %s: listening again on %s: %w", l.Name, l.proxy.Listen, err)
}
