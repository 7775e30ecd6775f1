package runner

import (
	"strings"
	"testing"
	"time"

	"github.com/lockharness/lockharness/scenario"
)

func TestComparePlan(t *testing.T) {
	plan, err := ComparePlan([]string{"cad", "redlock"}, []string{"pause-client"}, nil, 2, scenario.Defaults(), false)
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{}
	for _, p := range plan {
		rows[p.Row] = p.Spec.Topology
	}
	want := map[string]string{"cad × none": "single", "cad × pause-client": "single", "redlock × none": "redlock", "redlock × pause-client": "redlock"}
	if len(plan) != 8 || len(rows) != 4 {
		t.Fatalf("%d runs in rows %v, want 8 in %v", len(plan), rows, want)
	}
	for r, top := range want {
		if rows[r] != top {
			t.Errorf("row %q on %q, want %q", r, rows[r], top)
		}
	}
	plan, err = ComparePlan([]string{"cad"}, []string{"none"}, []time.Duration{time.Second, 3 * time.Second}, 1, scenario.Defaults(), false)
	if err != nil || len(plan) != 2 || plan[1].Row != "cad × none · ttl 3s" || plan[1].Spec.TTL.D() != 3*time.Second {
		t.Errorf("ttls: %v %+v", err, plan)
	}
	for _, c := range []struct {
		locks, nemeses []string
		want           string
	}{
		{[]string{"nolock"}, []string{"none"}, `--locks "nolock"`},
		{[]string{"cad"}, []string{"no-fault"}, `--nemesis "no-fault"`},
		{[]string{"cad"}, []string{"partition-primary"}, "--nemesis partition-primary with --locks cad (on single)"},
		{[]string{"cad", "cad"}, []string{"none"}, "--locks names cad twice"},
		{[]string{"cad"}, []string{"kill-node", "kill-node"}, "--nemesis names kill-node twice"},
	} {
		if _, err := ComparePlan(c.locks, c.nemeses, nil, 1, scenario.Defaults(), false); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v × %v: error %v, want it to name %s", c.locks, c.nemeses, err, c.want)
		}
	}
}
