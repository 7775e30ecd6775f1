package cluster

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/lockharness/lockharness/access"
)

// Etcd is the etcd topology's name.
const Etcd = "etcd"

// DefaultEtcdMembers is the size of an etcd topology unless told otherwise.
const DefaultEtcdMembers = 3

// Consensus: members agree through a consensus protocol (Raft) over peer
// links the network can cut one pair and one direction at a time
// (PeerLinks).
const Consensus Capability = "consensus"

// PersistWAL is how an etcd member keeps its data: its write-ahead log,
// synced to disk before it answers, always. A killed member restarts with
// its data directory.
const PersistWAL = "wal"

// etcdHeartbeat and etcdElection are the members' Raft timings: a tenth of
// etcd's defaults' election timeout apart from a heartbeat, as etcd
// advises, but shorter than its defaults (100 ms, 1 s) so that a lost
// leader is replaced within a TTL. The server's shortest lease is 1.5
// election timeouts rounded up to a second: 1 s with these.
const (
	etcdHeartbeat = 50 * time.Millisecond
	etcdElection  = 500 * time.Millisecond
)

// etcdTopology is a cluster of etcd members (Debian's etcd-server) on the
// local backend: the coordination service a design review weighs against
// Redis, under the same faults. Each member's client traffic goes through
// each client's links, its peer traffic through a link per pair and
// direction (an HTTP-aware router tells the senders apart by the member ID
// every Raft request names).
var etcdTopology = topology{
	name:        Etcd,
	summary:     fmt.Sprintf("an etcd cluster (Debian's etcd-server; --nodes 3|5, default %d), heartbeat %v, election %v", DefaultEtcdMembers, etcdHeartbeat, etcdElection),
	has:         []Capability{access.Etcd, NodeControl, Consensus},
	fixedClocks: "etcd is a Go program, which reads the clock without the C library the clock shim takes the place of, and its leases count time on the leader's monotonic clock",
	persistence: PersistWAL,
	plan: func(s Spec) (plan, error) {
		n := s.Nodes
		if n == 0 {
			n = DefaultEtcdMembers
		}
		switch {
		case n != 3 && n != 5:
			return plan{}, fmt.Errorf("an etcd topology has 3 or 5 members, not %d", n)
		case s.Backend == BackendDocker:
			return plan{}, fmt.Errorf("topology etcd runs on the local backend only: the docker backend's node image carries redis-server, not etcd")
		case s.Auth || s.TLS:
			return plan{}, fmt.Errorf("topology etcd runs without --auth and --tls (not built for etcd yet)")
		case s.Persistence != "" && s.Persistence != PersistNone && s.Persistence != PersistWAL:
			return plan{}, fmt.Errorf("an etcd member always keeps its write-ahead log (persistence %s); --persistence %s is Redis's", PersistWAL, s.Persistence)
		}
		var p plan
		for i := 1; i <= n; i++ {
			p.nodes = append(p.nodes, fmt.Sprintf("n%d", i))
		}
		return p, nil
	},
	start: startEtcd,
	access: func(c *Cluster, link func(string) string) access.Access {
		a := eachNode(c, link)
		a.Etcd = true
		return a
	},
	// As planned: every member healthy again (one that was cut off takes
	// a moment to learn the new term once its links heal).
	asPlanned: func(ctx context.Context, c *Cluster) error {
		for _, n := range c.Nodes {
			for {
				err := etcdHealthy(ctx, n.Addr())
				if err == nil {
					break
				}
				select {
				case <-ctx.Done():
					return fmt.Errorf("%s: %w", n.Name(), err)
				case <-time.After(20 * time.Millisecond):
				}
			}
		}
		return nil
	},
	wipe:    wipeEtcd,
	keys:    func(ctx context.Context, n Node) (int64, error) { return etcdKeys(ctx, n.Addr()) },
	version: etcdVersion,
}

// etcdMember is what an etcd member runs with besides a node's name,
// directory and port (its client port).
type etcdMember struct {
	peerPort int
	// advertised is the address its peers dial: its router.
	advertised string
	// initialCluster is every member's name=peer URL; token the cluster's;
	// state is new, or existing for a member added back.
	initialCluster, token, state string
	// lost: the member's data directory was removed while it was down
	// (LoseData), so it must be added back as a new member before it
	// starts (rejoin).
	lost   bool
	rejoin func(ctx context.Context, n *serverConf) error
}

// peerLinkName names the link that carries from's Raft traffic to to.
func peerLinkName(from, to string) string { return "peer-" + from + "-" + to }

func startEtcd(ctx context.Context, c *Cluster) error {
	s := c.spec
	if s.Link == nil {
		return fmt.Errorf("topology etcd needs a Link function for its peer links")
	}
	if _, err := exec.LookPath("etcd"); err != nil {
		return fmt.Errorf("etcd not found on PATH (run `make setup`, which installs Debian's etcd-server): %w", err)
	}
	names := c.planned.nodes
	clientPorts, peerPorts := map[string]int{}, map[string]int{}
	for _, name := range names {
		var err error
		if clientPorts[name], err = FreePort(); err != nil {
			return err
		}
		if peerPorts[name], err = FreePort(); err != nil {
			return err
		}
	}
	// The routers listen first: their addresses are the peer URLs, from
	// which etcd derives each member's ID, which the routers need.
	token := "lockharness-" + randomHex(6)
	routers := map[string]*busRouter{}
	for _, to := range names {
		r, err := newRouter(to, map[string]string{}, etcdSender)
		if err != nil {
			return err
		}
		c.closers = append(c.closers, r.close)
		routers[to] = r
	}
	var initial []string
	for _, name := range names {
		initial = append(initial, fmt.Sprintf("%s=%s", name, peerURL(routers[name])))
	}
	c.internal = map[string]string{}
	for _, to := range names {
		upstream := "127.0.0.1:" + strconv.Itoa(peerPorts[to])
		// A request that names no sender (a peer asking a member's
		// version) comes in through the member's own link.
		addr, err := s.Link(internalLinkName(to), upstream)
		if err != nil {
			return err
		}
		routers[to].route("", addr)
		c.internal[to] = addr
		for _, from := range names {
			if from == to {
				continue
			}
			if addr, err = s.Link(peerLinkName(from, to), upstream); err != nil {
				return err
			}
			routers[to].route(etcdMemberID(peerURL(routers[from]), token), addr)
		}
	}
	// A member's write-ahead log preallocates 64 MB: the data directories
	// go when the topology stops (after its members), the logs stay.
	c.closers = append(c.closers, func() {
		for _, name := range names {
			os.RemoveAll(filepath.Join(c.spec.Dir, name, "data"))
		}
	})
	var started []*LocalNode
	for _, name := range names {
		cfg := c.nodeConfig(name)
		cfg.Port = clientPorts[name]
		cfg.etcd = &etcdMember{peerPort: peerPorts[name], advertised: peerURL(routers[name]),
			initialCluster: strings.Join(initial, ","), token: token,
			rejoin: func(ctx context.Context, n *serverConf) error { return rejoinEtcd(ctx, c, n, routers) }}
		conf, err := newServerConf(cfg)
		if err != nil {
			return err
		}
		n := &LocalNode{serverConf: conf}
		// Every member starts before any is waited for: one alone elects
		// no leader and never reports healthy.
		if err := n.launch(); err != nil {
			return err
		}
		c.Nodes = append(c.Nodes, n)
		started = append(started, n)
	}
	for _, n := range started {
		if err := n.waitReady(ctx); err != nil {
			return err
		}
	}
	return checkMemberIDs(ctx, c, token, routers)
}

// checkMemberIDs holds the IDs the routers route by to the ones the
// members chose: a router that knows no sender would send every Raft
// message through the member's own link, and a partition of one pair
// would cut none.
func checkMemberIDs(ctx context.Context, c *Cluster, token string, routers map[string]*busRouter) error {
	members, err := etcdMembers(ctx, c.Nodes[0].Addr())
	if err != nil {
		return fmt.Errorf("etcd member list: %w", err)
	}
	for _, m := range members {
		id, err := m.hexID()
		if err != nil {
			return err
		}
		r, ok := routers[m.Name]
		if !ok {
			return fmt.Errorf("etcd member %q is none of the planned members", m.Name)
		}
		if want := etcdMemberID(peerURL(r), token); id != want {
			return fmt.Errorf("etcd member %s has ID %s, not %s as its peer URL and the cluster token make it", m.Name, id, want)
		}
	}
	if len(members) != len(routers) {
		return fmt.Errorf("etcd lists %d members, not %d", len(members), len(routers))
	}
	return nil
}

// etcdMemberInfo is a member as the JSON gateway's member list gives it.
type etcdMemberInfo struct {
	ID       string   `json:"ID"` // decimal
	Name     string   `json:"name"`
	PeerURLs []string `json:"peerURLs"`
}

// etcdMembers lists the cluster's members, asking the member at addr.
func etcdMembers(ctx context.Context, addr string) ([]etcdMemberInfo, error) {
	var out struct {
		Members []etcdMemberInfo `json:"members"`
	}
	err := etcdCall(ctx, addr, "/v3/cluster/member/list", map[string]any{}, &out)
	return out.Members, err
}

// hexID spells the member's ID (decimal, as the gateway gives it) the way
// a Raft request names it: hex.
func (m etcdMemberInfo) hexID() (string, error) {
	id, err := strconv.ParseUint(m.ID, 10, 64)
	if err != nil {
		return "", fmt.Errorf("etcd member %s: ID %q: %w", m.Name, m.ID, err)
	}
	return strconv.FormatUint(id, 16), nil
}

func peerURL(r *busRouter) string { return "http://127.0.0.1:" + strconv.Itoa(r.port()) }

// etcdMemberID is the ID etcd gives a member of a new cluster: the first 8
// bytes of the SHA-1 of its sorted peer URLs and the cluster token (etcd's
// membership.NewMember), as the hex a Raft request's X-Server-From
// carries.
func etcdMemberID(peerURL, token string) string {
	urls := []string{peerURL}
	sort.Strings(urls)
	sum := sha1.Sum([]byte(strings.Join(urls, "") + token))
	return strconv.FormatUint(binary.BigEndian.Uint64(sum[:8]), 16)
}

// etcdSender peeks at the head of the first request on a peer connection
// and returns the member ID it names (X-Server-From), "" for none: every
// request of a Raft stream or pipeline names its sender, and one member's
// connections carry only its own requests. It only peeks, so the head
// still goes on; a head longer than the reader's buffer names no one.
func etcdSender(_ net.Conn, r *bufio.Reader) string {
	want := 1
	for {
		buf, err := r.Peek(want)
		if err != nil {
			return ""
		}
		buf = buf[:r.Buffered()]
		head, _, complete := bytes.Cut(buf, []byte("\r\n\r\n"))
		lines := bytes.Split(head, []byte("\r\n"))
		if !complete {
			lines = lines[:len(lines)-1] // the last may not have ended
		}
		for _, line := range lines {
			if k, v, ok := bytes.Cut(line, []byte(":")); ok && strings.EqualFold(string(bytes.TrimSpace(k)), "X-Server-From") {
				return string(bytes.TrimSpace(v))
			}
		}
		if complete || len(buf) >= r.Size() {
			return ""
		}
		want = len(buf) + 1
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// args are an etcd member's command line.
func (m *etcdMember) args(n *serverConf) []string {
	return []string{
		"--name", n.name,
		"--data-dir", filepath.Join(n.dir, "data"),
		"--listen-client-urls", "http://" + n.Addr(),
		"--advertise-client-urls", "http://" + n.Addr(),
		"--listen-peer-urls", "http://127.0.0.1:" + strconv.Itoa(m.peerPort),
		"--initial-advertise-peer-urls", m.advertised,
		"--initial-cluster", m.initialCluster,
		"--initial-cluster-token", m.token,
		"--initial-cluster-state", cmp.Or(m.state, "new"),
		"--heartbeat-interval", strconv.FormatInt(etcdHeartbeat.Milliseconds(), 10),
		"--election-timeout", strconv.FormatInt(etcdElection.Milliseconds(), 10),
		// etcd 3.5's default: a member rejoining after a partition does
		// not depose a working leader, which would give every lease its
		// TTL again (locks.Recipe.Outlives counts one leader change).
		"--pre-vote",
		"--logger", "zap",
		"--log-outputs", n.LogPath(),
	}
}

// etcdHealthy asks a member's /health whether it has a leader and no alarm.
func etcdHealthy(ctx context.Context, addr string) error {
	var out struct {
		Health string `json:"health"`
	}
	if err := etcdGet(ctx, addr, "/health", &out); err != nil {
		return err
	}
	if out.Health != "true" {
		return fmt.Errorf("etcd at %s is not healthy (health %q)", addr, out.Health)
	}
	return nil
}

// etcdKeys counts the keys a member holds once it has caught up: a
// linearizable read on a member first waits until it has applied what
// the leader had committed (ReadIndex), then counts its own store. A
// serializable read would count a member just restarted, or just added
// back empty, before the leader has filled it, and call it empty when the
// quorum forgot nothing. A member without a leader cannot answer.
func etcdKeys(ctx context.Context, addr string) (int64, error) {
	var out struct {
		Count string `json:"count"`
	}
	all := map[string]any{"key": "AA==", "range_end": "AA==", "count_only": true}
	if err := etcdCall(ctx, addr, "/v3/kv/range", all, &out); err != nil {
		return 0, err
	}
	if out.Count == "" {
		return 0, nil // the gateway leaves a zero out
	}
	return strconv.ParseInt(out.Count, 10, 64)
}

// wipeEtcd readies a started etcd cluster for another run: every key
// deleted and every lease revoked (revisions go on rising, as fences must).
func wipeEtcd(ctx context.Context, c *Cluster) (string, error) {
	addr := c.Nodes[0].Addr()
	var leases struct {
		Leases []struct {
			ID string `json:"ID"`
		} `json:"leases"`
	}
	if err := etcdCall(ctx, addr, "/v3/lease/leases", map[string]any{}, &leases); err != nil {
		return "", fmt.Errorf("etcd lease list: %w", err)
	}
	for _, l := range leases.Leases {
		if err := etcdCall(ctx, addr, "/v3/lease/revoke", map[string]any{"ID": l.ID}, nil); err != nil && !strings.Contains(err.Error(), "not found") {
			return "", fmt.Errorf("etcd lease revoke %s: %w", l.ID, err)
		}
	}
	if err := etcdCall(ctx, addr, "/v3/kv/deleterange", map[string]any{"key": "AA==", "range_end": "AA=="}, nil); err != nil {
		return "", fmt.Errorf("etcd delete: %w", err)
	}
	for _, n := range c.Nodes {
		for {
			keys, err := etcdKeys(ctx, n.Addr())
			if err != nil {
				return "", fmt.Errorf("%s: %w", n.Name(), err)
			}
			if keys == 0 {
				break
			}
			select {
			case <-ctx.Done():
				return "", fmt.Errorf("%s still holds %d keys after the delete", n.Name(), keys)
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	return fmt.Sprintf("%d leases revoked, every key deleted, every member empty", len(leases.Leases)), nil
}

// etcdVersion is the member's etcd version, as its /version says.
func etcdVersion(ctx context.Context, n Node) (string, error) {
	var out struct {
		Server string `json:"etcdserver"`
	}
	if err := etcdGet(ctx, n.Addr(), "/version", &out); err != nil {
		return "", err
	}
	path, _ := exec.LookPath("etcd")
	return fmt.Sprintf("etcd %s (%s)", out.Server, path), nil
}

// etcdClient is the harness's own HTTP client to the members' JSON
// gateway; no pooling across calls, so no connection outlives a run.
var etcdClient = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

// etcdCall posts a JSON request to a member's gRPC gateway (the v3 API in
// JSON) and decodes its answer into out (nil: ignored), within ctx or a
// second.
func etcdCall(ctx context.Context, addr, path string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	return etcdDo(ctx, http.MethodPost, addr, path, bytes.NewReader(body), out)
}

func etcdGet(ctx context.Context, addr, path string, out any) error {
	return etcdDo(ctx, http.MethodGet, addr, path, nil, out)
}

func etcdDo(ctx context.Context, method, addr, path string, body io.Reader, out any) error {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, "http://"+addr+path, body)
	if err != nil {
		return err
	}
	resp, err := etcdClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK && !(path == "/health" && resp.StatusCode == http.StatusServiceUnavailable) {
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, bytes.TrimSpace(data))
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%s %s: %w (%s)", method, path, err, bytes.TrimSpace(data))
	}
	return nil
}

// rejoinEtcd adds a member that lost its data back to the cluster, as
// etcd's runbook says: etcd refuses a member that restarts empty under the
// ID it had ("member ... has already been bootstrapped", asked of its
// peers), so it is removed, added again with its peer URL (a new ID, which
// every peer's router learns to route as the old one) and started to join
// the existing cluster, which sends it the data.
func rejoinEtcd(ctx context.Context, c *Cluster, n *serverConf, routers map[string]*busRouter) error {
	// The steps go through any member that runs, the next one after a
	// step fails: one cut off from the quorum cannot take them.
	var vias []string
	for _, o := range c.Nodes {
		if o.Name() != n.name && o.Running() && !o.Paused() {
			vias = append(vias, o.Addr())
		}
	}
	if len(vias) == 0 {
		return fmt.Errorf("etcd member %s lost its data, and no other member runs to add it back", n.name)
	}
	at := 0
	var members []etcdMemberInfo
	// Each step goes through Raft and may time out having happened (a
	// leader lost with the member, an election under way), and etcd adds
	// a voting member only once every member has been connected to the
	// others for 5 s (its strict reconfiguration check): so the member
	// list says, each time round, which step is next.
	oldID, newID := etcdMemberID(n.etcd.advertised, n.etcd.token), ""
	var failed error // the last step's error, if it failed
	for round := 0; newID == ""; round++ {
		if failed != nil {
			at++
		}
		via := vias[at%len(vias)]
		if round > 0 {
			select {
			case <-ctx.Done():
				return fmt.Errorf("etcd member %s lost its data and was not added back: %w", n.name, cmp.Or(failed, ctx.Err()))
			case <-time.After(100 * time.Millisecond):
			}
		}
		// A fresh list each time (etcdMembers decodes into a new one: one
		// decoded into the last would keep a field the answer leaves out,
		// the name of a member not started).
		if members, failed = etcdMembers(ctx, via); failed != nil {
			continue
		}
		i := slices.IndexFunc(members, func(m etcdMemberInfo) bool { return slices.Contains(m.PeerURLs, n.etcd.advertised) })
		switch {
		case i < 0:
			failed = etcdCall(ctx, via, "/v3/cluster/member/add", map[string]any{"peerURLs": []string{n.etcd.advertised}}, nil)
		case members[i].Name != "": // the member that lost its data
			if oldID, failed = members[i].hexID(); failed != nil {
				return failed
			}
			failed = etcdCall(ctx, via, "/v3/cluster/member/remove", map[string]any{"ID": members[i].ID}, nil)
		default: // added, not yet started: it has no name until it starts
			if newID, failed = members[i].hexID(); failed != nil {
				return failed
			}
		}
	}
	var initial []string
	for _, m := range members {
		name := cmp.Or(m.Name, n.name) // the one added has no name until it starts
		for _, u := range m.PeerURLs {
			initial = append(initial, name+"="+u)
		}
	}
	for to, r := range routers {
		if to != n.name {
			if err := r.alias(newID, oldID); err != nil {
				return fmt.Errorf("etcd member %s added back as %s: %w", n.name, newID, err)
			}
		}
	}
	n.etcd.initialCluster, n.etcd.state, n.etcd.lost = strings.Join(initial, ","), "existing", false
	return nil
}

// PeerLinks are the names of every link a member's Raft traffic crosses,
// in and out: what a partition of that member from its peers cuts.
func (c *Cluster) PeerLinks(node string) ([]string, error) {
	if err := c.Can(Consensus); err != nil {
		return nil, err
	}
	if _, ok := c.internal[node]; !ok {
		return nil, fmt.Errorf("topology %s has no node %q", c.Topology, node)
	}
	out := []string{internalLinkName(node)}
	for _, peer := range c.planned.nodes {
		if peer != node {
			out = append(out, peerLinkName(peer, node), peerLinkName(node, peer))
		}
	}
	return out, nil
}
