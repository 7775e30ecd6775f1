package faults

import (
	"context"
	"image/color"
	"math/rand"
	"slices"
	"strings"

	"github.com/lockharness/lockharness/cluster"
	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/internal/options"
)

// partitionMembers splits a consensus cluster: a minority of its members
// lose every peer link, both ways, and some clients reach only them while
// the rest reach only the majority, the partition Jepsen's etcd tests
// make. The majority elects a leader and goes on; the minority has none,
// so what its clients send stalls, their sessions' keepalives go
// unanswered, and their leases expire on the majority's side.
var partitionMembers = Fault{
	Name:            "partition-members",
	CutsClientLinks: true,
	Drawing:         history.Drawing{Colour: color.NRGBA{R: 0, G: 200, B: 120, A: 70}, Legend: "members split"},
	Summary:         "cut a minority of the members off from the rest, with some clients on their side and the others on the majority's, for 2-4 TTLs",
	Needs:           []cluster.Capability{cluster.Consensus},
	Options: []options.Spec{forOpt("2-4 TTLs"), clientsOpt,
		{Name: optLost, Kind: options.Word, Arg: "NAME/NAME", Summary: "the members cut off, joined by / (default: drawn, a minority)"}},
	Run: func(ctx context.Context, env *Env, rng *rand.Rand, opts options.Values) error {
		slots := pickClients(opts, rng, env.NumClients)
		nodes := env.Cluster.NodeNames()
		most := len(nodes) - env.Cluster.Quorum()
		var minority []string
		if given, ok := opts[optLost]; ok {
			for _, name := range strings.Split(given, "/") {
				if slices.Contains(nodes, name) && !slices.Contains(minority, name) {
					minority = append(minority, name)
				}
			}
		}
		if len(minority) == 0 || len(minority) > most {
			minority = nil
			for _, i := range rng.Perm(len(nodes))[:1+rng.Intn(most)] {
				minority = append(minority, nodes[i])
			}
		}
		slices.Sort(minority)
		pin(opts, optLost, strings.Join(minority, "/"))
		var links []*Link
		for _, m := range minority {
			names, err := env.Cluster.PeerLinks(m)
			if err != nil {
				return err
			}
			for _, name := range names {
				if l := env.Net.Get(name); l != nil && !slices.Contains(links, l) {
					links = append(links, l)
				}
			}
		}
		var majority []string
		for _, n := range nodes {
			if !slices.Contains(minority, n) {
				majority = append(majority, n)
			}
		}
		for slot := range env.NumClients {
			away := minority // the others reach only the majority
			if slices.Contains(slots, slot) {
				away = majority
			}
			for _, n := range away {
				links = append(links, env.ClientLink(slot, n))
			}
		}
		hold := hold(opts, rng, 2*env.TTL, 4*env.TTL)
		return blackholeFor(ctx, env, history.Facts{Nodes: minority, Clients: slots, Unreachable: majority},
			strings.Join(minority, ",")+" cut from the other members; clients "+options.JoinSlots(slots)+" reach only them", links, hold)
	},
}
