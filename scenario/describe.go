package scenario

import (
	"cmp"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/lockharness/lockharness/cluster"
	"github.com/lockharness/lockharness/workloads"
)

// Described is what a resolved run will do, said before anything starts
// (`--plan`): the same resolution a run makes, so a command line a run
// would refuse is refused here with the same words.
type Described struct {
	Name string `json:"name"`
	Seed int64  `json:"seed"`
	// Expect is what a repro or suite row expects of the run; empty for
	// a run.
	Expect string `json:"expect,omitempty"`
	// Topology is the topology's name and shape, Backend where its nodes
	// run.
	Topology string `json:"topology"`
	Shape    string `json:"shape,omitempty"`
	Backend  string `json:"backend"`
	Image    string `json:"image,omitempty"`
	Target   string `json:"target,omitempty"`
	// Nodes and Sentinels are the nodes the topology starts, by name.
	Nodes     []string `json:"nodes"`
	Sentinels []string `json:"sentinels,omitempty"`
	// Ports says where the nodes listen, Links how the clients and the
	// nodes reach each other.
	Ports string `json:"ports"`
	Links string `json:"links"`
	// Lock is the lock as it names itself; Worker the exec worker's ready
	// line, when the lock is one.
	Lock   string           `json:"lock"`
	Worker *workloads.Ready `json:"worker,omitempty"`
	// Clients, TTL, Hold and TimeLimit are the workload's shape; Drawn
	// says what each run of a search draws instead.
	Clients   int      `json:"clients"`
	Drawn     string   `json:"drawn,omitempty"`
	TTL       string   `json:"ttl"`
	Hold      string   `json:"hold"`
	TimeLimit string   `json:"time_limit"`
	Keys      []string `json:"keys"`
	Workload  string   `json:"workload"`
	// Faults are the nemesis's faults, each with what it needs of the
	// topology (every need was checked against it); Schedule the steps
	// of a followed schedule instead of a drawn one.
	Nemesis  string           `json:"nemesis"`
	Faults   []DescribedFault `json:"faults,omitempty"`
	Schedule []Step           `json:"schedule,omitempty"`
	Resource string           `json:"resource"`
	// Command re-runs the run exactly, into the same store; empty when
	// only a file the run writes will hold its schedule.
	Command string `json:"command"`
	// Notes say what the plan cannot fix before the run starts.
	Notes []string `json:"notes,omitempty"`
}

// DescribedFault is one fault of a plan: as written, and what it needs.
type DescribedFault struct {
	Fault string   `json:"fault"`
	Needs []string `json:"needs,omitempty"`
	// Does says what it does (the fault's summary).
	Does string `json:"does"`
}

// Describe says what the plan will do. It starts nothing.
func (p Plan) Describe() Described {
	s := p.Spec
	d := Described{Name: s.Name, Seed: s.Seed, Topology: s.Topology, Backend: s.Backend, Image: s.Image, Target: s.Target,
		Lock: p.LockProvenance().Label(), Clients: s.Clients, TTL: s.TTL.String(), Hold: s.Hold.String(),
		TimeLimit: s.TimeLimit.String(), Workload: s.Workload, Nemesis: s.Nemesis, Schedule: s.Schedule,
		Resource: cmp.Or(s.Resource, "none")}
	if len(s.Schedule) == 0 {
		// A scheduled run's command names the file it writes beside
		// itself, which does not exist yet (runner.PlannedCommand).
		d.Command = s.Command()
	}
	if s.Backend == cluster.BackendDocker {
		d.Image = cmp.Or(s.Image, cluster.DefaultImage)
	}
	if s.Lock == ExecLock {
		w := p.Worker
		d.Worker = &w
	}
	d.Keys = p.Keys
	if len(d.Keys) == 0 {
		d.Keys = []string{s.Key}
	}
	if c := p.Cluster; c != nil {
		d.Shape = c.Shape()
		if d.Shape == d.Topology {
			d.Shape = ""
		}
		d.Nodes, d.Sentinels = c.NodeNames(), c.SentinelNames()
	}
	d.Ports = "free ports on 127.0.0.1, chosen when each node starts"
	if s.Target != "" {
		d.Ports = "the target's own: " + s.Target
	}
	d.Links = "clients reach the nodes directly"
	if p.Nemesis.CutsClientLinks() {
		d.Links = "clients reach each node through a proxy of their own, which the faults cut or slow"
	}
	for _, g := range p.Nemesis {
		for _, in := range g {
			f := DescribedFault{Fault: in.String(), Does: in.Summary}
			for _, n := range in.Needs {
				f.Needs = append(f.Needs, string(n))
			}
			if in.NeedsClock {
				f.Needs = append(f.Needs, "clock shim")
			}
			d.Faults = append(d.Faults, f)
		}
	}
	return d
}

// WriteText writes the description for a reader, a line a field.
func (d Described) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(name, format string, args ...any) {
		fmt.Fprintf(tw, "  %s\t%s\n", name, fmt.Sprintf(format, args...))
	}
	fmt.Fprintf(tw, "plan %s, seed %d\n", d.Name, d.Seed)
	if d.Expect != "" {
		row("expect", "%s", d.Expect)
	}
	topology := d.Topology
	if d.Shape != "" {
		topology += " (" + d.Shape + ")"
	}
	where := d.Backend + " backend"
	if d.Image != "" {
		where += ", image " + d.Image
	}
	row("topology", "%s on the %s", topology, where)
	nodes := strings.Join(d.Nodes, " ")
	if len(d.Sentinels) > 0 {
		nodes += "; sentinels " + strings.Join(d.Sentinels, " ")
	}
	if nodes != "" {
		row("nodes", "%s", nodes)
	}
	row("ports", "%s", d.Ports)
	row("links", "%s", d.Links)
	row("lock", "%s", d.Lock)
	if w := d.Worker; w != nil {
		row("worker", "ready: %s %s, protocol %d%s", w.Name, w.Version, w.Protocol, readyTraits(*w))
	}
	if d.Drawn != "" {
		row("workload", "%s on %s, ttl %s, for %s; %s", d.Workload, strings.Join(d.Keys, " "), d.TTL, d.TimeLimit, d.Drawn)
	} else {
		row("workload", "%s: %d clients on %s, ttl %s, hold %s, for %s", d.Workload, d.Clients, strings.Join(d.Keys, " "), d.TTL, d.Hold, d.TimeLimit)
	}
	row("nemesis", "%s", d.Nemesis)
	for _, f := range d.Faults {
		needs := ""
		if len(f.Needs) > 0 {
			needs = " (needs " + strings.Join(f.Needs, ", ") + ": offered)"
		}
		row("  fault", "%s%s: %s", f.Fault, needs, f.Does)
	}
	for _, st := range d.Schedule {
		row("  step", "%s", st)
	}
	row("resource", "%s", d.Resource)
	if d.Command != "" {
		row("re-run", "%s", d.Command)
	} else {
		row("re-run", "%s", "recorded by the run: it follows a schedule only a file holds, which the run writes beside itself")
	}
	for _, n := range d.Notes {
		row("note", "%s", n)
	}
	return tw.Flush()
}

// readyTraits spells what a worker's ready line announced beyond its name.
func readyTraits(r workloads.Ready) string {
	var traits []string
	if r.Extend {
		traits = append(traits, "extends")
	}
	if r.Fences {
		traits = append(traits, "fences")
	}
	if r.Renewals != "" {
		traits = append(traits, "renewals "+r.Renewals)
	}
	if len(r.Points) > 0 {
		traits = append(traits, "pause points "+strings.Join(r.Points, " "))
	}
	for _, n := range r.Needs {
		traits = append(traits, "needs "+string(n))
	}
	if len(traits) == 0 {
		return ""
	}
	return "; " + strings.Join(traits, ", ")
}
