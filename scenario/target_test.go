package scenario

import (
	"strings"
	"testing"
	"time"

	"github.com/lockharness/lockharness/cluster"
)

func TestTargetURLs(t *testing.T) {
	for raw, want := range map[string]string{
		"http://x:1":                          `scheme "http" (valid: redis, rediss, redis-sentinel)`,
		"redis://host":                        "want HOST:PORT",
		"redis-cluster://a:1,b:2":             "cluster deployments are not supported yet",
		"redis-sentinel://a:1,b:2":            "want the name of the primary the sentinels watch",
		"redis-sentinel://a:1,:2/m":           `want the sentinels as HOST:PORT,HOST:PORT after the scheme, got ":2"`,
		"redis://a:1,b:2":                     "one server only",
		"redis://a:1/3":                       "lock clients use database 0",
		"redis://a:1?ca=/etc/hosts":           "?ca= goes with rediss://",
		"rediss://a:1?ca=/nonexistent/ca.pem": "the CA file",
	} {
		if _, err := cluster.ParseTarget(raw); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseTarget(%q) = %v, want %q", raw, err, want)
		}
	}
	if u, err := cluster.ParseTarget("redis-sentinel://:pw@10.0.0.1:26379,10.0.0.2:26379/orders"); err != nil ||
		u.Master != "orders" || len(u.Sentinels) != 2 || u.Password != "pw" || u.Addr != "" {
		t.Errorf("a Sentinel target: %+v, %v", u, err)
	}
	s := Defaults()
	s.Lock, s.Nemesis, s.TimeLimit, s.TTL, s.Seed = "cad", "none", Duration(time.Second), Duration(time.Second), 1
	s.Target, s.Topology = "redis://127.0.0.1:1", cluster.Sentinel
	if _, err := s.Resolve(); err == nil || !strings.Contains(err.Error(), "drop --topology sentinel") {
		t.Errorf("--target with --topology sentinel: %v", err)
	}
}
