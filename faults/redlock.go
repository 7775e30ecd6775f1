package faults

import (
	"context"
	"fmt"
	"image/color"
	"math/rand"
	"slices"
	"strings"
	"time"

	"github.com/lockharness/lockharness/cluster"
	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/internal/options"
)

// Reachability faults for topologies of independent nodes (Redlock): each
// client sees only some of the nodes.

// optLost pins the nodes partition-minority cuts some clients off from.
const optLost = "lost"

var onlyMajorities = []cluster.Capability{cluster.Majorities}

// holdersNode is the node a fault on a lock holder should hit. Where
// clients need a majority of independent nodes, it is the node the
// holder's majority shares with the client whose majority overlaps it
// least: take that node away from the holder (restart it empty, jump its
// clock) and the other client has a whole majority to itself. Where a
// failover topology has one primary, it is the primary, which granted the
// lock. Elsewhere it is the node drawn already.
func holdersNode(env *Env, holder int, drawn cluster.Node) cluster.Node {
	if env.Cluster.Can(cluster.Majorities) != nil {
		if env.Cluster.Can(cluster.Failover) == nil {
			if p, err := env.Cluster.Primary(context.Background(), env.Key); err == nil {
				return p
			}
		}
		return drawn
	}
	mine := map[string]bool{}
	for _, n := range env.Cluster.Majority(holder) {
		mine[n.Name()] = true
	}
	var best []cluster.Node
	for slot := 0; slot < env.NumClients; slot++ {
		if slot == holder {
			continue
		}
		var shared []cluster.Node
		for _, n := range env.Cluster.Majority(slot) {
			if mine[n.Name()] {
				shared = append(shared, n)
			}
		}
		if len(shared) > 0 && (best == nil || len(shared) < len(best)) {
			best = shared
		}
	}
	if best == nil {
		return drawn
	}
	return best[0]
}

// partitionMajorities gives every client a different majority of the
// nodes, as Jepsen's majorities ring does, arranged so that neighbouring
// clients share exactly one node.
var partitionMajorities = Fault{
	Name:            "partition-majorities",
	CutsClientLinks: true,
	Drawing:         history.Drawing{Colour: color.NRGBA{R: 70, G: 75, B: 225, A: 70}, Legend: "a majority each"},
	Summary:         "each client reaches only its own ring majority of the nodes, for 2-4 TTLs",
	Needs:           onlyMajorities,
	Options:         []options.Spec{forOpt("2-4 TTLs")},
	Run: func(ctx context.Context, env *Env, rng *rand.Rand, opts options.Values) error {
		hold := hold(opts, rng, 2*env.TTL, 4*env.TTL)
		var links []*Link
		var views []string
		for slot := 0; slot < env.NumClients; slot++ {
			sees := map[string]bool{}
			var names []string
			for _, n := range env.Cluster.Majority(slot) {
				sees[n.Name()] = true
				names = append(names, n.Name())
			}
			views = append(views, fmt.Sprintf("client %d sees %s", slot, strings.Join(names, ",")))
			for _, n := range env.Cluster.Nodes {
				if !sees[n.Name()] {
					links = append(links, env.ClientLink(slot, n.Name()))
				}
			}
		}
		all := make([]int, env.NumClients)
		for slot := range all {
			all[slot] = slot
		}
		return blackholeFor(ctx, env, history.Facts{Clients: all, AllClients: true}, strings.Join(views, "; "), links, hold)
	},
}

// partitionMinority cuts some clients off from a minority of the nodes; a
// majority still decides.
var partitionMinority = Fault{
	Name:            "partition-minority",
	CutsClientLinks: true,
	Drawing:         history.Drawing{Colour: color.NRGBA{R: 40, G: 65, B: 140, A: 70}, Legend: "a minority lost"},
	Summary:         "some clients lose a minority of the nodes for 1-2 TTLs",
	Needs:           onlyMajorities,
	Options: []options.Spec{forOpt("1-2 TTLs"), clientsOpt,
		{Name: optLost, Kind: options.Word, Arg: "NAME/NAME", Summary: "the nodes they lose, joined by / (default: drawn, a minority)"}},
	Run: func(ctx context.Context, env *Env, rng *rand.Rand, opts options.Values) error {
		slots := pickClients(opts, rng, env.NumClients)
		nodes := env.Cluster.Nodes
		var lost []int
		if given, ok := opts[optLost]; ok {
			for _, name := range strings.Split(given, "/") {
				if i := slices.IndexFunc(nodes, func(n cluster.Node) bool { return n.Name() == name }); i >= 0 && !slices.Contains(lost, i) {
					lost = append(lost, i)
				}
			}
		}
		if len(lost) == 0 || len(lost) > len(nodes)-env.Cluster.Quorum() {
			lost = rng.Perm(len(nodes))[:len(nodes)-env.Cluster.Quorum()]
		}
		slices.Sort(lost)
		var names []string
		for _, i := range lost {
			names = append(names, nodes[i].Name())
		}
		pin(opts, optLost, strings.Join(names, "/"))
		var links []*Link
		for _, slot := range slots {
			for _, i := range lost {
				links = append(links, env.ClientLink(slot, nodes[i].Name()))
			}
		}
		hold := hold(opts, rng, env.TTL, 2*env.TTL)
		return blackholeFor(ctx, env, history.Facts{Clients: slots, Unreachable: names}, "cut from "+strings.Join(names, ","), links, hold)
	},
}

// blackholeFor cuts links, records the window, and heals after hold.
func blackholeFor(ctx context.Context, env *Env, facts history.Facts, detail string, links []*Link, hold time.Duration) error {
	return linksFor(ctx, env, facts, detail, links, hold, (*Link).Blackhole)
}

// linksFor applies a toxic to links, records the window, holds, and heals,
// also when the run ends or a toxic cannot be added.
func linksFor(ctx context.Context, env *Env, facts history.Facts, detail string, links []*Link, hold time.Duration, apply func(*Link) error) error {
	defer healAll(links)
	for _, l := range links {
		if err := apply(l); err != nil {
			return err
		}
	}
	facts.HoldNs = int64(hold)
	end := env.Begin(facts, detail+", for "+hold.String())
	sleep(ctx, hold)
	if err := healAll(links); err != nil {
		end("not healed: "+err.Error(), history.Facts{Failed: "not healed: " + err.Error()})
		return err
	}
	end("healed")
	return nil
}
