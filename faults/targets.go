package faults

import (
	"fmt"
	"math/rand"
	"slices"
	"time"

	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/internal/options"
)

// optClients pins the client slots a fault hits.
const optClients = "clients"

// clientsOpt is the option that names the clients a fault hits.
var clientsOpt = options.Spec{Name: optClients, Kind: options.Slots,
	Summary: "the client slots it hits, joined by / (default: drawn, never all of them)"}

// pickClients is the clients option's slots that the run has, or a draw
// (someClients), which it pins.
func pickClients(opts options.Values, rng *rand.Rand, n int) []int {
	return pickClientsBut(opts, rng, n, -1)
}

// pickClientsBut is pickClients that leaves one client out (none when
// except is -1): drawn from the others, or the clients option's slots with
// except, if among them, traded for the first slot not listed, so that a
// replay whose holder is another client still spares its holder.
func pickClientsBut(opts options.Values, rng *rand.Rand, n, except int) []int {
	var slots []int
	if given, ok := opts.Slots(optClients); ok {
		for _, c := range given {
			if c < n {
				slots = append(slots, c)
			}
		}
		if i := slices.Index(slots, except); i >= 0 {
			slots = slices.Delete(slots, i, i+1)
			for c := 0; c < n; c++ {
				if c != except && !slices.Contains(given, c) {
					slots = append(slots, c)
					break
				}
			}
			slices.Sort(slots)
		}
	}
	if len(slots) == 0 {
		slots = someClientsBut(rng, n, except)
	}
	pin(opts, optClients, options.JoinSlots(slots))
	return slots
}

// someClients draws a non-empty set of client slots, leaving at least one
// client out when there is more than one, so that the rest of the system
// keeps working while the chosen ones are cut off.
func someClients(rng *rand.Rand, n int) []int {
	if n <= 1 {
		return []int{0}
	}
	k := 1 + rng.Intn(n-1)
	perm := rng.Perm(n)[:k]
	slices.Sort(perm)
	return perm
}

// someClientsBut draws like someClients from every slot except one (none
// when except is -1).
func someClientsBut(rng *rand.Rand, n, except int) []int {
	if except < 0 || n <= 1 {
		return someClients(rng, n)
	}
	var out []int
	for _, i := range someClients(rng, n-1) {
		if i >= except {
			i++
		}
		out = append(out, i)
	}
	return out
}

// afterGrant is the grant a fault waited for, as its start's facts: the
// client's slot and how long after the grant the fault struck; nil when no
// grant came (slot -1).
func afterGrant(slot int, delay time.Duration) *history.AfterGrant {
	if slot < 0 {
		return nil
	}
	return &history.AfterGrant{Client: slot, DelayNs: int64(delay.Round(time.Millisecond))}
}

// afterWords says when a fault struck after its grant ("169ms after client
// 2 acquired the lock"), or none when no grant came.
func afterWords(a *history.AfterGrant, none string) string {
	if a == nil {
		return none
	}
	if a.DelayNs == 0 {
		return fmt.Sprintf("client %d just acquired", a.Client)
	}
	return fmt.Sprintf("%v after client %d acquired the lock", time.Duration(a.DelayNs), a.Client)
}

// linksOf collects the links of the given client slots.
func linksOf(env *Env, slots []int) []*Link {
	var out []*Link
	for _, c := range slots {
		out = append(out, env.ClientLinks(c)...)
	}
	return out
}
