package runner

import (
	"strings"
	"testing"
	"time"

	"github.com/lockharness/lockharness/faults"
	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/reports"
)

// Every fault is drawn as it declares: in a history holding all of them,
// the timeline's key gives each its declared colour and legend words; no
// fault's colour is one the timeline draws an answer, a lease, a write or
// an anomaly in; and what the harness observed, which no fault declares,
// takes a colour of the palette that no fault beside it has.
func TestEveryFaultIsDrawnAsItDeclares(t *testing.T) {
	var events []history.Event
	add := func(name, phase string) {
		facts := history.Facts{Nodes: []string{"n1"}}
		events = append(events, history.Event{Index: len(events), Time: int64(len(events)) * int64(time.Millisecond),
			Type: history.Info, Process: history.Nemesis, F: name, Phase: phase, Target: "n1", Facts: &facts})
	}
	for _, f := range faults.Registry {
		add(f.Name, history.Start)
		add(f.Name, history.End)
	}
	const seen = "switch-master"
	add(seen, history.Instant)

	keys := map[string]reports.FaultKey{}
	for _, k := range reports.TimelineData(events, reports.Results{}).FaultKeys() {
		keys[k.Fault] = k
	}
	for _, f := range faults.Registry {
		k, ok := keys[f.Name]
		switch {
		case !ok:
			t.Errorf("%s: not in the key", f.Name)
			continue
		case k.Colour != f.Drawing.Colour:
			t.Errorf("%s: drawn in %v, declares %v", f.Name, k.Colour, f.Drawing.Colour)
		case k.Label != "fault: "+f.Name+" ("+f.Drawing.Legend+")":
			t.Errorf("%s: key says %q, declares the legend %q", f.Name, k.Label, f.Drawing.Legend)
		}
		if clash := reports.ColourClash(f.Drawing.Colour); clash != "" {
			t.Errorf("%s: its colour %v is nearly that of %q on the timeline", f.Name, f.Drawing.Colour, clash)
		}
	}
	k := keys[seen]
	if !strings.HasPrefix(k.Label, "seen: ") || k.Colour.A == 0 {
		t.Fatalf("the observation's key entry: %+v", k)
	}
	for _, f := range faults.Registry {
		if k.Colour == f.Drawing.Colour {
			t.Errorf("the observation %s is drawn in %s's colour %v", seen, f.Name, k.Colour)
		}
	}
}
