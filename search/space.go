package search

import (
	"fmt"
	"maps"
	"math/rand"
	"slices"
	"strings"
	"time"

	"github.com/lockharness/lockharness/cluster"
	"github.com/lockharness/lockharness/faults"
	"github.com/lockharness/lockharness/internal/options"
	"github.com/lockharness/lockharness/scenario"
)

// Space is what explore searches over for one lock on one topology: the
// faults that can be injected there (narrowed by a nemesis list), each
// with the options it takes, the moments a fault can be anchored to, the
// number of clients and the hold against the TTL. A point of it is a
// Genome; Spec turns one into the scenario a run follows.
type Space struct {
	// Base is the spec every run starts from: lock, topology, workload,
	// resource, TTL, time limit.
	Base scenario.Spec
	// Faults are the faults a schedule draws from.
	Faults []faults.Fault
	// Weights are how much a schedule draws each of its arms (Arms: a
	// fault, an anchor, a number of clients, a hold), where guided search
	// has learnt them (an arm without one weighs 1); nil draws them
	// alike, as random search does.
	Weights map[string]float64
	// NodeWords are, fault by fault, the words of its node option
	// (holder, replica, ...) that a run of Base can take.
	NodeWords map[string][]string
	// Choices are, fault by fault and option by option, the choices a run
	// of Base can take (kill-node's data=lost is refused on a Redis
	// Cluster).
	Choices map[string]map[string][]string
}

// The moments a fault is anchored to: a fixed time from the clients'
// start, a grant (at it, in the middle of the hold, just before the
// holder's release), or, where a fault of the space can fail a primary
// over, the first promotion from its time.
const (
	AnchorTime          = "time"
	AnchorGrant         = "grant"
	AnchorMidHold       = "mid-hold"
	AnchorBeforeRelease = "before-release"
	AnchorPromotion     = "after-promotion"
)

// Anchors lists every anchor.
var Anchors = []string{AnchorTime, AnchorGrant, AnchorMidHold, AnchorBeforeRelease, AnchorPromotion}

// anchors are the anchors of the space: a promotion only where one of its
// faults can cause one.
func (s Space) anchors() []string {
	for _, f := range s.Faults {
		if slices.Contains(f.Needs, cluster.Failover) {
			return Anchors
		}
	}
	return Anchors[:len(Anchors)-1]
}

// Gene is one fault of a schedule: which, with what options, anchored to
// what moment, from when.
type Gene struct {
	Fault   string         `json:"fault"`
	Options options.Values `json:"options,omitempty"`
	Anchor  string         `json:"anchor"`
	// At is when the fault starts (AnchorTime) or, anchored to a grant,
	// when it starts waiting for one; from the clients' start.
	At time.Duration `json:"at"`
}

// Genome is a point of the space: a schedule, the clients and the hold.
type Genome struct {
	Genes   []Gene        `json:"genes"`
	Clients int           `json:"clients"`
	Hold    time.Duration `json:"hold"`
}

// String is the genome in one line, as the progress and pages show it.
func (g Genome) String() string {
	parts := make([]string, len(g.Genes))
	for i, ge := range g.Genes {
		parts[i] = fmt.Sprintf("%s @%s %.1fs", ge.Options.With(ge.Fault), ge.Anchor, ge.At.Seconds())
	}
	return fmt.Sprintf("%s; %d clients, hold %v", strings.Join(parts, " + "), g.Clients, g.Hold)
}

// key identifies a genome, so that one already run is not run again.
func (g Genome) key() string { return g.String() }

// NewSpace is the space of base's lock and topology: every fault of the
// registry that a run of base can have (the spec resolves with it), or,
// given a nemesis list, those of it. A fault the topology cannot take is
// left out, named in the error only when the list named it.
func NewSpace(base scenario.Spec, nemesis string) (Space, error) {
	base.Nemesis, base.Schedule = faults.None, nil
	if _, err := base.Resolve(); err != nil {
		return Space{}, err
	}
	var names []string
	if nemesis != "" && nemesis != faults.None {
		n, err := faults.Parse(nemesis)
		if err != nil {
			return Space{}, err
		}
		for _, g := range n {
			for _, in := range g {
				if !slices.Contains(names, in.Name) {
					names = append(names, in.Name)
				}
			}
		}
	} else {
		for _, f := range faults.Registry {
			names = append(names, f.Name)
		}
	}
	s := Space{Base: base}
	var refused []string
	for _, name := range names {
		try := base
		try.Nemesis = name
		if _, err := try.Resolve(); err != nil {
			if nemesis != "" {
				refused = append(refused, err.Error())
			}
			continue
		}
		f, _ := faults.Lookup(name)
		s.Faults = append(s.Faults, f)
		for _, w := range f.NodeWords() {
			try.Nemesis = name + ":node=" + w
			if _, err := try.Resolve(); err == nil {
				if s.NodeWords == nil {
					s.NodeWords = map[string][]string{}
				}
				s.NodeWords[name] = append(s.NodeWords[name], w)
			}
		}
		for _, o := range f.Options {
			for _, choice := range o.Choices {
				try.Nemesis = name + ":" + o.Name + "=" + choice
				if _, err := try.Resolve(); err == nil {
					if s.Choices == nil {
						s.Choices = map[string]map[string][]string{}
					}
					if s.Choices[name] == nil {
						s.Choices[name] = map[string][]string{}
					}
					s.Choices[name][o.Name] = append(s.Choices[name][o.Name], choice)
				}
			}
		}
	}
	if len(refused) > 0 {
		return s, fmt.Errorf("explore: %s", strings.Join(refused, "; "))
	}
	if len(s.Faults) == 0 {
		return s, fmt.Errorf("explore: no fault can be injected on topology %s with lock %s", base.Topology, base.Lock)
	}
	return s, nil
}

// FaultNames are the space's faults, in the registry's order.
func (s Space) FaultNames() []string {
	names := make([]string, len(s.Faults))
	for i, f := range s.Faults {
		names[i] = f.Name
	}
	return names
}

func (s Space) ttl() time.Duration { return s.Base.TTL.D() }

// Spec is the scenario a run of g follows: the base spec with g's clients
// and hold, and g's genes as its schedule.
func (s Space) Spec(g Genome, seed int64) scenario.Spec {
	spec := s.Base
	spec.Seed, spec.Clients, spec.Hold = seed, g.Clients, scenario.Duration(g.Hold)
	spec.Schedule = nil
	var names []string
	for _, ge := range g.Genes {
		opts := ge.Options
		if slot, ok := opts["clients"]; ok {
			// A slot the genome's fewer clients lack hits the last one.
			var n int
			if _, err := fmt.Sscan(slot, &n); err == nil && n >= g.Clients {
				opts = maps.Clone(opts)
				opts["clients"] = fmt.Sprint(g.Clients - 1)
			}
		}
		st := scenario.Step{Fault: opts.With(ge.Fault), At: scenario.Duration(ge.At)}
		switch ge.Anchor {
		case AnchorTime:
		case AnchorPromotion:
			var d scenario.Duration
			st.AfterPromotion = &d
		default:
			d := scenario.Duration(s.delay(ge.Anchor, g.Hold))
			st.AfterGrant = &d
		}
		spec.Schedule = append(spec.Schedule, st)
		if !slices.Contains(names, ge.Fault) {
			names = append(names, ge.Fault)
		}
	}
	spec.Nemesis = strings.Join(names, ",")
	if len(names) == 0 {
		spec.Nemesis = faults.None
	}
	return spec
}

// delay is how long after a grant an anchor strikes.
func (s Space) delay(anchor string, hold time.Duration) time.Duration {
	switch anchor {
	case AnchorMidHold:
		return hold / 2
	case AnchorBeforeRelease:
		return max(hold-max(hold/10, 5*time.Millisecond), 0)
	}
	return 0
}

// latest is the latest a fault may start: early enough that its window
// (up to a few TTLs, or a failover's 5-7 s) shows something before the
// time limit.
func (s Space) latest() time.Duration {
	return max(s.Base.TimeLimit.D()/2, time.Second)
}

// Swarm is the enabled part of the space for one fresh schedule: each
// fault and anchor kept with probability one half (at least one of
// each), so that schedules differ in what they leave out (swarm testing).
type Swarm struct {
	Faults  []string `json:"faults"`
	Anchors []string `json:"anchors"`
}

func (s Space) swarm(rng *rand.Rand) Swarm {
	half := func(all []string, keep func(string) float64) []string {
		var out []string
		for _, x := range all {
			if rng.Float64() < keep(x) {
				out = append(out, x)
			}
		}
		if len(out) == 0 {
			out = []string{all[rng.Intn(len(all))]}
		}
		return out
	}
	return Swarm{Faults: half(s.FaultNames(), s.keep), Anchors: half(s.anchors(), func(string) float64 { return 0.5 })}
}

// Arms are the choices a fresh schedule makes, each as guided search
// weighs it: every fault (by its name), anchor, number of clients and
// hold.
func (s Space) Arms() []string {
	arms := s.FaultNames()
	for _, a := range s.anchors() {
		arms = append(arms, anchorArm(a))
	}
	for _, n := range s.clientChoices() {
		arms = append(arms, clientsArm(n))
	}
	for _, h := range s.holdChoices() {
		arms = append(arms, holdArm(h))
	}
	return arms
}

// ArmsOf are the arms a genome drew, each once.
func ArmsOf(g Genome) []string {
	arms := []string{clientsArm(g.Clients), holdArm(g.Hold)}
	for _, ge := range g.Genes {
		for _, a := range []string{ge.Fault, anchorArm(ge.Anchor)} {
			if !slices.Contains(arms, a) {
				arms = append(arms, a)
			}
		}
	}
	return arms
}

func anchorArm(a string) string      { return "anchor " + a }
func clientsArm(n int) string        { return fmt.Sprintf("clients %d", n) }
func holdArm(h time.Duration) string { return "hold " + h.String() }

// choose draws one of choices (none empty): by their arms' weights where
// there are any, else alike.
func choose[T any](s Space, rng *rand.Rand, choices []T, arm func(T) string) T {
	if len(s.Weights) == 0 {
		return choices[rng.Intn(len(choices))]
	}
	total := 0.0
	for _, c := range choices {
		total += s.weight(arm(c))
	}
	r := rng.Float64() * total
	for _, c := range choices {
		if r < s.weight(arm(c)) {
			return c
		}
		r -= s.weight(arm(c))
	}
	return choices[len(choices)-1]
}

// weight is how much an arm is drawn (1 where none was learnt).
func (s Space) weight(name string) float64 {
	if w, ok := s.Weights[name]; ok {
		return w
	}
	return 1
}

// keep is the chance a swarm keeps a fault: one half, more or less as its
// weight stands to the mean weight (a tenth to nine tenths).
func (s Space) keep(name string) float64 {
	if len(s.Weights) == 0 {
		return 0.5
	}
	mean := 0.0
	for _, f := range s.Faults {
		mean += s.weight(f.Name)
	}
	mean /= float64(len(s.Faults))
	return min(max(0.5*s.weight(name)/mean, 0.1), 0.9)
}

// Fresh draws a schedule from a fresh swarm: one to three faults (one
// half the time), each with options, an anchor and a moment.
func (s Space) Fresh(rng *rand.Rand) (Genome, Swarm) {
	sw := s.swarm(rng)
	g := Genome{Clients: s.Base.Clients, Hold: s.Base.Hold.D()}
	// Half the schedules run with fewer clients, half with another hold:
	// a pause that must end just after another's release, or a lease that
	// must be extended, needs them.
	if rng.Intn(2) == 0 {
		g.Clients = s.clients(rng)
	}
	if rng.Intn(2) == 0 {
		g.Hold = s.hold(rng)
	}
	for range oneToThree(rng, 0.35, 0.15) {
		g.Genes = append(g.Genes, s.gene(rng, sw))
	}
	return g, sw
}

// gene draws one fault from the swarm.
func (s Space) gene(rng *rand.Rand, sw Swarm) Gene {
	name := choose(s, rng, sw.Faults, func(f string) string { return f })
	ge := Gene{Fault: name, Anchor: choose(s, rng, sw.Anchors, anchorArm), At: s.moment(rng)}
	f, _ := faults.Lookup(name)
	for _, o := range f.Options {
		if rng.Intn(2) == 0 {
			s.setOption(rng, &ge, o)
		}
	}
	return ge
}

// moment draws when a fault starts: from a third of a second to latest.
func (s Space) moment(rng *rand.Rand) time.Duration {
	lo := 300 * time.Millisecond
	return (lo + time.Duration(rng.Int63n(int64(s.latest()-lo)+1))).Round(time.Millisecond)
}

// setOption gives a fault's option a value the search can vary: a
// duration around the TTL, a choice, a node word, client slots. An
// option the search cannot draw a value for is left to the fault.
func (s Space) setOption(rng *rand.Rand, ge *Gene, o options.Spec) {
	var v string
	ttl := s.ttl()
	switch o.Kind {
	case options.Duration:
		v = scaled(rng, ttl).String()
	case options.SignedDuration:
		d := scaled(rng, ttl)
		if rng.Intn(4) == 0 {
			d = -d
		}
		v = d.String()
	case options.Choice:
		choices := s.Choices[ge.Fault][o.Name]
		if len(choices) == 0 {
			return
		}
		v = choices[rng.Intn(len(choices))]
	case options.Word:
		if o.Name != "node" {
			return
		}
		words := s.NodeWords[ge.Fault]
		if len(words) == 0 {
			return
		}
		v = words[rng.Intn(len(words))]
	case options.Slots:
		if s.Base.Clients < 2 {
			return
		}
		v = fmt.Sprint(rng.Intn(s.Base.Clients))
	case options.Flag:
		v = ""
	default:
		return
	}
	if ge.Options == nil {
		ge.Options = options.Values{}
	}
	ge.Options[o.Name] = v
}

// scaled draws a duration from a tenth of the TTL to three TTLs, favouring
// the TTL's own neighbourhood, where leases are decided.
func scaled(rng *rand.Rand, ttl time.Duration) time.Duration {
	factors := []float64{0.1, 0.25, 0.5, 0.75, 0.9, 1, 1.1, 1.25, 1.5, 2, 3}
	f := factors[rng.Intn(len(factors))] * (0.9 + 0.2*rng.Float64())
	return time.Duration(f * float64(ttl)).Round(time.Millisecond)
}

// The mutations of a genome, with their weights (of 100).
var mutations = []struct {
	name   string
	weight int
}{
	{"re-anchor", 20}, {"option", 20}, {"insert", 10}, {"move", 10},
	{"replace", 10}, {"delete", 10}, {"clients", 10}, {"hold", 5}, {"splice", 5},
}

// maxGenes bounds a schedule: most failures need at most three faults.
const maxGenes = 4

// Mutate changes g by one to three mutations (one most often), drawing new
// faults and anchors from its swarm; other is a second parent for a
// splice. It says which mutations it made.
func (s Space) Mutate(rng *rand.Rand, g Genome, sw Swarm, other Genome) (Genome, []string) {
	out := Genome{Genes: slices.Clone(g.Genes), Clients: g.Clients, Hold: g.Hold}
	for i := range out.Genes {
		out.Genes[i].Options = maps.Clone(out.Genes[i].Options)
	}
	var did []string
	for range oneToThree(rng, 0.3, 0.1) {
		did = append(did, s.mutateOnce(rng, &out, sw, other))
	}
	return out, did
}

// oneToThree draws 2 with probability two, 3 with probability three, else 1.
func oneToThree(rng *rand.Rand, two, three float64) int {
	switch r := rng.Float64(); {
	case r < three:
		return 3
	case r < three+two:
		return 2
	}
	return 1
}

func (s Space) mutateOnce(rng *rand.Rand, g *Genome, sw Swarm, other Genome) string {
	total := 0
	for _, m := range mutations {
		total += m.weight
	}
	pick := rng.Intn(total)
	name := mutations[len(mutations)-1].name
	for _, m := range mutations {
		if pick < m.weight {
			name = m.name
			break
		}
		pick -= m.weight
	}
	if len(g.Genes) == 0 {
		name = "insert"
	}
	i := rng.Intn(max(len(g.Genes), 1))
	switch name {
	case "re-anchor":
		g.Genes[i].Anchor = s.anchors()[rng.Intn(len(s.anchors()))]
	case "option":
		f, _ := faults.Lookup(g.Genes[i].Fault)
		if len(f.Options) == 0 {
			g.Genes[i].At = s.nudge(rng, g.Genes[i].At)
			return "move"
		}
		o := f.Options[rng.Intn(len(f.Options))]
		if _, ok := g.Genes[i].Options[o.Name]; ok && rng.Intn(3) == 0 {
			delete(g.Genes[i].Options, o.Name) // back to the fault's own draw
			return "option"
		}
		s.setOption(rng, &g.Genes[i], o)
	case "insert":
		if len(g.Genes) >= maxGenes {
			g.Genes[i].At = s.nudge(rng, g.Genes[i].At)
			return "move"
		}
		g.Genes = append(g.Genes, s.gene(rng, sw))
	case "move":
		g.Genes[i].At = s.nudge(rng, g.Genes[i].At)
	case "replace":
		ge := s.gene(rng, sw)
		ge.Anchor, ge.At = g.Genes[i].Anchor, g.Genes[i].At
		g.Genes[i] = ge
	case "delete":
		if len(g.Genes) < 2 {
			g.Genes[i].Anchor = s.anchors()[rng.Intn(len(s.anchors()))]
			return "re-anchor"
		}
		g.Genes = slices.Delete(g.Genes, i, i+1)
	case "clients":
		g.Clients = s.clients(rng)
	case "hold":
		g.Hold = s.hold(rng)
	case "splice":
		if len(other.Genes) == 0 {
			return s.mutateOnce(rng, g, sw, other)
		}
		cut := rng.Intn(len(g.Genes) + 1)
		from := rng.Intn(len(other.Genes))
		g.Genes = append(g.Genes[:cut:cut], other.Genes[from:]...)
		if len(g.Genes) > maxGenes {
			g.Genes = g.Genes[:maxGenes]
		}
	}
	return name
}

// nudge moves a moment by up to a TTL either way, within the space.
func (s Space) nudge(rng *rand.Rand, at time.Duration) time.Duration {
	ttl := s.ttl()
	d := at + time.Duration(rng.Int63n(int64(2*ttl)+1)) - ttl
	return min(max(d, 300*time.Millisecond), s.latest()).Round(time.Millisecond)
}

// clients draws a number of clients from two to the base's (at least
// four).
func (s Space) clients(rng *rand.Rand) int {
	return choose(s, rng, s.clientChoices(), clientsArm)
}

func (s Space) clientChoices() []int {
	var n []int
	for c := 2; c <= max(s.Base.Clients, 4); c++ {
		n = append(n, c)
	}
	return n
}

// hold draws a hold: the base's, a quarter or half of the TTL (a lease a
// renewing client extends), or one and a half TTLs (which only renewal
// survives).
func (s Space) hold(rng *rand.Rand) time.Duration {
	return choose(s, rng, s.holdChoices(), holdArm)
}

// Draws says what each run of the search draws of its workload, for a
// plan: its clients and its hold.
func (s Space) Draws() string {
	cs, hs := s.clientChoices(), s.holdChoices()
	var holds []string
	for _, h := range hs {
		if w := h.String(); !slices.Contains(holds, w) {
			holds = append(holds, w)
		}
	}
	return fmt.Sprintf("each run draws %d-%d clients and a hold of %s", cs[0], cs[len(cs)-1], strings.Join(holds, ", "))
}

func (s Space) holdChoices() []time.Duration {
	ttl := s.ttl()
	return []time.Duration{s.Base.Hold.D(), ttl / 4, ttl / 2, ttl * 3 / 2}
}
