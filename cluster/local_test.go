package cluster

import (
	"context"
	"fmt"
	"os/exec"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func needRedis(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server not installed; run `make setup`")
	}
}

func startNode(t *testing.T, persistence string) *LocalNode {
	t.Helper()
	needRedis(t)
	n, err := StartLocal(context.Background(), "n1", t.TempDir(), persistence)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Stop() })
	return n
}

func client(t *testing.T, n Node) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: n.Addr(), MaxRetries: -1, DialTimeout: 200 * time.Millisecond, ReadTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { c.Close() })
	return c
}

// A node keeps its keys across a kill only with persistence, and not
// when its data went with it (LoseData, kill-node:data=lost).
func TestRestartKeepsKeysOnlyWithPersistence(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		persistence string
		lose        bool
		survives    bool
	}{{PersistNone, false, false}, {PersistAOFAlways, false, true}, {PersistAOFAlways, true, false}} {
		t.Run(fmt.Sprintf("%s, data lost %v", tc.persistence, tc.lose), func(t *testing.T) {
			n := startNode(t, tc.persistence)
			port := n.Addr()
			if err := client(t, n).Set(ctx, "lock", "A", time.Minute).Err(); err != nil {
				t.Fatal(err)
			}
			if err := n.Kill(); err != nil {
				t.Fatal(err)
			}
			if n.Running() {
				t.Fatal("running after Kill")
			}
			if tc.lose {
				if err := n.LoseData(); err != nil {
					t.Fatal(err)
				}
			}
			if err := n.Restart(ctx); err != nil {
				t.Fatal(err)
			}
			if n.Addr() != port {
				t.Fatalf("restart moved the node from %s to %s", port, n.Addr())
			}
			v, err := client(t, n).Get(ctx, "lock").Result()
			if tc.survives && (err != nil || v != "A") {
				t.Fatalf("after restart with %s: GET lock = %q, %v; want A", tc.persistence, v, err)
			}
			if !tc.survives && err != redis.Nil {
				t.Fatalf("after restart with %s: GET lock = %q, %v; want no key", tc.persistence, v, err)
			}
		})
	}
}

func TestPauseFreezesTheServer(t *testing.T) {
	n := startNode(t, PersistNone)
	if err := n.Pause(); err != nil {
		t.Fatal(err)
	}
	if err := Ping(n.Addr(), 200*time.Millisecond); err == nil {
		t.Fatal("a paused node answered PING")
	}
	if err := n.Resume(); err != nil {
		t.Fatal(err)
	}
	if err := Ping(n.Addr(), time.Second); err != nil {
		t.Fatalf("resumed node: %v", err)
	}
}

func TestStopEndsAPausedNode(t *testing.T) {
	n := startNode(t, PersistNone)
	n.Pause()
	if err := n.Stop(); err != nil {
		t.Fatal(err)
	}
	if n.Running() {
		t.Fatal("still running after Stop")
	}
}

func TestUnknownPersistenceListsValidOnes(t *testing.T) {
	_, err := StartLocal(context.Background(), "n1", t.TempDir(), "sometimes")
	if err == nil || err.Error() != `unknown persistence "sometimes" (valid: none, aof-always)` {
		t.Fatalf("got %v", err)
	}
}
