package cluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockharness/lockharness/cluster"
	"github.com/lockharness/lockharness/faults"
)

func startEtcdTopology(t *testing.T) (*cluster.Cluster, *faults.Network) {
	return startTopology(t, "etcd", cluster.Spec{Topology: cluster.Etcd})
}

// putOneKey writes one key through the first member's JSON gateway.
func putOneKey(t *testing.T, c *cluster.Cluster) {
	t.Helper()
	put, err := http.Post("http://"+c.Nodes[0].Addr()+"/v3/kv/put", "application/json", strings.NewReader(`{"key":"a2V5","value":"dg=="}`))
	if err != nil {
		t.Fatal(err)
	}
	put.Body.Close()
}

// leader asks a member whom it follows, over its own (unfaulted) address.
func leader(t *testing.T, c *cluster.Cluster, n cluster.Node) (member, leader uint64) {
	t.Helper()
	resp, err := http.Post("http://"+n.Addr()+"/v3/maintenance/status", "application/json", strings.NewReader("{}"))
	if err != nil {
		return 0, 0
	}
	defer resp.Body.Close()
	var out struct {
		Header struct {
			MemberID string `json:"member_id"`
		} `json:"header"`
		Leader string `json:"leader"`
	}
	json.NewDecoder(resp.Body).Decode(&out)
	var m, l uint64
	json.Unmarshal([]byte(out.Header.MemberID), &m)
	json.Unmarshal([]byte(out.Leader), &l)
	return m, l
}

// TestEtcdMemberCutFromItsPeersLosesTheLeadership starts three members,
// cuts the leader's peer links both ways and wants the other two to elect
// another: the routers must carry each pair's Raft traffic on that pair's
// links, or a member cut off still reaches its peers through theirs.
func TestEtcdMemberCutFromItsPeersLosesTheLeadership(t *testing.T) {
	c, net := startEtcdTopology(t)
	ctx := context.Background()
	if len(c.Nodes) != 3 || c.Persistence() != cluster.PersistWAL {
		t.Fatalf("%d members, persistence %s", len(c.Nodes), c.Persistence())
	}
	var old cluster.Node
	var oldID uint64
	for _, n := range c.Nodes {
		if m, l := leader(t, c, n); m != 0 && m == l {
			old, oldID = n, m
		}
	}
	if old == nil {
		t.Fatal("no member leads")
	}
	links, err := c.PeerLinks(old.Name())
	if err != nil || len(links) != 5 {
		t.Fatal(links, err)
	}
	for _, name := range links {
		if err := net.Get(name).Blackhole(); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		moved := 0
		for _, n := range c.Nodes {
			if n == old {
				continue
			}
			if _, l := leader(t, c, n); l != 0 && l != oldID {
				moved++
			}
		}
		if moved == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the others still follow %s 10s after it was cut off", old.Name())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := net.HealAll(); err != nil {
		t.Fatal(err)
	}
	// Healed, a reset finds every member healthy and empties the data.
	did, err := c.Reset(ctx, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(did)
	for name, v := range c.ServerVersions(ctx) {
		if !strings.HasPrefix(v, "etcd 3.") {
			t.Errorf("%s runs %q", name, v)
		}
	}
}

// TestEtcdMemberRestartsWithItsData kills a member and restarts it: it
// rejoins with the data directory it kept, and counts the keys it holds.
func TestEtcdMemberRestartsWithItsData(t *testing.T) {
	c, _ := startEtcdTopology(t)
	ctx := context.Background()
	putOneKey(t, c)
	n := c.Nodes[2]
	if err := n.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := n.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	holdsKeys(t, c, n, 1, "the restarted member")
	if err := c.MoveClocks(); err == nil || !strings.Contains(err.Error(), "Go program") {
		t.Errorf("MoveClocks on etcd: %v", err)
	}
}

func TestEtcdPlanRefusesWhatItCannotStart(t *testing.T) {
	for _, tc := range []struct {
		spec cluster.Spec
		want string
	}{
		{cluster.Spec{Topology: cluster.Etcd, Backend: "local", Nodes: 4}, "3 or 5 members, not 4"},
		{cluster.Spec{Topology: cluster.Etcd, Backend: "docker"}, "local backend only"},
		{cluster.Spec{Topology: cluster.Etcd, Backend: "local", Persistence: cluster.PersistAOFAlways}, "always keeps its write-ahead log"},
		{cluster.Spec{Topology: cluster.Etcd, Backend: "local", TLS: true}, "without --auth and --tls"},
	} {
		if err := tc.spec.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.spec, err, tc.want)
		}
	}
}

// A member whose data directory went with it is not let back under its
// old ID (etcd asks its peers, and refuses: "has already been
// bootstrapped"): it is removed and added back as a new member, which
// the leader fills, and the peers' routers route its new ID as the old.
func TestEtcdMemberThatLostItsDataIsAddedBack(t *testing.T) {
	c, _ := startEtcdTopology(t)
	ctx := context.Background()
	putOneKey(t, c)
	n := c.Nodes[1]
	before, _ := leader(t, c, n)
	if before == 0 {
		t.Fatalf("%s gave no member ID", n.Name())
	}
	if err := n.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := n.LoseData(); err != nil {
		t.Fatal(err)
	}
	log := n.(*cluster.LocalNode).LogPath()
	var logFrom int64
	if fi, err := os.Stat(log); err == nil {
		logFrom = fi.Size()
	}
	start := time.Now()
	if err := n.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("added back and healthy in %v", time.Since(start))
	after, _ := leader(t, c, n)
	if after == 0 || after == before {
		t.Errorf("member ID %x before, %x after: want a new one", before, after)
	}
	// The cluster lists the member once, under its new ID, with its name.
	var list struct {
		Members []struct {
			ID   string `json:"ID"`
			Name string `json:"name"`
		} `json:"members"`
	}
	resp, err := http.Post("http://"+c.Nodes[0].Addr()+"/v3/cluster/member/list", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	json.NewDecoder(resp.Body).Decode(&list)
	resp.Body.Close()
	var names []string
	for _, m := range list.Members {
		names = append(names, m.Name)
		if m.ID == strconv.FormatUint(before, 10) {
			t.Errorf("the cluster still lists the old ID %x", before)
		}
	}
	if slices.Sort(names); strings.Join(names, ",") != "n1,n2,n3" {
		t.Errorf("members %v, want n1, n2 and n3", names)
	}
	holdsKeys(t, c, n, 1, "the member added back")
	if _, err := c.Reset(ctx, 10*time.Second); err != nil {
		t.Fatalf("reset after the member came back: %v", err)
	}
	// The peers' routers know the new ID: the member's own dials (the
	// stream readers that bring it its peers' messages) get through.
	for _, peer := range c.Nodes {
		if peer == n {
			continue
		}
		id, _ := leader(t, c, peer)
		if !dialled(t, log, logFrom, fmt.Sprintf("%x", id)) {
			t.Errorf("the member added back never opened a stream to %s (%x): its log since the restart\n%s", peer.Name(), id, since(log, logFrom))
		}
	}
}

// holdsKeys asserts that member n, just back, counts the cluster's want
// keys at once: the count waits for the member to catch up itself, so a
// member the leader has not filled yet is not called empty.
func holdsKeys(t *testing.T, c *cluster.Cluster, n cluster.Node, want int64, who string) {
	t.Helper()
	if keys, err := c.KeyCount(context.Background(), n); err != nil || keys != want {
		t.Fatalf("%s counts %d keys (%v), want the cluster's %d", who, keys, err, want)
	}
}

// dialled reports whether a member's log, from offset on, records a
// stream it opened to peer (etcd logs each stream reader that connects).
func dialled(t *testing.T, log string, offset int64, peer string) bool {
	deadline := time.Now().Add(5 * time.Second)
	for {
		for _, line := range strings.Split(since(log, offset), "\n") {
			var entry struct {
				Msg    string `json:"msg"`
				Reader string `json:"stream-reader-type"`
				Remote string `json:"remote-peer-id"`
			}
			if json.Unmarshal([]byte(line), &entry) == nil && entry.Reader != "" && entry.Remote == peer &&
				entry.Msg == "established TCP streaming connection with remote peer" {
				return true
			}
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func since(log string, offset int64) string {
	b, _ := os.ReadFile(log)
	return string(b[min(offset, int64(len(b))):])
}
