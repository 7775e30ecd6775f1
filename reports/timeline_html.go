package reports

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"image/color"
	"io"
	"time"
)

// TimelineHTMLMaxOps is the most operations timeline.html carries; past
// it, a soak's page keeps every operation of an anomaly and those near
// one, then every k-th of the rest, and says so.
const TimelineHTMLMaxOps = 100_000

// timelinePage is the data timeline.html draws, as its script reads it
// (short keys: a soak's page carries a hundred thousand operations).
type timelinePage struct {
	Title string     `json:"title"`
	End   float64    `json:"end"`
	Lanes []htmlLane `json:"lanes"`
	// AnomalyRows are the anomaly kinds, one row each above the lanes, in
	// report order, as timeline.png lays them out.
	AnomalyRows []string      `json:"anomalyRows"`
	Ops         []htmlOp      `json:"ops"`
	Leases      []htmlLease   `json:"leases"`
	Writes      []htmlWrite   `json:"writes"`
	Faults      []htmlFault   `json:"faults"`
	Anomalies   []htmlAnomaly `json:"anomalies"`
	Note        string        `json:"note,omitempty"`
	// Colors are the operations' answers', FaultColors each fault's (as
	// the PNG draws it), Legend what the page's key shows.
	Colors      map[string]string `json:"colors"`
	FaultColors map[string]string `json:"faultColors"`
	Legend      []htmlKey         `json:"legend"`
	// Probed: the run looked for where its grants lived (more than one
	// node), so a lease with no node was not found in time.
	Probed bool `json:"probed,omitempty"`
}

type htmlLane struct {
	Client int    `json:"c"`
	Label  string `json:"label"`
	Final  bool   `json:"final,omitempty"`
}

// htmlWrite is a protected write, drawn on its client's lane as the PNG
// draws it (Status: accepted, rejected, stale, refused, unknown).
type htmlWrite struct {
	Client  int     `json:"c"`
	Process string  `json:"p"`
	At      float64 `json:"s"`
	Status  string  `json:"st"`
	Fence   int64   `json:"fe,omitempty"`
	Token   string  `json:"t,omitempty"`
	Event   int     `json:"ev"`
}

// htmlKey is one entry of the page's key: a box of a colour, an outlined
// box, or a write's mark (Mark is its status).
type htmlKey struct {
	Label   string `json:"label"`
	Color   string `json:"color,omitempty"`
	Outline string `json:"outline,omitempty"`
	Mark    string `json:"mark,omitempty"`
}

// htmlOp is one operation: times in seconds; End is null while unfinished.
type htmlOp struct {
	Client  int      `json:"c"`
	Process string   `json:"p"`
	F       string   `json:"f"`
	Key     string   `json:"k,omitempty"`
	Token   string   `json:"t,omitempty"`
	Fence   int64    `json:"fe,omitempty"`
	Nodes   string   `json:"n,omitempty"`
	Start   float64  `json:"s"`
	End     *float64 `json:"e"`
	Answer  string   `json:"a"`
	Error   string   `json:"err,omitempty"`
	Events  []int    `json:"ev"`
	In      []string `json:"an,omitempty"`
}

type htmlLease struct {
	Client     int      `json:"c"`
	Process    string   `json:"p"`
	Key        string   `json:"k"`
	Token      string   `json:"t"`
	Fence      int64    `json:"fe,omitempty"`
	Nodes      string   `json:"n,omitempty"`
	Seen       bool     `json:"seen,omitempty"`
	Start      float64  `json:"s"`
	End        float64  `json:"e"`
	EndBy      string   `json:"by"`
	ValidUntil float64  `json:"vu,omitempty"`
	Event      int      `json:"ev"`
	In         []string `json:"an,omitempty"`
}

type htmlFault struct {
	Fault    string  `json:"f"`
	Target   string  `json:"tg,omitempty"`
	Detail   string  `json:"d,omitempty"`
	Start    float64 `json:"s"`
	End      float64 `json:"e"`
	Observed bool    `json:"obs,omitempty"`
	Open     bool    `json:"open,omitempty"`
}

type htmlAnomaly struct {
	Label   string  `json:"label"`
	Anomaly string  `json:"a"`
	Start   float64 `json:"s"`
	End     float64 `json:"e"`
	// Narrative is the finding's, for the tooltip.
	Narrative string `json:"n,omitempty"`
}

// WriteTimelineHTML writes timeline.html: the timeline as a page of its
// own, with no external asset, that shows every operation's details on
// hover and zooms on a window. #e<index> in its address opens the
// operation or lease of that history event, as a hover would.
func WriteTimelineHTML(w io.Writer, name string, a *analysis, t Timeline, res Results) error {
	p := timelinePage{Title: name, End: t.End.Seconds(), Colors: map[string]string{}, FaultColors: map[string]string{},
		AnomalyRows: anomalyOrder(t.RedSpans), Probed: hasNodes(t)}
	for oc, c := range outcomeColor {
		p.Colors[oc] = cssColor(c, 1)
	}
	colors := faultColors(t.Bands)
	for f, c := range colors {
		p.FaultColors[f] = cssColor(c, 1)
	}
	p.Legend = htmlLegend(t, colors)
	for _, l := range t.Lanes {
		p.Lanes = append(p.Lanes, htmlLane{Client: l.Client, Label: l.Label, Final: l.Final})
	}
	for _, w := range t.Writes {
		p.Writes = append(p.Writes, htmlWrite{Client: w.Client, Process: w.Process.String(), At: w.At.Seconds(), Status: w.Status,
			Fence: w.Fence, Token: w.Token, Event: w.Event})
	}
	// Which findings each op belongs to, as "#n anomaly".
	in := map[int][]string{}
	for fi, f := range res.Checker.Findings {
		label := fmt.Sprintf("#%d %s", fi+1, f.Anomaly)
		for _, o := range a.findingOps(f) {
			in[o] = append(in[o], label)
		}
	}
	for _, s := range t.RedSpans {
		if s.Client < 0 {
			an := htmlAnomaly{Label: s.Label, Anomaly: s.Anomaly, Start: s.Start.Seconds(), End: s.End.Seconds()}
			if s.Finding >= 0 && s.Finding < len(res.Checker.Findings) {
				an.Narrative = res.Checker.Findings[s.Finding].Narrative
			}
			p.Anomalies = append(p.Anomalies, an)
		}
	}
	keep, note := a.opsToDraw(t, in)
	p.Note = note
	for _, i := range keep {
		o := &a.ops[i]
		op := htmlOp{Client: o.Client, Process: o.Process.String(), F: o.F, Key: o.Key, Token: o.Token, Fence: o.Fence,
			Start: o.InvokedAt().Seconds(), Answer: answer(o), Error: o.Error, Events: []int{a.events.index(int(o.Inv))}, In: in[i]}
		if o.Finished() {
			e := o.DoneAt().Seconds()
			op.End = &e
			op.Events = append(op.Events, a.events.index(int(o.Done)))
		}
		if l := a.leaseOf[i]; l != nil {
			if w := leaseWheres(l.Lease); len(w) > 0 {
				op.Nodes = w[0]
			}
		}
		p.Ops = append(p.Ops, op)
	}
	for _, l := range a.leases {
		if len(p.Leases) >= TimelineHTMLMaxOps && len(in[l.op]) == 0 {
			continue
		}
		hl := htmlLease{Client: l.Client, Process: l.Process.String(), Key: l.Key, Token: l.Token, Fence: l.Fence,
			Seen: l.Seen, Start: l.Start.Seconds(), End: l.End.Seconds(), EndBy: l.EndBy,
			Event: l.Event, In: in[l.op]}
		if l.ValidUntil > 0 {
			hl.ValidUntil = l.ValidUntil.Seconds()
		}
		if w := leaseWheres(l.Lease); len(w) > 0 && len(l.Nodes) > 0 {
			hl.Nodes = w[0]
		}
		p.Leases = append(p.Leases, hl)
	}
	for _, b := range t.Bands {
		p.Faults = append(p.Faults, htmlFault{Fault: b.Fault, Target: b.Target, Detail: b.Detail,
			Start: b.Start.Seconds(), End: b.End.Seconds(), Observed: b.Observed, Open: b.Open})
	}
	// The data is encoded into the page between the template's halves: a
	// soak's is tens of megabytes, and a string of it to hand the
	// template, escaped once more, would hold it three times over.
	var shell bytes.Buffer
	if err := templates.ExecuteTemplate(&shell, "timeline.html", struct {
		Title string
		Data  template.JS
	}{name, template.JS(dataMark)}); err != nil {
		return err
	}
	// The mark holds a '<', which the title's escaping turns into
	// "&lt;": only the data's place holds it as it is.
	head, tail, found := bytes.Cut(shell.Bytes(), []byte(dataMark))
	if !found {
		return fmt.Errorf("timeline.html's template has no place for its data")
	}
	if _, err := w.Write(head); err != nil {
		return err
	}
	// The encoder escapes <, > and &, so the data never closes its
	// script element.
	if err := json.NewEncoder(w).Encode(p); err != nil {
		return err
	}
	_, err := w.Write(tail)
	return err
}

// dataMark is where timeline.html's data goes in its rendered template.
const dataMark = "<timeline data>"

// cssColor is c as CSS at the opacity alpha: the PNG's fills carry the
// opacities of overlays drawn on an image, and the page picks its own.
func cssColor(c color.NRGBA, alpha float64) string {
	return fmt.Sprintf("rgba(%d,%d,%d,%g)", c.R, c.G, c.B, alpha)
}

// htmlLegend is the page's key: what timeline.png's legend shows, from the
// same tests of what the timeline holds, and the answers of the
// operations, which only the page draws.
func htmlLegend(t Timeline, colors map[string]color.NRGBA) []htmlKey {
	keys := []htmlKey{{Label: "lease, acquire to release", Color: cssColor(leaseFill, 1)}}
	if hasPastValid(t) {
		keys = append(keys, htmlKey{Label: "believed past its validity", Color: cssColor(leaseFill, 0.35)})
	}
	if hasFinal(t) {
		keys = append(keys, htmlKey{Label: "final check's lease (the liveness check after the heal)", Color: cssColor(finalFill, 1)})
	}
	for _, oc := range []string{AnswerOK, AnswerBusy, AnswerFail, AnswerInfo} {
		keys = append(keys, htmlKey{Label: "operation: " + answerLegend[oc], Color: cssColor(outcomeColor[oc], 1)})
	}
	present := map[string]bool{}
	for _, w := range t.Writes {
		present[w.Status] = true
	}
	for _, st := range []string{WriteAccepted, WriteRejected, WriteStale, WriteRefused, WriteUnknown} {
		if present[st] {
			keys = append(keys, htmlKey{Label: writeLegend[st], Mark: st})
		}
	}
	if len(t.RedSpans) > 0 {
		keys = append(keys, htmlKey{Label: "anomaly (#n as on the page)", Color: cssColor(red, 1)},
			htmlKey{Label: "lease in an anomaly", Color: cssColor(leaseFill, 1), Outline: cssColor(red, 1)})
	}
	for _, k := range faultKeys(t.Bands, colors) {
		if k.Observed {
			keys = append(keys, htmlKey{Label: k.Label, Color: cssColor(observedColor(k.Colour), 1)})
		} else {
			keys = append(keys, htmlKey{Label: k.Label, Color: cssColor(k.Colour, 0.85)})
		}
	}
	return keys
}

// opsToDraw picks the operations the page carries: all of them, or for a
// soak every operation of an anomaly and those within a second of one,
// then every k-th of the rest; note says which when it is not all.
func (a *analysis) opsToDraw(t Timeline, in map[int][]string) (keep []int, note string) {
	if len(a.ops) <= TimelineHTMLMaxOps {
		keep = make([]int, len(a.ops))
		for i := range keep {
			keep[i] = i
		}
		return keep, ""
	}
	near := func(o *opInfo) bool {
		for _, s := range t.RedSpans {
			if s.Client < 0 && o.InvokedAt() >= s.Start-time.Second && o.InvokedAt() <= s.End+time.Second {
				return true
			}
		}
		return false
	}
	chosen := make([]bool, len(a.ops))
	n := 0
	for i := range a.ops {
		if len(in[i]) > 0 || near(&a.ops[i]) {
			chosen[i] = true
			n++
		}
	}
	if rest := TimelineHTMLMaxOps - n; rest > 0 {
		stride := (len(a.ops)-n)/rest + 1
		k := 0
		for i := range a.ops {
			if !chosen[i] {
				if k%stride == 0 {
					chosen[i] = true
				}
				k++
			}
		}
	}
	for i, c := range chosen {
		if c {
			keep = append(keep, i)
		}
	}
	return keep, fmt.Sprintf("%d of %d operations shown: every one of an anomaly and within a second of one, then a sample of the rest; of the leases, every one of an anomaly and the first %d", len(keep), len(a.ops), TimelineHTMLMaxOps)
}

// timelineHTMLFile is where Render writes the page.
const timelineHTMLFile = "timeline.html"
