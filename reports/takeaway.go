package reports

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sort"
	"strings"
	"time"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/history"
)

// CauseKinds lists the kinds of cause, as scenario files name them.
var CauseKinds = []string{CauseUnreplicated, CauseEmptyRestart, CauseFenceWentBack, CauseClockMoved, CauseFrozenClient, CauseWrongRefusal, CauseNoGrant}

// Remedy is a catalog row that shows a cause remedied: its name, its
// expectation, and what it does differently.
type Remedy struct{ Row, Says, Expect string }

// Remedies finds the catalog row that shows the remedy of a cause of an
// anomaly. The scenario package, which holds the catalog, sets it; nil, or
// no row, and the takeaway claims no remedy.
var Remedies func(cause, anomaly string) (Remedy, bool)

// Takeaway is a run in three lines a reviewer can put on a slide: what
// was tested, what broke (with the first story's cause in a sentence) or
// that nothing did, and the remedy a catalog row shows for that cause, or
// that no row shows one.
type Takeaway struct {
	Tested, Found, Remedy string
}

// Lines are the takeaway as `report --summary` prints it.
func (t Takeaway) Lines() []string { return []string{t.Tested, t.Found, t.Remedy} }

func takeaway(res Results, a *analysis) Takeaway {
	var spec struct {
		Topology  string `json:"topology"`
		Lock      string `json:"lock"`
		Nemesis   string `json:"nemesis"`
		Clients   int    `json:"clients"`
		TTL       string `json:"ttl"`
		TimeLimit string `json:"time_limit"`
	}
	json.Unmarshal(res.Spec, &spec)
	lock := spec.Lock
	var versions []string
	if pr := res.Provenance; pr != nil {
		if pr.Lock != nil {
			lock = pr.Lock.Label()
		}
		seen := map[string]bool{}
		for _, v := range pr.Servers {
			if v, _, _ := strings.Cut(v, " "); v != "" && !seen[v] {
				seen[v] = true
				versions = append(versions, v)
			}
		}
		sort.Strings(versions)
	}
	t := Takeaway{Tested: "Tested: " + cmp.Or(lock, "a history recorded elsewhere, with no spec")}
	if spec.Topology != "" {
		t.Tested += " on " + spec.Topology
	}
	if len(versions) > 0 {
		t.Tested += " (Redis " + strings.Join(versions, ", ") + ")"
	}
	if spec.Nemesis != "" {
		t.Tested += " under " + spec.Nemesis
	}
	var params []string
	if spec.Clients > 0 {
		params = append(params, fmt.Sprintf("%d clients", spec.Clients))
	}
	if spec.TTL != "" {
		params = append(params, "ttl "+spec.TTL)
	}
	if spec.TimeLimit != "" {
		params = append(params, spec.TimeLimit)
	}
	if res.Command != "" {
		// A history recorded elsewhere has no seed of the harness's.
		params = append(params, fmt.Sprintf("seed %d", res.Seed))
	}
	if len(params) > 0 {
		t.Tested += ", " + strings.Join(params, ", ")
	}
	t.Tested += "."

	switch res.Valid {
	case checker.Failed:
		t.Found = "No verdict: the harness failed (" + res.Error.String() + ")."
		t.Remedy = "Remedy: none to claim; run it again once the harness can run it."
		return t
	case checker.Valid:
		t.Found = "Held: no anomaly in this run (valid)"
		if n := res.Fencing.Rejected; n > 0 {
			t.Found += fmt.Sprintf("; the fence refused %d stale writes", n)
		}
		t.Found += "."
		t.Remedy = "Remedy: none needed here; one run is one schedule, and `harness repro` runs more seeds."
		return t
	}
	var found []string
	for _, name := range checker.AnomalyNames {
		if n := res.Anomalies[name]; n > 0 {
			found = append(found, fmt.Sprintf("%s ×%d", name, n))
		}
	}
	if len(res.Checker.Findings) == 0 {
		if res.Valid == checker.Invalid {
			t.Found = "Broke: the lock's operations are not linearizable against the lease model (linear.html shows where), and no audit names an anomaly."
		} else {
			t.Found = "No verdict (" + res.Valid.String() + "): " + cmp.Or(strings.Join(res.Checker.Notes, "; "), "nothing was found either way") + "."
		}
		t.Remedy = "Remedy: none to claim without a finding that names its cause."
		return t
	}
	f := res.Checker.Findings[0]
	causes := a.typedCauses(f)
	t.Found = "Broke: " + strings.Join(found, ", ") + ". First (#1 " + f.Anomaly + "): "
	if len(causes) > 0 {
		t.Found += causes[0].Text + "."
	} else {
		t.Found += "no rule explains it; its story is finding #1."
	}
	t.Remedy = "Remedy: no catalog row shows one for this cause"
	if len(causes) > 0 {
		t.Remedy += " (" + causes[0].Kind + ")"
	}
	t.Remedy += "."
	// Only the cause the line above tells: a remedy of another would read
	// as the remedy of this one.
	if Remedies != nil && len(causes) > 0 {
		if r, ok := Remedies(causes[0].Kind, f.Anomaly); ok {
			t.Remedy = fmt.Sprintf("Remedy: %s, as catalog row %s shows (%s).", r.Says, r.Row, r.Expect)
		}
	}
	return t
}

// Run is a checked run held once: its results and its history, analysed
// once, from which results.json, linear.html, the plots and pages, the
// takeaway and the anomaly's image are all drawn.
type Run struct {
	Results Results
	// histErr is why the history could be read only so far: the pages
	// draw what there is and say so.
	histErr error
	a       *analysis
}

// NewRun holds a run's events and the results checked from them; the
// checker's own operations (checker.Result.Ops) serve the pages, which
// pair the events again only for results that came without them.
func NewRun(events []history.Event, res Results) *Run {
	return &Run{Results: res, a: analyseWith(events, res.check.Ops())}
}

// ReadRun is NewRun for results just checked from the history at
// histPath (ConcludeStream): it reads the history once more, keeping in
// full only the events the pages tell one by one (the faults, the
// findings', the margins'), and draws the operations from the checker's,
// so that a soak's pages never hold its million events. Results that came
// without the checker's operations read every event (NewRun). A history
// readable only in part is kept as far as it goes, with the reason.
func ReadRun(histPath string, res Results) (*Run, error) {
	if ops := res.check.Ops(); ops != nil {
		l, err := readLog(histPath, res)
		if l.fits(ops) && (err == nil || l.n > 0) {
			return &Run{Results: res, histErr: err, a: analyseLog(l, ops)}, nil
		}
		if err != nil && l.n == 0 {
			return nil, err
		}
	}
	events, err := history.ReadFile(histPath)
	if err != nil && len(events) == 0 {
		return nil, err
	}
	r := NewRun(events, res)
	r.histErr = err
	return r, nil
}

// OpenRun reads a run directory's results.json and history, once. A
// history readable only in part is kept as far as it goes, with the
// reason (the pages say where it stopped); one that cannot be opened is
// an error.
func OpenRun(dir string) (*Run, error) {
	res, err := ReadResults(dir)
	if err != nil {
		return nil, err
	}
	events, histErr := history.ReadFile(history.InDir(dir))
	if errors.Is(histErr, fs.ErrNotExist) || errors.Is(histErr, fs.ErrPermission) {
		return nil, histErr
	}
	r := NewRun(events, res)
	r.histErr = histErr
	return r, nil
}

// Takeaway is the run in three lines.
func (r *Run) Takeaway() Takeaway { return takeaway(r.Results, r.a) }

// ErrNoAnomaly is WriteAnomalyPNG's answer for a run without an anomaly:
// there is no moment of one to draw.
var ErrNoAnomaly = errors.New("the run found no anomaly, so there is no moment of one to draw; timeline.png is the whole run")

// WriteAnomalyPNG writes to path the timeline of the moments around the
// run's first anomaly, as timeline.png draws them: one image to put on a
// slide. It says which window it drew.
func (r *Run) WriteAnomalyPNG(path string) (from, to time.Duration, err error) {
	t := timelineOf(r.a, r.Results)
	var first *RedSpan
	for i, s := range t.RedSpans {
		if s.Client < 0 && (first == nil || s.Finding < first.Finding) {
			first = &t.RedSpans[i]
		}
	}
	if first == nil {
		return 0, 0, ErrNoAnomaly
	}
	pad := max(time.Second, (first.End-first.Start)/4)
	w := t.Window(first.Start-pad, first.End+pad)
	err = writeAtomic(path, func(out io.Writer) error { return WriteTimelinePNG(out, w) })
	return w.Start, w.End, err
}
