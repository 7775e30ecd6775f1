package workloads

import (
	"strings"
	"testing"

	"github.com/lockharness/lockharness/resource"
)

// Every built-in workload is whole, and Register refuses one that is not,
// saying what it lacks.
func TestWorkloadsAreWhole(t *testing.T) {
	for _, w := range Workloads() {
		if err := w.Check(); err != nil {
			t.Errorf("%s: %v", w.Name, err)
		}
	}
	for _, c := range []struct {
		w    Workload
		want string
	}{
		{Workload{Name: "inventory", Resources: []string{resource.Memory}}, "workload inventory is registered already"},
		{Workload{Name: "x"}, "workload x names no resource it writes to"},
		{Workload{Name: "x", Resources: []string{"mysql"}}, `workload x: unknown resource "mysql" (valid: memory, postgres)`},
		{Workload{Name: "x", Resources: []string{resource.Postgres}}, "workload x writes to postgres and needs its Tables: Table, Prepare and Write"},
	} {
		if err := Register(c.w); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Register(%+v): %v, want %q", c.w, err, c.want)
		}
	}
	if got := strings.Join(Names(), ","); got != "mutex,inventory,jobs" {
		t.Errorf("the registry holds %s after the refusals", got)
	}
	if ops := strings.Join(Jobs.Ops(), ","); ops != "acquire,read,write,extend,release" {
		t.Errorf("jobs' requests: %s", ops)
	}
}
