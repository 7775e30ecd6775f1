package cluster

import (
	"slices"
	"testing"

	"github.com/lockharness/lockharness/access"
	"github.com/lockharness/lockharness/locks"
)

// clientOffers is what a topology offers a lock client.
func clientOffers(t *topology) []Capability {
	var out []Capability
	for _, c := range t.has {
		if slices.Contains(access.Capabilities, c) {
			out = append(out, c)
		}
	}
	slices.Sort(out)
	return out
}

// A topology shaped as another (a target) is left out of where locks run
// and answers a lock's needs itself: it must offer a client exactly what
// its shape does, or a lock would run on the one and be refused on the
// other.
func TestAShapedTopologyOffersAClientWhatItsShapeDoes(t *testing.T) {
	shaped := 0
	for _, top := range registry {
		if top.shape == "" {
			continue
		}
		shaped++
		shape, err := lookup(top.shape)
		if err != nil {
			t.Fatalf("%s is shaped as %s: %v", top.name, top.shape, err)
		}
		if got, want := clientOffers(top), clientOffers(shape); !slices.Equal(got, want) {
			t.Errorf("%s offers a client %v, its shape %s offers %v", top.name, got, shape.name, want)
		}
	}
	if shaped == 0 {
		t.Error("no topology is shaped as another")
	}
}

// Every capability, a lock's or a fault's, says what it is in a refusal.
func TestEveryCapabilityHasAMeaning(t *testing.T) {
	seen := map[Capability]bool{}
	for _, top := range registry {
		for _, c := range top.has {
			seen[c] = true
		}
	}
	for _, c := range access.Capabilities {
		seen[c] = true
	}
	for c := range seen {
		if Meaning(c) == "" {
			t.Errorf("capability %s has no meaning", c)
		}
	}
}

func TestOffering(t *testing.T) {
	for _, c := range []struct {
		needs, prefers []Capability
		want           []string
	}{
		{[]Capability{access.Primary}, nil, []string{Single, Sentinel, RedisCluster}},
		{[]Capability{access.Primary, access.Replicas}, nil, []string{Sentinel, RedisCluster}},
		{[]Capability{access.Primary, access.Sentinels}, nil, []string{Sentinel}},
		{[]Capability{access.Primary, access.Slots}, nil, []string{RedisCluster}},
		{[]Capability{access.Independent}, nil, []string{Single, Redlock}},
		// The preferred first, whatever the registry's order.
		{[]Capability{access.Independent}, []Capability{access.Majorities}, []string{Redlock, Single}},
		{[]Capability{access.Primary}, []Capability{access.Slots}, []string{RedisCluster, Single, Sentinel}},
		// A preference nothing offers orders nothing.
		{[]Capability{access.Primary}, []Capability{access.Majorities}, []string{Single, Sentinel, RedisCluster}},
		{[]Capability{access.Majorities, access.Replicas}, nil, nil},
	} {
		if got := Offering(c.needs, c.prefers); !slices.Equal(got, c.want) {
			t.Errorf("Offering(%v, %v) = %v, want %v", c.needs, c.prefers, got, c.want)
		}
	}
}

// A topology added to the registry runs every recipe that needs only what
// it offers, with no recipe edited, and moves no recipe's home.
func TestANewTopologyRunsEveryRecipeThatNeedsWhatItOffers(t *testing.T) {
	homes := map[string]string{}
	for _, r := range locks.Recipes {
		homes[r.Name] = Offering(r.Needs, r.Prefers)[0]
	}
	saved := registry
	t.Cleanup(func() { registry = saved })
	fresh := &topology{name: "test-keyvalue", summary: "a key-value service of this test", has: []Capability{access.Primary, access.Replicas}}
	registry = append(slices.Clone(saved), fresh)
	gained := 0
	for _, r := range locks.Recipes {
		runsOn := Offering(r.Needs, r.Prefers)
		offered := len((&Cluster{top: fresh}).Lacking(r.Needs)) == 0
		if slices.Contains(runsOn, fresh.name) != offered {
			t.Errorf("%s (needs %v) runs on %v: the new topology offers %v", r.Name, r.Needs, runsOn, fresh.has)
		}
		if offered {
			gained++
		}
		if runsOn[0] != homes[r.Name] {
			t.Errorf("the new topology moved %s's home from %s to %s", r.Name, homes[r.Name], runsOn[0])
		}
	}
	if gained == 0 {
		t.Error("no built-in recipe runs on a topology offering a primary with replicas")
	}
}
