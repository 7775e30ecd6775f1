package faults

import (
	"fmt"
	"strings"

	"github.com/lockharness/lockharness/history"
)

// Healed reports what a fault left behind, or nil when everything is as
// a run starts: no link carries a toxic, every node and sentinel runs and
// is not paused, every node's clock is at true time, and no client is
// frozen. The nemesis checks it after every fault, as etcd's robustness
// tests check health around each failpoint, so a fault that forgets to
// heal fails the run instead of poisoning the faults after it.
func (e *Env) Healed() error {
	var left []string
	if links := e.Net.Faulted(); len(links) > 0 {
		left = append(left, "links with toxics: "+strings.Join(links, "; "))
	}
	for _, n := range e.Cluster.Servers() {
		switch {
		case !n.Running():
			left = append(left, n.Name()+" is down")
		case n.Paused():
			left = append(left, n.Name()+" is paused")
		}
		if d := n.ClockOffset(); d != 0 {
			left = append(left, fmt.Sprintf("%s's clock is %s off", n.Name(), history.Signed(d)))
		}
		if r := n.ClockDrift(); r != 0 {
			left = append(left, fmt.Sprintf("%s's clock still drifts %s", n.Name(), history.Rate(r)))
		}
	}
	if f := e.Clients.Frozen(); len(f) > 0 {
		left = append(left, fmt.Sprintf("clients still frozen: %v", f))
	}
	if len(left) > 0 {
		return fmt.Errorf("not healed: %s", strings.Join(left, "; "))
	}
	return nil
}
