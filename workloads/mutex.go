package workloads

import "github.com/lockharness/lockharness/resource"

// Mutex is the default workload: every holder reads the harness's counter
// for its key and writes it back plus one through its worker, so that a
// write that lands out of turn loses an increment the checker counts.
var Mutex = Workload{
	Name:      Default,
	Summary:   "read-modify-write the in-memory counter the harness holds under --keys lock keys; fenced when the lock hands out fences",
	Resources: []string{resource.Memory},
}
