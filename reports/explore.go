package reports

import (
	"fmt"
	"html/template"
	"io"
	"math"
	"path/filepath"
	"strings"
)

// ExplorePage is what explore.html shows of a search over schedules: what
// it found (each anomaly kind's first run, its minimal scenario and first
// story), how its coverage and closest calls went over time, and, for a
// lock that never broke, how close it came.
type ExplorePage struct {
	Lock, Topology string
	Strategy       string
	// Shard is "i/n" for one shard of a campaign; Sources the searches a
	// merge joined.
	Shard       string
	Sources     []ExploreSourceRow
	Seed        int64
	Budget      string
	Seconds     float64
	Faults      []string
	Runs        int
	Features    int
	Corpus      int
	Interrupted bool
	Findings    []ExploreFindingRow
	Closest     []ExploreClosestRow
	// Progress is every run in order; Properties the margins measured.
	Progress   []ExplorePoint
	Properties []string
}

// ExploreSourceRow is a search a merge joined.
type ExploreSourceRow struct {
	Label, Link, Strategy, Shard string
	Seed                         int64
	Runs                         int
	Seconds                      float64
}

// ExploreFindingRow is an anomaly kind's first finding.
type ExploreFindingRow struct {
	Anomaly  string
	Wanted   bool
	Run      int
	Seconds  float64
	Schedule string
	RunLink  string
	Minimal  string
	Shrink   string
	Story    string
}

// ExploreClosestRow is a property's closest call over the search.
type ExploreClosestRow struct {
	Property string
	Ms       float64
	Run      int
	Says     string
	RunLink  string
}

// ExplorePoint is one run of the search as the progress shows it: the
// features reached and each property's best margin so far, by its end.
type ExplorePoint struct {
	Run int
	// Search is, in a merge, the search the run was part of.
	Search   string
	Seconds  float64
	Features int
	New      int
	Found    string
	Schedule string
	Best     map[string]float64
}

// WriteExplore writes dir/explore.html.
func WriteExplore(dir string, p ExplorePage) error {
	return writeAtomic(filepath.Join(dir, "explore.html"), func(w io.Writer) error {
		return templates.ExecuteTemplate(w, "explore.html", struct {
			ExplorePage
			Coverage template.HTML
			Margins  []template.HTML
		}{p, p.coverageSVG(), p.marginSVGs()})
	})
}

// chart is a step line of ys over xs, in an SVG of its own.
func chart(title, unit string, xs, ys []float64, logY bool) template.HTML {
	const w, h, left, bottom = 640.0, 180.0, 60.0, 24.0
	if len(xs) == 0 {
		return ""
	}
	tx := func(v float64) float64 { return v }
	if logY {
		tx = func(v float64) float64 { return math.Log10(math.Max(v, 0) + 1) }
	}
	maxX, minY, maxY := xs[len(xs)-1], math.Inf(1), math.Inf(-1)
	for _, y := range ys {
		minY, maxY = math.Min(minY, tx(y)), math.Max(maxY, tx(y))
	}
	if maxX <= 0 {
		maxX = 1
	}
	if maxY <= minY {
		maxY = minY + 1
	}
	px := func(x float64) float64 { return left + x/maxX*(w-left-10) }
	// top places a value already on the chart's scale; py a value drawn.
	top := func(v float64) float64 { return 10 + (1-(v-minY)/(maxY-minY))*(h-bottom-10) }
	py := func(y float64) float64 { return top(tx(y)) }
	var pts, dots []string
	for i := range xs {
		if i > 0 {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(xs[i]), py(ys[i-1])))
		}
		pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(xs[i]), py(ys[i])))
		dots = append(dots, fmt.Sprintf(`<circle cx="%.1f" cy="%.1f" r="2.5" fill="#1f5fa8"/>`, px(xs[i]), py(ys[i])))
	}
	// Labels give the values drawn, undone from the log scale.
	label := func(v float64) string {
		if logY {
			v = math.Pow(10, v) - 1
		}
		return fmt.Sprintf("%.0f", v)
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<figure><svg width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" role="img" aria-label="%s">`, w, h, w, h, template.HTMLEscapeString(title))
	fmt.Fprintf(&b, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="#999"/>`, left, h-bottom, w-10, h-bottom)
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" font-size="11" text-anchor="end">%s</text>`, left-4, top(maxY)+4, label(maxY))
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" font-size="11" text-anchor="end">%s</text>`, left-4, h-bottom, label(minY))
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" font-size="11" text-anchor="end">%.0f s</text>`, w-10, h-6, maxX)
	fmt.Fprintf(&b, `<polyline fill="none" stroke="#1f5fa8" stroke-width="2" points="%s"/>%s</svg><figcaption>%s (%s), by seconds of search</figcaption></figure>`,
		strings.Join(pts, " "), strings.Join(dots, ""), template.HTMLEscapeString(title), unit)
	return template.HTML(b.String())
}

func (p ExplorePage) coverageSVG() template.HTML {
	var xs, ys []float64
	for _, pt := range p.Progress {
		xs, ys = append(xs, pt.Seconds), append(ys, float64(pt.Features))
	}
	return chart("features reached", "count", xs, ys, false)
}

func (p ExplorePage) marginSVGs() []template.HTML {
	var out []template.HTML
	for _, prop := range p.Properties {
		var xs, ys []float64
		for _, pt := range p.Progress {
			if v, ok := pt.Best[prop]; ok {
				xs, ys = append(xs, pt.Seconds), append(ys, v)
			}
		}
		title := "best " + prop + " margin"
		broken := false
		for _, y := range ys {
			broken = broken || y < 0
		}
		if broken {
			title += " (below 0: broken, drawn at 0)"
		}
		out = append(out, chart(title, "ms, log scale", xs, ys, true))
	}
	return out
}
