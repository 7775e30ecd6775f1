package reports

import (
	"bytes"
	"embed"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/history"
)

//go:embed templates/*.html
var templateFS embed.FS

var templates = template.Must(template.New("").Funcs(template.FuncMap{
	"secs":  secs,
	"ms":    func(v float64) string { return fmt.Sprintf("%.1f ms", v) },
	"upper": strings.ToUpper,
	"inc":   func(i int) int { return i + 1 },
	"sub":   func(a, b time.Duration) time.Duration { return a - b },
	"add":   func(a, b int) int { return a + b },
	"deref": func(b *bool) bool { return b != nil && *b },
	"sides": func(s ...ShrinkSide) []ShrinkSide { return s },
}).ParseFS(templateFS, "templates/*.html"))

// SingleFile is the page Render writes, with single, for pasting into a
// review: index.html with its plots inside it.
const SingleFile = "report.html"

// Render draws a run directory's plots and index.html from its
// history.jsonl and results.json alone. A history that is only partly
// readable is drawn as far as it goes, the page says where it stopped, and
// the error is returned after everything else was written.
func Render(dir string) error { return RenderPages(dir, false) }

// RenderPages is Render, and with single also report.html (SingleFile):
// the same page with every plot inlined, which stands alone once copied
// out of the run directory.
func RenderPages(dir string, single bool) error {
	r, err := OpenRun(dir)
	if err != nil {
		return fmt.Errorf("render %s: %w", dir, err)
	}
	return r.renderPages(dir, single)
}

// renderPages draws the run's plots and pages into dir from what it holds.
func (r *Run) renderPages(dir string, single bool) error {
	res, a, histErr := r.Results, r.a, r.histErr
	var problems []string
	var errs []error
	if histErr != nil {
		problems = append(problems, "history.jsonl could not be read to the end, so the plots and stories stop early: "+histErr.Error())
		errs = append(errs, histErr)
	}
	plots := []struct {
		file, alt string
		draw      func(io.Writer) error
	}{
		{"timeline.png", "Timeline: one lane per client with its leases, writes, fault bands and anomalies",
			func(w io.Writer) error { return WriteTimelinePNG(w, timelineOf(a, res)) }},
		{"latency.png", "Latency of every operation over time, log scale, by outcome and kind",
			func(w io.Writer) error { return WriteLatencyPNG(w, latencyOf(a)) }},
		{"rate.png", "Completions per second by outcome",
			func(w io.Writer) error { return WriteRatePNG(w, rateOf(a)) }},
	}
	tables, err := history.ReadTables(dir)
	if err != nil {
		problems = append(problems, "the database's final rows could not be read: "+err.Error())
		errs = append(errs, err)
	}
	page := newIndexPage(dir, res, a, tables)
	for _, p := range plots {
		if err := writeAtomic(filepath.Join(dir, p.file), p.draw); err != nil {
			problems = append(problems, fmt.Sprintf("%s could not be drawn: %v", p.file, err))
			errs = append(errs, fmt.Errorf("%s: %w", p.file, err))
			continue
		}
		page.Plots = append(page.Plots, plotView{File: p.file, Src: template.URL(p.file), Alt: p.alt, Width: screenPx(plotWidth)})
	}
	err = writeAtomic(filepath.Join(dir, timelineHTMLFile), func(w io.Writer) error {
		return WriteTimelineHTML(w, page.Name+" · "+page.Stamp, a, timelineOf(a, res), res)
	})
	if err != nil {
		problems = append(problems, fmt.Sprintf("%s could not be written: %v", timelineHTMLFile, err))
		errs = append(errs, fmt.Errorf("%s: %w", timelineHTMLFile, err))
	} else {
		page.Interactive = timelineHTMLFile
	}
	page.Problems = problems
	page.Files = runFiles(os.DirFS(dir), ".")
	err = writeAtomic(filepath.Join(dir, "index.html"), func(w io.Writer) error {
		return templates.ExecuteTemplate(w, "index.html", page)
	})
	errs = append(errs, err)
	if single {
		errs = append(errs, writeSingleFile(dir, page))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("render %s: %w", dir, err)
	}
	return nil
}

// indexPage is what index.html shows.
type indexPage struct {
	Name, Stamp string
	// Verdict is valid, invalid or unknown; it is also the banner's class.
	Verdict  string
	Exit     int
	Headline string
	Spec     []keyValue
	// Ran is the provenance: the lock as it named itself, the harness,
	// the servers, the library.
	Ran []keyValue
	// Takeaway is the run in three lines, shown first.
	Takeaway Takeaway
	Command  string
	Checks   []keyValue
	Stats    []statRow
	Faults   []Band
	Findings []findingView
	// Margins are the run's closest calls, a property each.
	Margins  []marginView
	Database *databaseView
	Plots    []plotView
	// Interactive is timeline.html, once written.
	Interactive string
	// Single marks report.html, which carries its plots inside it.
	Single      bool
	Files       []fileLink
	Notes       []string
	Error       string
	Interrupted bool
	Problems    []string
}

// provenancePairs is what ran, as the page's table shows it; nothing for a
// history recorded elsewhere.
func provenancePairs(pr *Provenance) []keyValue {
	if pr == nil {
		return nil
	}
	var kv []keyValue
	if l := pr.Lock; l != nil {
		kv = append(kv, keyValue{Key: "lock", Value: l.Label()})
		if l.Library != "" {
			kv = append(kv, keyValue{Key: "library", Value: l.Library + " " + l.Version})
		}
		if l.Worker != "" {
			kv = append(kv, keyValue{Key: "worker", Value: l.Worker})
		}
	}
	kv = append(kv, keyValue{Key: "harness", Value: pr.Harness}, keyValue{Key: "go", Value: pr.Go})
	if pr.Topology != "" {
		kv = append(kv, keyValue{Key: "topology", Value: pr.Topology})
	}
	if pr.Workers != "" {
		kv = append(kv, keyValue{Key: "workers", Value: pr.Workers})
	}
	names := make([]string, 0, len(pr.Servers))
	for n := range pr.Servers {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		kv = append(kv, keyValue{Key: n, Value: pr.Servers[n]})
	}
	return kv
}

// keyValue is a row of a two-column table; Link, if set, is where the
// value points (an anomaly count to its first story).
type keyValue struct{ Key, Value, Link string }

type statRow struct {
	Kind string
	checker.OpStats
}

type findingView struct {
	N         int
	Anomaly   string
	Key       string
	Narrative string
	// Causes say what made it possible (see Causes).
	Causes []string
	Story  []StoryLine
	// Rows are the database rows of the finding's writes.
	Rows *rowTable
	// Open keeps the first findings unfolded; the rest of a badly broken
	// run's findings stay folded so the page stays readable.
	Open bool
}

// plotView is one plot on the page: its file, and what the page's img
// loads (the file, or the image itself in report.html); Width is the CSS
// width it is shown at, half its pixels (see dpi).
type plotView struct {
	File, Alt string
	Src       template.URL
	Width     int
}

// writeSingleFile writes report.html: page with every plot inlined as a
// data URL, and without what only the run directory has (its files, the
// interactive timeline).
func writeSingleFile(dir string, page indexPage) error {
	page.Plots = slices.Clone(page.Plots)
	for i, p := range page.Plots {
		img, err := os.ReadFile(filepath.Join(dir, p.File))
		if err != nil {
			return fmt.Errorf("%s: %w", SingleFile, err)
		}
		page.Plots[i].Src = template.URL("data:image/png;base64," + base64.StdEncoding.EncodeToString(img))
	}
	page.Interactive, page.Files, page.Single = "", nil, true
	return writeAtomic(filepath.Join(dir, SingleFile), func(w io.Writer) error {
		return templates.ExecuteTemplate(w, "index.html", page)
	})
}

type fileLink struct {
	Path string
	Size string
}

// openFindings is how many findings the page shows unfolded.
const openFindings = 10

func newIndexPage(dir string, res Results, a *analysis, tables *history.Tables) indexPage {
	// store/latest names no run: name the page after where it points.
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	p := indexPage{
		Name: filepath.Base(filepath.Dir(dir)), Stamp: filepath.Base(dir),
		Verdict: res.Valid.String(), Exit: res.Valid.ExitCode(),
		Command: res.Command, Notes: res.Checker.Notes, Error: res.Error.String(), Interrupted: res.Interrupted,
	}
	for _, b := range a.bands {
		// The fault table lists what was injected; what was only seen
		// (a failover) is on the plots and in the stories.
		if !b.Observed {
			p.Faults = append(p.Faults, b)
		}
	}
	if t, err := time.Parse("20060102T150405", strings.SplitN(p.Stamp, "-", 2)[0]); err == nil {
		p.Stamp = t.Format("2006-01-02 15:04:05")
	}
	p.Spec = specPairs(res.Spec)
	for _, kv := range p.Spec {
		if kv.Key == "name" && kv.Value != "" {
			p.Name = kv.Value
		}
	}
	p.Ran = provenancePairs(res.Provenance)
	p.Takeaway = takeaway(res, a)
	p.Margins = marginViews(res.Margins, a)
	p.Headline = headline(res)
	first := map[string]int{}
	for i, f := range res.Checker.Findings {
		if _, ok := first[f.Anomaly]; !ok {
			first[f.Anomaly] = i + 1
		}
	}
	for _, name := range checker.AnomalyNames {
		kv := keyValue{Key: name, Value: AnomalyCount(res, name)}
		if n, ok := first[name]; ok {
			kv.Link = fmt.Sprintf("#anomaly-%d", n)
		}
		p.Checks = append(p.Checks, kv)
	}
	p.Checks = append(p.Checks, keyValue{Key: "fencing rejected", Value: fmt.Sprint(res.Fencing.Rejected)})
	if p.Database = newDatabaseView(res.Checker.Database); p.Database == nil {
		p.Checks = append(p.Checks, keyValue{Key: "counter", Value: fmt.Sprintf("%d acknowledged writes, final value %d", res.Checker.Counter.Acknowledged, res.Checker.Counter.Final)})
	}
	p.Checks = append(p.Checks,
		keyValue{Key: "liveness", Value: res.Checker.Liveness},
		keyValue{Key: "slack", Value: fmt.Sprintf("%g ms", res.Checker.SlackMs)},
	)
	kinds := make([]string, 0, len(res.Stats))
	for k := range res.Stats {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		p.Stats = append(p.Stats, statRow{k, res.Stats[k]})
	}
	for i, f := range res.Checker.Findings {
		p.Findings = append(p.Findings, findingView{N: i + 1, Anomaly: f.Anomaly, Key: f.Key, Narrative: f.Narrative,
			Causes: a.causes(f), Story: a.story(f), Rows: a.findingRows(tables, f), Open: i < openFindings})
	}
	return p
}

// headline is the banner's second line: what the verdict rests on.
func headline(res Results) string {
	var found []string
	for _, name := range checker.AnomalyNames {
		if n := res.Anomalies[name]; n > 0 {
			found = append(found, fmt.Sprintf("%s ×%d", name, n))
		}
	}
	switch {
	case res.Error != nil:
		return "the harness failed, so this is no verdict: " + res.Error.String()
	case len(found) == 1 && res.Anomalies[checker.StuckLock] > 0:
		return "the lock stayed stuck after healing: " + found[0]
	case len(found) > 0:
		return "mutual exclusion broke: " + strings.Join(found, ", ")
	case res.Valid == checker.Valid:
		switch n := res.Fencing.Rejected; n {
		case 0:
			return "no anomaly found"
		case 1:
			return "no anomaly found; fencing rejected 1 stale write"
		default:
			return fmt.Sprintf("no anomaly found; fencing rejected %d stale writes", n)
		}
	case res.Interrupted:
		return "the run was interrupted before it finished"
	case len(res.Checker.Notes) > 0:
		return res.Checker.Notes[0]
	}
	return "the checker could not decide"
}

// specPairs lists the spec's fields in the order results.json has them.
func specPairs(raw json.RawMessage) []keyValue {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	var kvs []keyValue
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return kvs
		}
		key, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return kvs
		}
		var s string
		if json.Unmarshal(v, &s) != nil {
			s = string(v)
		}
		kvs = append(kvs, keyValue{Key: key, Value: s})
	}
	return kvs
}

// runFiles lists what index.html links to, if present: the linearizability
// report, the history, results.json, the harness log and every node log.
func runFiles(fsys fs.FS, dir string) []fileLink {
	var files []fileLink
	add := func(rel string) {
		if st, err := fs.Stat(fsys, path.Join(dir, rel)); err == nil && st.Mode().IsRegular() {
			files = append(files, fileLink{Path: rel, Size: size(st.Size())})
		}
	}
	for _, f := range []string{"linear.html", "history.jsonl", "results.json", "harness.log"} {
		add(f)
	}
	logs, _ := fs.Glob(fsys, path.Join(dir, "nodes", "*", "*.log"))
	sort.Strings(logs)
	for _, l := range logs {
		add(strings.TrimPrefix(l, path.Join(dir)+"/"))
	}
	return files
}

func size(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// writeAtomic writes a file through a temporary one and a rename, so that
// `serve` never hands out half a plot or page.
func writeAtomic(path string, write func(io.Writer) error) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}
