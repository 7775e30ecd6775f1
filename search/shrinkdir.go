package search

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/reports"
	"github.com/lockharness/lockharness/runner"
	"github.com/lockharness/lockharness/scenario"
)

// ShrinkRunOptions are how a recorded run is shrunk: k tries of each
// candidate (Tries), the bound on the whole search (Budget), where the
// tries' runs go, and who hears of them.
type ShrinkRunOptions struct {
	Tries        int
	Budget       time.Duration
	Store        string
	CheckTimeout time.Duration
	// Progress gets every try's own progress lines; nil for none.
	Progress io.Writer
	// Log gets a line per candidate.
	Log func(format string, args ...any)
}

// ShrunkRun is a finished shrink of a recorded run: the search, and the
// directory and page written for it ("" and a zero page when interrupted).
type ShrunkRun struct {
	Shrunk Shrunk
	Dir    string
	Page   reports.ShrinkPage
}

// ShrinkRecorded searches, from spec (rec.ShrinkFrom) and the moment the
// anomaly was evident, for the smallest scenario that still finds kind in
// every try, each candidate a run on the topology pool that follows the
// recorded schedule with one cut made (Shrink), and writes
// rec.Dir/shrink-STAMP/: minimal.toml, both timelines, shrink.json and
// shrink.html. An interrupted search writes nothing.
func ShrinkRecorded(ctx context.Context, rec Recorded, spec scenario.Spec, kind string, evident time.Duration, opt ShrinkRunOptions) (ShrunkRun, error) {
	var stopKinds []string
	if slices.Contains(checker.OnlineAnomalies, kind) {
		stopKinds = []string{kind}
	}
	pool := runner.NewTopologies()
	defer pool.Close()
	try := func(ctx context.Context, s scenario.Spec) (runner.Outcome, error) {
		plan, err := s.Resolve()
		if err != nil {
			return runner.Outcome{}, err
		}
		return runner.Run(ctx, plan, runner.Options{Store: opt.Store, CheckTimeout: opt.CheckTimeout, StopOn: stopKinds, Reuse: pool, Progress: opt.Progress})
	}
	shrunk := Shrink(ctx, spec, evident, ShrinkOptions{Anomaly: kind, Tries: opt.Tries, Budget: opt.Budget, Try: try, Log: opt.Log})
	out := ShrunkRun{Shrunk: shrunk}
	if ctx.Err() != nil {
		return out, nil
	}
	out.Dir = filepath.Join(rec.Dir, "shrink-"+time.Now().Format("20060102T150405"))
	var err error
	out.Page, err = writeShrink(out.Dir, rec, kind, opt.Tries, opt.Budget, shrunk)
	return out, err
}

// writeShrink writes a shrink's directory: minimal.toml, both timelines,
// shrink.json and shrink.html.
func writeShrink(dir string, rec Recorded, kind string, tries int, budget time.Duration, shrunk Shrunk) (reports.ShrinkPage, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return reports.ShrinkPage{}, err
	}
	m := shrunk.Minimal
	plan, err := m.Resolve()
	if err != nil {
		return reports.ShrinkPage{}, err
	}
	m.Nemesis = plan.Spec.Nemesis // the faults of the minimal schedule
	file := filepath.Join(dir, "minimal.toml")
	kept := len(shrunk.Runs) > 0
	entry := scenario.Entry{Name: minimalName(rec.Spec.Name), Source: "harness shrink of " + rec.Dir, Spec: m,
		Expect: scenario.Expect{Unsafe: true, Anomaly: kind},
		Story: fmt.Sprintf("%s's %s with %d of its %d faults, %d of its %d clients and a time limit of %v", rec.Spec.Name, kind,
			len(m.Schedule), len(shrunk.From.Schedule), m.Clients, shrunk.From.Clients, m.TimeLimit)}
	page := reports.ShrinkPage{Anomaly: kind, Tries: tries, Budget: budget.String(), Seconds: shrunk.Seconds, OutOfBudget: shrunk.OutOfBudget, Kept: kept,
		File:    "minimal.toml",
		Command: fmt.Sprintf("harness run --scenario %s --seed %d", file, m.Seed),
		Repro:   fmt.Sprintf("harness repro %s --seeds %d --first-seed %d", file, tries, m.Seed)}
	header := fmt.Sprintf("Shrunk by harness shrink on %s from %s.\n", time.Now().Format(time.DateOnly), rec.Dir)
	if kept {
		header += fmt.Sprintf("Found the %s in %d of %d tries, seed %d: %s.\n", kind, tries, tries, m.Seed, strings.Join(shrunk.Runs, ", "))
	} else {
		header += fmt.Sprintf("No cut kept the %s in %d of %d tries: this is the original schedule.\n", kind, tries, tries)
	}
	header += "Re-run: " + page.Command + "\n"
	text, err := scenario.FormatScenario(entry, header)
	if err != nil {
		return page, err
	}
	if err := os.WriteFile(file, text, 0o644); err != nil {
		return page, err
	}
	page.Original = shrinkSide("original", rec.Dir, rec.Spec, rec.Results, dir, "original.png")
	page.Original.Faults = StepLines(shrunk.From.Schedule)
	page.Minimal = reports.ShrinkSide{Title: "minimal", Line: m.Line(), Faults: StepLines(m.Schedule), Found: "not run"}
	if kept {
		if res, err := reports.ReadResults(shrunk.Runs[0]); err == nil {
			page.Minimal = shrinkSide("minimal", shrunk.Runs[0], m, res, dir, "minimal.png")
			page.Minimal.Faults = StepLines(m.Schedule)
		}
	}
	for _, st := range shrunk.Steps {
		page.Steps = append(page.Steps, reports.ShrinkRow{Cut: st.Cut, Kept: st.Kept, Found: strings.Join(st.Found, "; "), Seconds: st.Seconds})
	}
	b, err := json.MarshalIndent(shrunk, "", "  ")
	if err != nil {
		return page, err
	}
	if err := os.WriteFile(filepath.Join(dir, "shrink.json"), append(b, '\n'), 0o644); err != nil {
		return page, err
	}
	return page, reports.WriteShrink(dir, page)
}

// shrinkSide is one side of the page, its timeline copied beside it.
func shrinkSide(title, runDir string, spec scenario.Spec, res reports.Results, dir, png string) reports.ShrinkSide {
	side := reports.ShrinkSide{Title: title, Line: spec.Line(), Found: Found(res), Narrative: reports.FirstFindings(res)}
	if rel, err := filepath.Rel(dir, runDir); err == nil {
		side.Run = filepath.ToSlash(rel) + "/index.html"
	}
	if b, err := os.ReadFile(filepath.Join(runDir, "timeline.png")); err == nil && os.WriteFile(filepath.Join(dir, png), b, 0o644) == nil {
		side.Timeline = png
	}
	return side
}

// StepLines are a schedule's steps as `harness replay` prints them.
func StepLines(steps []scenario.Step) []string {
	var out []string
	for _, st := range steps {
		out = append(out, st.String())
	}
	return out
}

// minimalName names the minimal scenario after the run's, in the
// characters a scenario name may hold.
func minimalName(name string) string {
	name = strings.TrimSuffix(name, ReplaySuffix)
	name = strings.Trim(nameChars.ReplaceAllString(strings.ToLower(name), "-"), "-")
	return name + "-min"
}

var nameChars = regexp.MustCompile(`[^a-z0-9-]+`)
