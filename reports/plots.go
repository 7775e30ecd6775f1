package reports

import (
	"fmt"
	"git.sr.ht/~sbinet/gg"
	"image"
	"image/color"
	"image/png"
	"io"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/history"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Image geometry. The width suits a laptop screen at 96 dpi (screenDPI,
// the size the page shows a plot at); the images are drawn at twice that,
// so that they stay sharp on a high-density screen. The timeline grows
// with its rows up to a cap, beyond which rows get thinner rather than the
// image taller.
const (
	screenDPI    = 96
	dpi          = 2 * screenDPI
	plotWidth    = 14 * vg.Inch
	legendWidth  = 2.3 * vg.Inch
	rowHeight    = 0.6 * vg.Inch
	minHeight    = 4 * vg.Inch
	maxHeight    = 24 * vg.Inch
	latencyH     = 6 * vg.Inch
	rateH        = 4.5 * vg.Inch
	minMarkWidth = 3 // points: an instant must stay visible
	// legendTop is the legend strip's margin above its first entry, and
	// legendBottom the least below its last.
	legendTop, legendBottom = 30, 4
	// timelineData is the width of timeline.png's data area: the image
	// less the legend and the lane labels.
	timelineData = plotWidth - legendWidth - vg.Inch
)

// Colours. Fills that overlay data are color.NRGBA: gonum's image canvas
// treats color.RGBA as premultiplied and would paint them opaque.
var (
	sans = font.Font{Typeface: "Liberation", Variant: "Sans"}

	red       = color.NRGBA{R: 214, G: 39, B: 40, A: 255}
	redFill   = color.NRGBA{R: 214, G: 39, B: 40, A: 80}
	darkRed   = color.NRGBA{R: 150, G: 20, B: 20, A: 255}
	leaseFill = color.NRGBA{R: 70, G: 130, B: 180, A: 255}
	pastValid = color.NRGBA{R: 70, G: 130, B: 180, A: 90}
	finalFill = color.NRGBA{R: 150, G: 150, B: 150, A: 255}
	rowLine   = color.NRGBA{R: 210, G: 210, B: 210, A: 255}

	// Jepsen's colours for ok, info and fail (jepsen.checker.perf), so
	// that a Jepsen reader reads them at a glance; a busy answer, which
	// Jepsen would count a fail, is ordinary contention and grey.
	outcomeColor = map[string]color.NRGBA{
		AnswerOK:   {R: 0x81, G: 0xBF, B: 0xFC, A: 210},
		AnswerBusy: {R: 150, G: 150, B: 150, A: 150},
		AnswerFail: {R: 0xFF, G: 0x1E, B: 0x90, A: 220},
		AnswerInfo: {R: 0xFF, G: 0xA4, B: 0x00, A: 230},
	}
	answerLegend = map[string]string{
		AnswerOK:   "ok",
		AnswerBusy: "busy (lock held: contention)",
		AnswerFail: "fail (error, refused, not held)",
		AnswerInfo: "info (timeout, unknown)",
	}
	writeStyle = map[string]draw.GlyphStyle{
		WriteAccepted: {Color: color.NRGBA{G: 130, A: 255}, Radius: 3, Shape: draw.CircleGlyph{}},
		WriteRejected: {Color: color.NRGBA{R: 230, G: 120, A: 255}, Radius: 4.5, Shape: thickCross{}},
		WriteStale:    {Color: red, Radius: 6, Shape: draw.PyramidGlyph{}},
		WriteRefused:  {Color: red, Radius: 6, Shape: thickCross{}},
		WriteUnknown:  {Color: color.NRGBA{R: 110, G: 110, B: 110, A: 255}, Radius: 3.5, Shape: draw.RingGlyph{}},
	}
	writeLegend = map[string]string{
		WriteAccepted: "write accepted",
		WriteRejected: "write rejected (fence)",
		WriteStale:    "stale write",
		WriteRefused:  "legitimate write refused",
		WriteUnknown:  "write outcome unknown",
	}
	kindShape = map[string]draw.GlyphDrawer{
		history.Acquire: draw.CircleGlyph{},
		history.Extend:  draw.BoxGlyph{},
		history.Release: draw.PyramidGlyph{},
		history.Write:   diamond{},
		history.Read:    thickCross{},
	}
	kinds = []string{history.Acquire, history.Extend, history.Release, history.Write, history.Read}

	// Acquires that granted nothing certain, drawn faintly under the
	// leases: refused ones thin and grey, unknown ones (info) the colour of
	// a lease that may be there.
	attemptFill = map[string]color.NRGBA{
		history.Fail: {R: 120, G: 120, B: 120, A: 60},
		history.Info: {R: 255, G: 127, B: 14, A: 70},
	}

	// Colours for faults that declare none (faultColors). Fault colours
	// avoid red (anomalies), green (ok) and orange (an info answer, an
	// unknown acquire).
	faultPalette = []color.NRGBA{
		{R: 148, G: 103, B: 189, A: 70},
		{R: 23, G: 190, B: 207, A: 70},
		{R: 188, G: 189, B: 34, A: 80},
		{R: 140, G: 86, B: 75, A: 70},
		{R: 227, G: 119, B: 194, A: 70},
		{R: 127, G: 127, B: 127, A: 70},
	}
)

// WriteTimelinePNG draws timeline.png: a lane per client with its leases,
// protected writes, the fault bands across every lane and a row per
// anomaly kind above them.
func WriteTimelinePNG(w io.Writer, t Timeline) error {
	rows := timelineRows(t)
	p := newPlot("Who held the lock when (as each client believed)")
	p.Y.Min, p.Y.Max = -0.5, float64(len(rows.names))-0.5
	p.Y.Padding = 0
	var ticks []plot.Tick
	for i, name := range rows.names {
		ticks = append(ticks, plot.Tick{Value: rows.y(i), Label: name})
	}
	p.Y.Tick.Marker = plot.ConstantTicks(ticks)
	setXFrom(p, t.Start, t.End)
	colors := t.faultColors()
	dense := acceptedTooDense(t, timelineData)
	p.Add(xGrid(), bandsPlotter{bands: t.Bands, colors: colors, labelTop: rows.faults >= 0, row: rows.y(rows.faults)},
		timelinePlotter{t: t, rows: rows, dense: dense})

	return savePNG(w, p, timelineLegend(t), timelineHeight(t))
}

// timelineLegend is timeline.png's key, of what t shows.
func timelineLegend(t Timeline) plot.Legend {
	dense := acceptedTooDense(t, timelineData)
	leg := newLegend()
	leg.Add("lease, acquire to release", swatch{fill: leaseFill})
	if hasNodes(t) {
		leg.Add("n1: where the grant was found", swatch{})
	}
	for _, oc := range []string{history.Info, history.Fail} {
		if hasAttempt(t, oc) {
			leg.Add(attemptLegend[oc], swatch{fill: attemptFill[oc]})
		}
	}
	if hasPastValid(t) {
		leg.Add("believed past its validity", swatch{fill: pastValid})
	}
	if hasFinal(t) {
		leg.Add("final check's lease", swatch{fill: finalFill})
	}
	present := map[string]bool{}
	for _, wm := range t.Writes {
		present[wm.Status] = true
	}
	for _, s := range []string{WriteAccepted, WriteRejected, WriteStale, WriteRefused, WriteUnknown} {
		switch {
		case !present[s]:
		case s == WriteAccepted && dense:
			leg.Add("accepted writes not drawn", swatch{})
		default:
			leg.Add(writeLegend[s], glyphThumb(writeStyle[s]))
		}
	}
	if len(t.RedSpans) > 0 {
		leg.Add("anomaly (#n as on the page)", swatch{fill: redFill, line: draw.LineStyle{Color: red, Width: 1}})
		leg.Add("lease in an anomaly", swatch{fill: leaseFill, line: draw.LineStyle{Color: red, Width: 2}})
	}
	addFaultLegend(&leg, t.FaultKeys())
	return leg
}

// timelineHeight is timeline.png's height: its rows' (layout.height), or
// more when its key needs more, so that every entry of the key is drawn.
func timelineHeight(t Timeline) vg.Length {
	leg := timelineLegend(t)
	r := leg.Rectangle(draw.Canvas{})
	return max(timelineRows(t).height(), r.Max.Y-r.Min.Y+legendTop+legendBottom)
}

// TimelineSize is the size in pixels timeline.png has for t.
func TimelineSize(t Timeline) (w, h int) {
	return px(plotWidth), px(timelineHeight(t))
}

// TimelineScreenSize is the size, in CSS pixels, the page shows
// timeline.png at: half its pixels.
func TimelineScreenSize(t Timeline) (w, h int) {
	return screenPx(plotWidth), screenPx(timelineHeight(t))
}

var attemptLegend = map[string]string{
	history.Info: "acquire unknown (to its ttl)",
	history.Fail: "acquire refused",
}

// height gives each row its share, and room for the title and time axis,
// within bounds: a short timeline still fits its legend, and a very tall
// one gets thinner rows.
func (r layout) height() vg.Length {
	h := 1*vg.Inch + rowHeight*vg.Length(len(r.names))
	return min(max(h, minHeight), maxHeight)
}

func px(l vg.Length) int { return int(l/vg.Inch*dpi + 0.5) }

func screenPx(l vg.Length) int { return int(l/vg.Inch*screenDPI + 0.5) }

// layout lays out the timeline top to bottom: the fault labels, one row per
// anomaly kind present, then the client lanes.
type layout struct {
	names   []string
	faults  int            // row of the fault labels, -1 if none
	anomaly map[string]int // anomaly kind -> row
	lane    map[int]int    // client -> row
}

func timelineRows(t Timeline) layout {
	r := layout{faults: -1, anomaly: map[string]int{}, lane: map[int]int{}}
	if len(t.Bands) > 0 {
		r.faults = len(r.names)
		r.names = append(r.names, "faults")
	}
	for _, name := range anomalyOrder(t.RedSpans) {
		r.anomaly[name] = len(r.names)
		r.names = append(r.names, name)
	}
	for _, l := range t.Lanes {
		r.lane[l.Client] = len(r.names)
		r.names = append(r.names, l.Label)
	}
	if len(r.names) == 0 {
		r.names = append(r.names, "no events")
	}
	return r
}

// y is row i's centre; row 0 is at the top.
func (r layout) y(i int) float64 { return float64(len(r.names) - 1 - i) }

func anomalyOrder(spans []RedSpan) []string {
	present := map[string]bool{}
	for _, s := range spans {
		present[s.Anomaly] = true
	}
	var names []string
	for _, n := range checker.AnomalyNames {
		if present[n] {
			names = append(names, n)
			delete(present, n)
		}
	}
	var rest []string
	for n := range present {
		rest = append(rest, n)
	}
	sort.Strings(rest)
	return append(names, rest...)
}

type timelinePlotter struct {
	t    Timeline
	rows layout
	// dense leaves accepted writes out.
	dense bool
}

func (tp timelinePlotter) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	g := geometry{trX: trX, row: func(i int) vg.Length { return trY(tp.rows.y(i)) }, half: (trY(1) - trY(0)) / 2}
	for i := 1; i < len(tp.rows.names); i++ {
		y := (g.row(i-1) + g.row(i)) / 2
		c.StrokeLine2(draw.LineStyle{Color: rowLine, Width: 0.5}, c.Min.X, y, c.Max.X, y)
	}
	tp.attempts(&c, g)
	fences := tp.leases(&c, g)
	tp.redSpans(&c, g)
	// Fence labels go over the red spans, which would wash them out.
	for _, f := range fences {
		c.FillText(textStyle(8, f.color), f.at, f.text)
	}
	tp.writes(&c, g)
}

// geometry maps the timeline's data to the canvas.
type geometry struct {
	trX  func(float64) vg.Length
	row  func(int) vg.Length // a row's centre
	half vg.Length           // half a row's height
}

type fenceLabel struct {
	at    vg.Point
	text  string
	color color.Color
}

// leases draws the lease bars and returns the fence labels that fit.
func (tp timelinePlotter) leases(c *draw.Canvas, g geometry) []fenceLabel {
	final := map[int]bool{}
	for _, l := range tp.t.Lanes {
		final[l.Client] = l.Final
	}
	small := textStyle(8, color.White)
	h := g.half * 0.55
	var fences []fenceLabel
	labelEnd := map[int]vg.Length{}
	// A soak's lane holds tens of thousands of leases narrower than a
	// pixel: each lane's bars that touch are drawn as one, and only a
	// lease with more to show (a pale part, an anomaly's outline) is
	// drawn on its own, after the bars before it.
	type bar struct {
		x0, x1, y vg.Length
		fill      color.Color
	}
	bars := map[int]*bar{}
	flush := func(client int) {
		if b := bars[client]; b != nil {
			fillRect(c, b.fill, b.x0, b.y-h, b.x1, b.y+h)
			delete(bars, client)
		}
	}
	defer func() {
		for client := range bars {
			flush(client)
		}
	}()
	for _, l := range tp.t.Leases {
		r, ok := tp.rows.lane[l.Client]
		if !ok {
			continue
		}
		yc := g.row(r)
		x0, x1 := span(g.trX, l.Start, l.End, 1.5)
		fill := leaseFill
		if final[l.Client] {
			fill = finalFill
		}
		if b := bars[l.Client]; b != nil && b.fill == fill && x0 <= b.x1+0.5 {
			b.x1 = max(b.x1, x1)
		} else {
			flush(l.Client)
			bars[l.Client] = &bar{x0: x0, x1: x1, y: yc, fill: fill}
		}
		pale := l.ValidUntil > l.Start && l.ValidUntil < l.End && !final[l.Client]
		if pale || len(l.Anomalies) > 0 {
			flush(l.Client)
		}
		if pale {
			// Past its own validity the client only believes it holds
			// the lock: draw that part pale.
			xv := g.trX(l.ValidUntil.Seconds())
			fillRect(c, color.White, xv, yc-h, x1, yc+h)
			fillRect(c, pastValid, xv, yc-h, x1, yc+h)
		}
		if len(l.Anomalies) > 0 {
			strokeRect(c, draw.LineStyle{Color: red, Width: 2}, x0, yc-h, x1, yc+h)
		}
		labels := leaseLabels(l)
		if len(labels) == 0 {
			continue
		}
		if x1-x0 < minFenceLabel && len(l.Anomalies) == 0 {
			continue // no label fits; measuring it costs more than the bar
		}
		placed := false
		for _, s := range labels {
			w := small.Width(s) + 4
			if x1-x0 >= w+labelInset && x0+2 >= labelEnd[l.Client] {
				fences = append(fences, fenceLabel{vg.Point{X: x0 + labelInset, Y: yc}, s, color.White})
				labelEnd[l.Client] = x0 + w + labelInset
				placed = true
				break
			}
		}
		if !placed && len(l.Anomalies) > 0 {
			// An anomaly's lease is always named, beside its bar when it
			// is too short to hold the label.
			s := labels[len(labels)-1]
			for _, long := range labels {
				if x1+3+small.Width(long) <= c.Max.X {
					s = long
					break
				}
			}
			fences = append(fences, fenceLabel{vg.Point{X: x1 + 3, Y: yc}, s, darkRed})
			labelEnd[l.Client] = x1 + 3 + small.Width(s) + 4
		}
	}
	return fences
}

// minFenceLabel is narrower than any lease label ("1" and its margins);
// labelInset keeps a label clear of the write mark at its bar's start.
const (
	minFenceLabel = 6
	labelInset    = 5
)

// leaseLabels are what a lease bar may say, longest first: where the grant
// was found and its fence; the first that fits is drawn.
func leaseLabels(l Lease) []string {
	var out []string
	for _, w := range leaseWheres(l) {
		if l.Fence != 0 {
			out = append(out, fmt.Sprintf("%s · fence %d", w, l.Fence))
		}
		out = append(out, w)
	}
	if l.Fence != 0 {
		out = append(out, fmt.Sprintf("fence %d", l.Fence), fmt.Sprint(l.Fence))
	}
	return out
}

// leaseWheres says where a lease's grant was found, longest first: the
// primary that granted it and the other nodes holding it, or the nodes.
func leaseWheres(l Lease) []string {
	var wheres []string
	switch {
	case l.Primary != "":
		var others []string
		for _, n := range l.Nodes {
			if n != l.Primary {
				others = append(others, n)
			}
		}
		if len(others) == 0 {
			wheres = []string{l.Primary + " (primary)", l.Primary}
		} else {
			wheres = []string{l.Primary + " (primary), " + strings.Join(others, ", "), strings.Join(l.Nodes, "+"), l.Primary}
		}
	case len(l.Nodes) > 0:
		wheres = []string{strings.Join(l.Nodes, "+")}
	case l.Seen:
		wheres = []string{"on no node"}
	}
	return wheres
}

// attempts draws the acquires that granted nothing certain, faintly; a
// lane's touching ones of a kind are drawn as one, as leases are.
func (tp timelinePlotter) attempts(c *draw.Canvas, g geometry) {
	type bar struct{ x0, x1 vg.Length }
	open := map[[2]int]*bar{} // lane row, outcome -> bar being drawn
	heights := map[string]vg.Length{history.Fail: g.half * 0.2, history.Info: g.half * 0.55}
	paint := func(k [2]int, b *bar) {
		oc := history.Fail
		if k[1] == 1 {
			oc = history.Info
		}
		y, h := g.row(k[0]), heights[oc]
		fillRect(c, attemptFill[oc], b.x0, y-h, b.x1, y+h)
	}
	for _, at := range tp.t.Attempts {
		r, ok := tp.rows.lane[at.Client]
		if !ok {
			continue
		}
		k := [2]int{r, 0}
		if at.Outcome == history.Info {
			k[1] = 1
		}
		x0, x1 := span(g.trX, at.Start, at.End, 1)
		if b := open[k]; b != nil && x0 <= b.x1+0.5 {
			b.x1 = max(b.x1, x1)
			continue
		} else if b != nil {
			paint(k, b)
		}
		open[k] = &bar{x0, x1}
	}
	for k, b := range open {
		paint(k, b)
	}
}

func hasNodes(t Timeline) bool {
	for _, l := range t.Leases {
		if l.Seen {
			return true
		}
	}
	return false
}

func hasAttempt(t Timeline, outcome string) bool {
	for _, a := range t.Attempts {
		if a.Outcome == outcome {
			return true
		}
	}
	return false
}

// redSpans draws each anomaly as a solid bar labelled #n in its kind's row
// and as a translucent box over the lanes involved.
func (tp timelinePlotter) redSpans(c *draw.Canvas, g geometry) {
	label := textStyle(9, darkRed)
	labelEnd := map[int]vg.Length{}
	for _, s := range tp.t.RedSpans {
		x0, x1 := span(g.trX, s.Start, s.End, minMarkWidth)
		if s.Client < 0 {
			r := tp.rows.anomaly[s.Anomaly]
			yc, h := g.row(r), g.half*0.45
			fillRect(c, red, x0, yc-h, x1, yc+h)
			w := label.Width(s.Label)
			if lx := x1 + 2; lx >= labelEnd[r] && lx+w <= c.Max.X {
				c.FillText(label, vg.Point{X: lx, Y: yc}, s.Label)
				labelEnd[r] = lx + w + 4
			}
			continue
		}
		r, ok := tp.rows.lane[s.Client]
		if !ok {
			continue
		}
		yc, h := g.row(r), g.half*0.8
		fillRect(c, redFill, x0, yc-h, x1, yc+h)
		strokeRect(c, draw.LineStyle{Color: red, Width: 1}, x0, yc-h, x1, yc+h)
	}
}

// writes marks the protected writes, the ones that matter drawn last so
// that nothing covers them.
func (tp timelinePlotter) writes(c *draw.Canvas, g geometry) {
	for _, st := range []string{WriteAccepted, WriteRejected, WriteUnknown, WriteStale, WriteRefused} {
		if st == WriteAccepted && tp.dense {
			continue
		}
		for _, wm := range tp.t.Writes {
			r, ok := tp.rows.lane[wm.Client]
			if !ok || wm.Status != st {
				continue
			}
			pt := vg.Point{X: g.trX(wm.At.Seconds()), Y: g.row(r)}
			if st == WriteStale || st == WriteRefused {
				// An outline keeps the red mark visible on a red span.
				c.DrawGlyph(draw.GlyphStyle{Color: color.Black, Radius: writeStyle[st].Radius + 1.5, Shape: writeStyle[st].Shape}, pt)
			}
			c.DrawGlyph(writeStyle[st], pt)
		}
	}
}

// acceptedTooDense says whether accepted writes, the normal case, would
// pack a lane so tightly that they hide its leases; then only the writes
// that matter (rejected, stale, unknown) are drawn.
func acceptedTooDense(t Timeline, width vg.Length) bool {
	perLane := map[int]int{}
	busiest := 0
	for _, w := range t.Writes {
		if w.Status == WriteAccepted {
			perLane[w.Client]++
			busiest = max(busiest, perLane[w.Client])
		}
	}
	const minSpacing = 12 // points between marks
	return busiest > 0 && width/vg.Length(busiest) < minSpacing
}

// span maps [s, e] to canvas x, at least minW points wide.
func span(trX func(float64) vg.Length, s, e time.Duration, minW vg.Length) (vg.Length, vg.Length) {
	x0, x1 := trX(s.Seconds()), trX(e.Seconds())
	if x1-x0 < minW {
		m := (x0 + x1) / 2
		x0, x1 = m-minW/2, m+minW/2
	}
	return x0, x1
}

// bandsPlotter draws fault windows as translucent bands across the whole
// plot, labelled with the fault and its target. Labels go on up to three
// levels so that close faults do not print over each other; a label that
// finds no room is left out (the page's fault table lists every window).
type bandsPlotter struct {
	bands  []Band
	colors map[string]color.NRGBA
	// labelTop puts the labels in the row at y (the timeline's fault row);
	// otherwise they go at the top of the plot.
	labelTop bool
	row      float64
}

func (bp bandsPlotter) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	sty := textStyle(9, color.Black)
	sty.YAlign = draw.YTop
	lh := sty.Height("Mg") + 1
	top := c.Max.Y - 2
	if bp.labelTop {
		top = trY(bp.row+0.5) - 2
	}
	const levels = 3
	var right [levels]vg.Length
	for i := range right {
		right[i] = c.Min.X
	}
	for _, b := range bp.bands {
		x0, x1 := span(trX, b.Start, b.End, 1.5)
		col := bp.colors[b.Fault]
		if b.Observed {
			// An instant: a dashed line, darker than any band.
			c.StrokeLine2(draw.LineStyle{Color: observedColor(col), Width: 1.5, Dashes: []vg.Length{4, 2}}, x0, c.Min.Y, x0, c.Max.Y)
		} else {
			fillRect(&c, col, x0, c.Min.Y, x1, c.Max.Y)
			edge := col
			edge.A = 200
			c.StrokeLine2(draw.LineStyle{Color: edge, Width: 1}, x0, c.Min.Y, x0, c.Max.Y)
		}
		if bp.labelTop {
			// The fault row itself: each window as a bar along its
			// foot, each observed instant as a mark, so that the row
			// reads as the faults' own lane.
			foot := trY(bp.row-0.5) + 3
			if b.Observed {
				c.DrawGlyph(draw.GlyphStyle{Color: observedColor(col), Radius: 4, Shape: draw.PyramidGlyph{}}, vg.Point{X: x0, Y: foot + 4})
			} else {
				solid := col
				solid.A = 220
				fillRect(&c, solid, x0, foot, x1, foot+6)
			}
		}
		text := b.Label()
		w := sty.Width(text)
		for lvl := 0; lvl < levels; lvl++ {
			if x0 >= right[lvl] && x0+2+w <= c.Max.X {
				c.FillText(sty, vg.Point{X: x0 + 2, Y: top - vg.Length(lvl)*lh}, text)
				right[lvl] = x0 + w + 8
				break
			}
		}
	}
}

// WriteLatencyPNG draws latency.png: every finished operation's latency at
// its invoke time on a log scale, coloured by outcome, shaped by kind.
func WriteLatencyPNG(w io.Writer, l Latency) error {
	p := newPlot("Operation latency")
	p.Y.Label.Text = "latency"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = durationTicks{}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, pt := range l.Points {
		ms := latencyMs(pt.Latency)
		lo, hi = math.Min(lo, ms), math.Max(hi, ms)
	}
	if math.IsInf(lo, 0) {
		lo, hi = 0.1, 100
	}
	// Headroom above the slowest point holds the fault labels.
	p.Y.Min, p.Y.Max = math.Pow(10, math.Floor(math.Log10(lo))), hi*20
	setX(p, l.End)
	colors := faultColors(l.Bands)
	p.Add(xGrid(), bandsPlotter{bands: l.Bands, colors: colors}, latencyPlotter{l})

	leg := newLegend()
	present := map[string]bool{}
	for _, pt := range l.Points {
		present[pt.Kind] = true
		present[pt.Outcome] = true
	}
	for _, oc := range answers {
		if present[oc] {
			leg.Add(answerLegend[oc], glyphThumb{Color: outcomeColor[oc], Radius: 3.5, Shape: draw.CircleGlyph{}})
		}
	}
	for _, k := range kinds {
		if present[k] {
			leg.Add(k, glyphThumb{Color: color.NRGBA{R: 60, G: 60, B: 60, A: 255}, Radius: 3.5, Shape: kindShape[k]})
		}
	}
	addFaultLegend(&leg, faultKeys(l.Bands, colors))
	return savePNG(w, p, leg, latencyH)
}

// latencyMs keeps zero latencies on a log axis.
func latencyMs(d time.Duration) float64 { return math.Max(float64(d)/1e6, 0.001) }

type latencyPlotter struct{ l Latency }

func (lp latencyPlotter) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	// A soak has millions of points: of those in one shape and colour
	// within a glyph's radius of each other, which overlap by more than
	// half, the first stands for the rest.
	type spot struct {
		x, y      int32
		oc, shape string
	}
	drawn := map[spot]bool{}
	// Rarer answers last, so a few infos are not buried under busy ones.
	for _, oc := range []string{AnswerBusy, AnswerOK, AnswerFail, AnswerInfo} {
		for _, pt := range lp.l.Points {
			if pt.Outcome != oc {
				continue
			}
			shape := kindShape[pt.Kind]
			if shape == nil {
				shape = draw.RingGlyph{}
			}
			at := vg.Point{X: trX(pt.At.Seconds()), Y: trY(latencyMs(pt.Latency))}
			k := spot{int32(at.X / glyphGrain), int32(at.Y / glyphGrain), oc, pt.Kind}
			if drawn[k] {
				continue
			}
			drawn[k] = true
			c.DrawGlyph(draw.GlyphStyle{Color: outcomeColor[oc], Radius: glyphRadius, Shape: shape}, at)
		}
	}
}

// glyphRadius is a latency point's size; glyphGrain the cell within which
// one point in a shape and colour stands for the others.
const (
	glyphRadius = 3
	glyphGrain  = vg.Length(glyphRadius)
)

// durationTicks labels a log axis in milliseconds with readable units.
type durationTicks struct{}

func (durationTicks) Ticks(lo, hi float64) []plot.Tick {
	var ticks []plot.Tick
	for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
		v := math.Pow(10, e)
		ticks = append(ticks, plot.Tick{Value: v, Label: msLabel(v)})
		for m := 2.0; m < 10; m++ {
			ticks = append(ticks, plot.Tick{Value: v * m})
		}
	}
	return ticks
}

func msLabel(ms float64) string {
	switch {
	case ms >= 1000:
		return fmt.Sprintf("%g s", ms/1000)
	case ms >= 1:
		return fmt.Sprintf("%g ms", ms)
	}
	return fmt.Sprintf("%g µs", ms*1000)
}

// WriteRatePNG draws rate.png: completions per second, a line per
// operation and answer, coloured by answer and marked by operation.
func WriteRatePNG(w io.Writer, r Rate) error {
	title := fmt.Sprintf("Completions per second by operation and answer (in %s bins)", binLabel(r.Bin))
	p := newPlot(title)
	p.Y.Label.Text = "per second"
	setX(p, r.End)
	colors := faultColors(r.Bands)
	top := 1.0
	leg := newLegend()
	var lines []plot.Plotter
	for j, sr := range r.Series {
		n := len(sr.Counts)
		xys := make(plotter.XYs, n+1)
		for i := 0; i < n; i++ {
			xys[i] = plotter.XY{X: (time.Duration(i) * r.Bin).Seconds(), Y: r.PerSecond(j, i)}
			top = math.Max(top, xys[i].Y)
		}
		// The last bin's value continues to the bin's end.
		xys[n] = plotter.XY{X: (time.Duration(n) * r.Bin).Seconds(), Y: 0}
		if n > 0 {
			xys[n].Y = xys[n-1].Y
		}
		line, err := plotter.NewLine(xys)
		if err != nil {
			return err
		}
		col := outcomeColor[sr.Answer]
		col.A = 255
		line.StepStyle = plotter.PostStep
		line.LineStyle = draw.LineStyle{Color: col, Width: 1.5, Dashes: kindDashes[sr.Kind]}
		lines = append(lines, line)
		leg.Add(sr.Name(), line)
	}
	// Headroom above the highest rate holds the fault labels.
	p.Y.Min, p.Y.Max = 0, top*1.3
	p.Add(xGrid(), bandsPlotter{bands: r.Bands, colors: colors})
	p.Add(lines...)
	addFaultLegend(&leg, faultKeys(r.Bands, colors))
	return savePNG(w, p, leg, rateH)
}

// kindDashes tells the operations' lines apart on the rate plot, whose
// colours are the answers'.
var kindDashes = map[string][]vg.Length{
	history.Extend:  {6, 2},
	history.Release: {2, 2},
	history.Write:   {8, 2, 2, 2},
	history.Read:    {1, 3},
}

func newPlot(title string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font = font.From(sans, 14)
	p.Title.Padding = 6
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font = font.From(sans, 11)
		a.Tick.Label.Font = font.From(sans, 10)
	}
	p.X.Label.Text = "seconds since the run started"
	return p
}

func setX(p *plot.Plot, end time.Duration) { setXFrom(p, 0, end) }

// setXFrom is setX for a window of the run that starts at start.
func setXFrom(p *plot.Plot, start, end time.Duration) {
	p.X.Min = start.Seconds()
	p.X.Max = math.Max(start.Seconds()+(end-start).Seconds()*1.01, start.Seconds()+0.001)
	p.X.Tick.Marker = secondTicks{}
}

// secondTicks labels the time axis every 1, 2 or 5 × 10ⁿ seconds (or
// every 15 s, 30 s, minute … on long runs), about a label per inch, with
// a minor tick between labels.
type secondTicks struct{}

var tickSteps = []float64{0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 14400, 28800, 86400}

func (secondTicks) Ticks(lo, hi float64) []plot.Tick {
	const most = 14
	step := tickSteps[len(tickSteps)-1]
	for _, s := range tickSteps {
		if (hi-lo)/s <= most {
			step = s
			break
		}
	}
	// Longer than the table foresees (a history from elsewhere may span
	// years): whole powers of ten of days.
	for (hi-lo)/step > most {
		step *= 10
	}
	decimals := max(0, int(-math.Floor(math.Log10(step))))
	var ticks []plot.Tick
	for i := math.Ceil(lo / step * 2); i/2*step <= hi; i++ {
		v := i / 2 * step
		t := plot.Tick{Value: v}
		if math.Mod(i, 2) == 0 {
			t.Label = fmt.Sprintf("%.*f", decimals, v)
		}
		ticks = append(ticks, t)
	}
	return ticks
}

func xGrid() *plotter.Grid {
	g := plotter.NewGrid()
	g.Horizontal.Color = nil
	g.Vertical.Color = color.NRGBA{R: 200, G: 200, B: 200, A: 255}
	return g
}

func newLegend() plot.Legend {
	leg := plot.NewLegend()
	leg.Top, leg.Left = true, true
	leg.TextStyle.Font = font.From(sans, 10)
	leg.Padding = 3
	leg.ThumbnailWidth = 18
	return leg
}

func addFaultLegend(leg *plot.Legend, keys []FaultKey) {
	for _, k := range keys {
		if k.Observed {
			leg.Add(k.Label, swatch{fill: observedColor(k.Colour)})
			continue
		}
		// The image's key is a narrow strip: a fault's words go on a line
		// of their own beneath its name.
		leg.Add("fault: "+k.Fault, swatch{fill: k.Colour})
		if k.Legend != "" {
			leg.Add("  "+k.Legend, swatch{})
		}
	}
}

// observedColor is the opaque, darker shade an observed instant is drawn
// in, so that a thin line shows against the bands.
func observedColor(c color.NRGBA) color.NRGBA {
	return color.NRGBA{R: c.R / 2, G: c.G / 2, B: c.B / 2, A: 255}
}

// savePNG draws the plot with its legend in a strip to the right, where it
// covers no data.
func savePNG(w io.Writer, p *plot.Plot, leg plot.Legend, height vg.Length) error {
	// vgimg would draw into an image of its own and then copy it into
	// gg's: a third of the page's time, faulting in two fresh images.
	rgba := image.NewRGBA(image.Rect(0, 0, px(plotWidth), px(height)))
	ctx := gg.NewContextForRGBA(rgba)
	ctx.SetLineCapButt()
	ctx.InvertY()
	img := vgimg.NewWith(vgimg.UseImageWithContext(rgba, ctx), vgimg.UseDPI(dpi))
	dc := draw.New(img)
	p.Draw(draw.Crop(dc, 0, -legendWidth, 0, 0))
	leg.Draw(draw.Crop(dc, plotWidth-legendWidth+10, -4, 0, -legendTop))
	return pngEncoder.Encode(w, img.Image())
}

// pngEncoder trades a fifth more bytes for a run's pages in a third of the
// time: a flat-coloured plot compresses well at any level, and deflate's
// search was most of writing one.
var pngEncoder = png.Encoder{CompressionLevel: png.BestSpeed}

func textStyle(size vg.Length, c color.Color) text.Style {
	return text.Style{Color: c, Font: font.From(sans, size), Handler: plot.DefaultTextHandler,
		XAlign: draw.XLeft, YAlign: draw.YCenter}
}

func rectPts(x0, y0, x1, y1 vg.Length) []vg.Point {
	return []vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}}
}

func fillRect(c *draw.Canvas, col color.Color, x0, y0, x1, y1 vg.Length) {
	c.FillPolygon(col, c.ClipPolygonXY(rectPts(x0, y0, x1, y1)))
}

func strokeRect(c *draw.Canvas, sty draw.LineStyle, x0, y0, x1, y1 vg.Length) {
	pts := rectPts(x0, y0, x1, y1)
	c.StrokeLines(sty, c.ClipLinesXY(append(pts, pts[0]))...)
}

// swatch is a legend thumbnail of a filled box.
type swatch struct {
	fill color.Color
	line draw.LineStyle
}

func (s swatch) Thumbnail(c *draw.Canvas) {
	pts := rectPts(c.Min.X, c.Min.Y+1, c.Max.X, c.Max.Y-1)
	if s.fill != nil {
		c.FillPolygon(s.fill, pts)
	}
	if s.line.Color != nil {
		c.StrokeLines(s.line, append(pts, pts[0]))
	}
}

// glyphThumb is a legend thumbnail of one glyph.
type glyphThumb draw.GlyphStyle

func (g glyphThumb) Thumbnail(c *draw.Canvas) {
	c.DrawGlyph(draw.GlyphStyle(g), c.Center())
}

func hasPastValid(t Timeline) bool {
	for _, l := range t.Leases {
		if l.ValidUntil > l.Start && l.ValidUntil < l.End {
			return true
		}
	}
	return false
}

func hasFinal(t Timeline) bool {
	final := map[int]bool{}
	for _, l := range t.Lanes {
		final[l.Client] = l.Final
	}
	for _, l := range t.Leases {
		if final[l.Client] {
			return true
		}
	}
	return false
}

func binLabel(d time.Duration) string {
	if d < time.Second {
		return fmt.Sprintf("%d ms", d.Milliseconds())
	}
	return fmt.Sprintf("%g s", d.Seconds())
}

// thickCross is an × that stays visible among filled marks; gonum's
// CrossGlyph is a hairline.
type thickCross struct{}

func (thickCross) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	r := sty.Radius * 0.75
	ls := draw.LineStyle{Color: sty.Color, Width: 1.6}
	c.StrokeLine2(ls, pt.X-r, pt.Y-r, pt.X+r, pt.Y+r)
	c.StrokeLine2(ls, pt.X-r, pt.Y+r, pt.X+r, pt.Y-r)
}

// diamond is a filled ◆.
type diamond struct{}

func (diamond) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	r := sty.Radius * 1.2
	var p vg.Path
	p.Move(vg.Point{X: pt.X, Y: pt.Y + r})
	p.Line(vg.Point{X: pt.X + r, Y: pt.Y})
	p.Line(vg.Point{X: pt.X, Y: pt.Y - r})
	p.Line(vg.Point{X: pt.X - r, Y: pt.Y})
	p.Close()
	c.Fill(p)
}
