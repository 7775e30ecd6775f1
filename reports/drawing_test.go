package reports

import (
	"bytes"
	"fmt"
	"image/png"
	"slices"
	"strings"
	"testing"

	"github.com/lockharness/lockharness/history"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// drawAs declares drawings for the test's faults by name, as the scenario
// package does for the registry's.
func drawAs(t *testing.T, drawings map[string]history.Drawing) {
	saved := FaultDrawing
	FaultDrawing = func(name string) (history.Drawing, bool) {
		d, ok := drawings[name]
		return d, ok
	}
	t.Cleanup(func() { FaultDrawing = saved })
}

// A fault that declares its drawing is drawn so on the image and on the
// page: its colour on its bands and in both keys, its legend words after
// its name. One that declares none takes the palette's next colour apart
// from every colour beside it, never a declared one's.
func TestFaultsAreDrawnAsTheyDeclare(t *testing.T) {
	killed := history.Drawing{Colour: faultPalette[0], Legend: "node killed, restarted"}
	drawAs(t, map[string]history.Drawing{"kill-node": killed})
	events, res := pausedHolder()
	tl := TimelineData(events, res)
	colors := tl.faultColors()
	if colors["kill-node"] != killed.Colour {
		t.Errorf("kill-node is drawn in %v, declares %v", colors["kill-node"], killed.Colour)
	}
	// pause-client comes first: in order of appearance alone it would
	// take the palette's first colour, which kill-node declares.
	if colors["pause-client"] != faultPalette[1] {
		t.Errorf("pause-client, which declares nothing, is drawn in %v, want the palette's next free colour %v", colors["pause-client"], faultPalette[1])
	}
	var labels []string
	for _, k := range tl.FaultKeys() {
		labels = append(labels, k.Label)
	}
	if want := []string{"fault: pause-client", "fault: kill-node (node killed, restarted)"}; !slices.Equal(labels, want) {
		t.Errorf("the key says %q, want %q", labels, want)
	}

	var b strings.Builder
	if err := WriteTimelineHTML(&b, "x", analyse(events), tl, res); err != nil {
		t.Fatal(err)
	}
	data := timelinePageData(t, b.String())
	if got, want := data.FaultColors["kill-node"], cssColor(killed.Colour, 1); got != want {
		t.Errorf("the page draws kill-node in %s, want %s", got, want)
	}
	if !slices.ContainsFunc(data.Legend, func(k htmlKey) bool {
		return k.Label == "fault: kill-node (node killed, restarted)" && k.Color == cssColor(killed.Colour, 0.85)
	}) {
		t.Errorf("the page's key lacks kill-node as it declares: %+v", data.Legend)
	}
}

// The image's key is drawn whole: a run with many faults, each with its
// words on a line of their own, makes timeline.png taller than its rows
// need rather than cut the key off.
func TestTimelineKeyFitsItsImage(t *testing.T) {
	events, res := pausedHolder()
	b := builder{events: events}
	drawings := map[string]history.Drawing{}
	for i := range 10 {
		name := fmt.Sprintf("fault-%d", i)
		drawings[name] = history.Drawing{Colour: faultPalette[i%len(faultPalette)], Legend: "what it does"}
		b.at(4+float64(i)*0.1, fault(name, history.Start, "n1", ""))
		b.at(4.05+float64(i)*0.1, fault(name, history.End, "n1", ""))
	}
	drawAs(t, drawings)
	tl := TimelineData(b.events, res)
	leg := timelineLegend(tl)
	r := leg.Rectangle(draw.Canvas{})
	need := r.Max.Y - r.Min.Y + legendTop
	if need <= timelineRows(tl).height() {
		t.Fatalf("the key (%.0f pt) fits the rows' height (%.0f pt): the test shows nothing", need, timelineRows(tl).height())
	}
	var img bytes.Buffer
	if err := WriteTimelinePNG(&img, tl); err != nil {
		t.Fatal(err)
	}
	cfg, err := png.DecodeConfig(&img)
	if err != nil {
		t.Fatal(err)
	}
	if h := vg.Length(cfg.Height) / dpi * vg.Inch; h < need {
		t.Errorf("timeline.png is %.0f pt tall, its key needs %.0f pt", h, need)
	}
	if w, h := TimelineSize(tl); cfg.Width != w || cfg.Height != h {
		t.Errorf("timeline is %dx%d, TimelineSize says %dx%d", cfg.Width, cfg.Height, w, h)
	}
}
