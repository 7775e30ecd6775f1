package scenario

import (
	"strings"
	"testing"

	"github.com/lockharness/lockharness/resource"
)

func TestResourceSpecErrors(t *testing.T) {
	cases := []struct {
		change func(*Spec)
		want   string
	}{
		{func(s *Spec) { s.Workload, s.Fencing = "inventory", "where" }, "--fencing where needs fencing tokens, and lock cad hands out none (locks that do: etcd-fenced, fenced"},
		{func(s *Spec) { s.Resource = resource.Postgres }, "workload mutex writes to memory, not postgres: leave --resource out, or with --resource postgres use --workload inventory or jobs"},
		{func(s *Spec) { s.Workload, s.Resource = "inventory", resource.Memory }, "workload inventory writes to postgres, not memory: leave --resource out, or with --resource memory use --workload mutex"},
		{func(s *Spec) { s.Workload = "job" }, `unknown workload "job"`},
		{func(s *Spec) { s.Workload, s.Fencing = "jobs", "where" }, "--fencing where: workload jobs takes no such fencing (workloads that do: inventory)"},
		{func(s *Spec) { s.Workload, s.WriteSQL = "jobs", "x.sql" }, "--write-sql replaces the inventory workload's write; workload jobs has none"},
		{func(s *Spec) { s.Resource = "mysql" }, `unknown resource "mysql" (valid: memory, postgres)`},
		{func(s *Spec) { s.Workload, s.Fencing = "inventory", "maybe" }, `unknown fencing "maybe" (valid: none, where, cas, app-check)`},
		{func(s *Spec) { s.Nemesis = "delay-write" }, "nemesis delay-write needs a database"},
		{func(s *Spec) { s.Workload, s.Backend = "inventory", "docker" }, "it does not run with --backend docker yet"},
		{func(s *Spec) { s.Idempotent = true }, "--idempotent makes the jobs workload's insert idempotent"},
		{func(s *Spec) { s.Workload, s.Keys = "inventory", 3 }, "--keys 3: workload inventory writes one row under one key (the mutex and jobs workloads take a number of keys)"},
		{func(s *Spec) { s.Keys = -1 }, "--keys -1: a number of lock keys is at least 1"},
	}
	for _, c := range cases {
		s := Defaults()
		c.change(&s)
		if err := s.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want it to say %q", err, c.want)
		}
	}
}
