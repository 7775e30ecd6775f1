package reports

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"
)

// CompareSep splits a suite row's name into the candidate and the column
// it is compared under: "cad × kill-node", "redsync × partition · long
// hold".
const CompareSep = " × "

// Compare is the page a design review reads to pick a lock: candidates as
// rows, the faults (and ttls) they ran under as columns, each cell the share
// of runs an anomaly was found in, linked to the runs, beside what each
// candidate costs without faults.
type Compare struct {
	Title   string
	Columns []string
	Rows    []CompareRow
}

// CompareRow is one candidate.
type CompareRow struct {
	Name  string
	Cells []CompareCell // one per column; Runs is empty where it did not run
	// Cost is measured in its runs without faults (nemesis none), if any.
	Cost *Cost
}

// CompareCell is a candidate's runs under one column. Runs counts the
// judged ones (valid, invalid, unknown); Errors those the harness failed or
// that were interrupted, which judge nothing.
type CompareCell struct {
	Runs, Invalid, Unknown, Errors int
	// Anomalies counts the runs each anomaly was found in.
	Anomalies map[string]int
	// Links are the runs' pages, relative to the compare page.
	Links []string
}

// Cost is what a lock costs when nothing goes wrong.
type Cost struct {
	AcquireP50Ms, AcquireP99Ms float64
	// HandoffsPerSec is grants per second of run time: how often the lock
	// changed hands.
	HandoffsPerSec float64
	Runs           int
	// Alone says every run it was measured in ran alone (SuiteCell.Alone);
	// otherwise other runs shared the machine, and a lock of more server
	// processes lost more to them.
	Alone bool
}

// Beside is how a page qualifies a cost measured beside other runs.
func (c *Cost) Beside() string {
	if c == nil || c.Alone {
		return ""
	}
	return " (beside other runs)"
}

// Rate is the share of the cell's runs that were invalid, as a page shows
// it ("2/3").
func (c CompareCell) Rate() string {
	if c.Runs == 0 && c.Errors == 0 {
		return "–"
	}
	return fmt.Sprintf("%d/%d", c.Invalid, c.Runs)
}

// Found names the anomalies found, with the runs each was in.
func (c CompareCell) Found() string {
	var parts []string
	for _, a := range anomalyColumns {
		if n := c.Anomalies[a]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", a, n))
		}
	}
	if c.Unknown > 0 {
		parts = append(parts, fmt.Sprintf("unknown %d", c.Unknown))
	}
	if c.Errors > 0 {
		parts = append(parts, fmt.Sprintf("harness error %d", c.Errors))
	}
	return strings.Join(parts, ", ")
}

// Class is how the page colours the cell: broken when a run found an
// anomaly, unsure when a run was unknown or failed, safe when every run
// was valid, none where nothing ran.
func (c CompareCell) Class() string {
	switch {
	case c.Invalid > 0:
		return "broken"
	case c.Unknown > 0 || c.Errors > 0:
		return "unsure"
	case c.Runs > 0:
		return "safe"
	}
	return "none"
}

// CompareOf lays a suite whose rows are named "candidate × column" out as a
// comparison, reading the runs' results under dir (the suite's directory)
// for the cost of each candidate's fault-free runs. Rows and columns keep
// the suite's order.
func CompareOf(dir string, s Suite) Compare {
	c := Compare{Title: s.Name}
	rowAt, colAt := map[string]int{}, map[string]int{}
	type place struct{ row, col int }
	cells := map[place]*CompareCell{}
	var costRuns = map[int][]SuiteCell{}
	for _, r := range s.Rows {
		name, col, ok := strings.Cut(r.Scenario, CompareSep)
		if !ok {
			name, col = r.Scenario, "as catalogued"
		}
		ri, ok := rowAt[name]
		if !ok {
			ri = len(c.Rows)
			rowAt[name] = ri
			c.Rows = append(c.Rows, CompareRow{Name: name})
		}
		ci, ok := colAt[col]
		if !ok {
			ci = len(c.Columns)
			colAt[col] = ci
			c.Columns = append(c.Columns, col)
		}
		cell := cells[place{ri, ci}]
		if cell == nil {
			cell = &CompareCell{Anomalies: map[string]int{}}
			cells[place{ri, ci}] = cell
		}
		for _, run := range r.Cells {
			switch {
			case run.Error != "" || (run.Verdict != "valid" && run.Verdict != "invalid" && run.Verdict != "unknown"):
				cell.Errors++
				continue
			case run.Verdict == "invalid":
				cell.Invalid++
			case run.Verdict == "unknown":
				cell.Unknown++
			}
			cell.Runs++
			for a, n := range run.Anomalies {
				if n > 0 {
					cell.Anomalies[a]++
				}
			}
			if run.Run != "" {
				cell.Links = append(cell.Links, filepath.ToSlash(filepath.Join(run.Run, "index.html")))
			}
		}
		if nemesis, _, _ := strings.Cut(col, " · "); nemesis == "none" {
			costRuns[ri] = append(costRuns[ri], r.Cells...)
		}
	}
	for ri := range c.Rows {
		c.Rows[ri].Cells = make([]CompareCell, len(c.Columns))
		for ci := range c.Columns {
			if cell := cells[place{ri, ci}]; cell != nil {
				c.Rows[ri].Cells[ci] = *cell
			}
		}
		c.Rows[ri].Cost = costOf(dir, costRuns[ri])
	}
	return c
}

// costOf is the cost measured in runs without faults: the median of their
// acquire percentiles, and their grants over their time; nil if none could
// be read.
func costOf(dir string, runs []SuiteCell) *Cost {
	var p50s, p99s []float64
	grants, secs, alone := 0, 0.0, true
	for _, run := range runs {
		if run.Run == "" {
			continue
		}
		res, err := ReadResults(filepath.Join(dir, run.Run))
		if err != nil {
			continue
		}
		acq, ok := res.Stats["acquire"]
		var spec struct {
			TimeLimit string `json:"time_limit"`
		}
		json.Unmarshal(res.Spec, &spec)
		limit, err := time.ParseDuration(spec.TimeLimit)
		if !ok || err != nil || limit <= 0 {
			continue
		}
		p50s, p99s = append(p50s, acq.P50Ms), append(p99s, acq.P99Ms)
		alone = alone && run.Alone
		grants += acq.OK
		secs += limit.Seconds()
	}
	if len(p50s) == 0 {
		return nil
	}
	return &Cost{AcquireP50Ms: median(p50s), AcquireP99Ms: median(p99s), HandoffsPerSec: float64(grants) / secs, Runs: len(p50s), Alone: alone}
}

func median(v []float64) float64 {
	v = slices.Clone(v)
	sort.Float64s(v)
	if n := len(v); n%2 == 1 {
		return v[n/2]
	} else {
		return (v[n/2-1] + v[n/2]) / 2
	}
}

// Markdown is the comparison as a markdown table, each cell linked to its
// first run, then the cost of each candidate without faults.
func (c Compare) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\nEach cell: runs with an anomaly / runs, and the anomalies found (runs each was in). Without faults: acquire latency and grants a second, measured with each such run alone on the machine unless the cell says otherwise.\n\n", c.Title)
	fmt.Fprintf(&b, "| lock | %s | acquire p50 / p99 without faults | handoffs/s |\n|---|%s---|---|\n",
		strings.Join(c.Columns, " | "), strings.Repeat("---|", len(c.Columns)))
	for _, r := range c.Rows {
		cells := make([]string, len(r.Cells))
		for i, cell := range r.Cells {
			s := cell.Rate()
			if len(cell.Links) > 0 {
				s = fmt.Sprintf("[%s](%s)", s, cell.Links[0])
			}
			if f := cell.Found(); f != "" {
				s += " " + f
			}
			cells[i] = s
		}
		cost, rate := "not measured", "–"
		if r.Cost != nil {
			cost = fmt.Sprintf("%.1f / %.1f ms%s", r.Cost.AcquireP50Ms, r.Cost.AcquireP99Ms, r.Cost.Beside())
			rate = fmt.Sprintf("%.1f", r.Cost.HandoffsPerSec)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", r.Name, strings.Join(cells, " | "), cost, rate)
	}
	return b.String()
}

// WriteCompare writes compare.md and compare.html into dir, the suite's
// directory, whose runs the cells link to.
func WriteCompare(dir string, c Compare) error {
	if err := writeAtomic(filepath.Join(dir, "compare.md"), func(w io.Writer) error {
		_, err := io.WriteString(w, c.Markdown())
		return err
	}); err != nil {
		return err
	}
	return writeAtomic(filepath.Join(dir, "compare.html"), func(w io.Writer) error {
		return templates.ExecuteTemplate(w, "compare.html", c)
	})
}
