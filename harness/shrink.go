package harness

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
	"github.com/lockharness/lockharness/internal/proc"
	"github.com/lockharness/lockharness/reports"
	"github.com/lockharness/lockharness/scenario"
)

// cmdShrink searches for the smallest scenario that still shows a run's
// anomaly and writes it as a scenario file with a page beside it.
func cmdShrink(args []string, stdout, stderr io.Writer) int {
	c := newCommand("shrink", "DIR [flags]", "Starts from the invalid run in DIR and searches for a smaller scenario that\n"+
		"still finds the same anomaly in every one of --tries tries: fewer faults,\n"+
		"shorter fault windows, fewer clients, a shorter time limit. Each candidate\n"+
		"follows the run's schedule (as `harness replay` does) with one cut made, and is\n"+
		"kept only when every try finds the anomaly. The search stops when no cut is\n"+
		"left or at --budget. It writes DIR/shrink-TIMESTAMP/ with minimal.toml (the\n"+
		"minimal scenario, for `harness run --scenario` and `harness repro`), shrink.html\n"+
		"(the original and minimal timelines side by side, and every cut tried) and\n"+
		"shrink.json, and prints the command that re-runs the minimal scenario. Exits 0\n"+
		"when a smaller scenario was found, 1 when none was, 64 for a valid run.")
	budget := c.Duration("budget", 10*time.Minute, "bound on the whole search")
	tries := c.Int("tries", 3, "k: how many runs of a candidate must all find the anomaly")
	anomaly := c.String("anomaly", "", "the anomaly to keep, when the run found several: "+strings.Join(checker.AnomalyNames, ", ")+" (default: the first it found in that order)")
	store := c.storeFlag("")
	checkTimeout := c.checkTimeoutFlag()
	verbose := c.Bool("v", false, "print each try's progress lines")
	pos, code, ok := c.parse(args, stdout, stderr)
	if !ok {
		return code
	}
	switch {
	case len(pos) != 1:
		return c.fail(stderr, "want one run directory, got %d arguments", len(pos))
	case *tries < 1:
		return c.fail(stderr, "--tries must be at least 1, got %d", *tries)
	case *budget <= 0:
		return c.fail(stderr, "--budget must be positive, got %v", *budget)
	}
	rec, err := scenario.ReadRecorded(pos[0])
	if err != nil {
		return c.fail(stderr, "%v", err)
	}
	spec, kind, err := rec.ShrinkFrom(*anomaly)
	if err != nil {
		return c.fail(stderr, "%v", err)
	}
	if _, err := spec.Resolve(); err != nil {
		return c.fail(stderr, "shrinking %s: %v", rec.Dir, err)
	}
	evident, found := rec.Evident(kind)
	when := fmt.Sprintf("evident at %.1fs", evident.Seconds())
	if !found {
		evident, when = spec.TimeLimit.D(), "not placed in time (no finding names its events)"
	}

	ctx, stop := interruptible(stderr)
	defer stop()
	defer proc.KillAll()
	fmt.Fprintf(stdout, "shrink %s (%s): %s\n  from %d faults, %d clients, time limit %v; the %s %s; %d of %d tries must find it; budget %v\n",
		rec.Dir, rec.Spec.Name, scenario.Found(rec.Results), len(spec.Schedule), spec.Clients, spec.TimeLimit, kind, when, *tries, *tries, *budget)
	var stopKinds []string
	if slices.Contains(checker.OnlineAnomalies, kind) {
		stopKinds = []string{kind}
	}
	pool := scenario.NewTopologies()
	defer pool.Close()
	try := func(ctx context.Context, s scenario.Spec) (scenario.Outcome, error) {
		plan, err := s.Resolve()
		if err != nil {
			return scenario.Outcome{}, err
		}
		opt := scenario.Options{Store: *store, CheckTimeout: *checkTimeout, StopOn: stopKinds, Reuse: pool}
		if *verbose {
			opt.Progress = stderr
		}
		return scenario.Run(ctx, plan, opt)
	}
	log := func(format string, args ...any) { fmt.Fprintf(stdout, format+"\n", args...) }
	shrunk := scenario.Shrink(ctx, spec, evident, scenario.ShrinkOptions{Anomaly: kind, Tries: *tries, Budget: *budget, Try: try, Log: log})
	if ctx.Err() != nil {
		fmt.Fprintf(stdout, "  interrupted after %.0fs\n", shrunk.Seconds)
		return exitHarness
	}
	dir := filepath.Join(rec.Dir, "shrink-"+time.Now().Format("20060102T150405"))
	page, err := writeShrink(dir, rec, kind, *tries, *budget, shrunk)
	if err != nil {
		fmt.Fprintf(stderr, "harness shrink: %v\n", err)
		return exitHarness
	}
	m := shrunk.Minimal
	if !page.Kept {
		fmt.Fprintf(stdout, "no smaller scenario found the %s in %d of %d tries (%d cuts tried in %.0fs)\n", kind, *tries, *tries, len(shrunk.Steps), shrunk.Seconds)
	} else {
		fmt.Fprintf(stdout, "minimal: %d of %d faults, %d of %d clients, time limit %v of %v; found the %s in %d of %d tries (%d cuts tried in %.0fs%s)\n",
			len(m.Schedule), len(spec.Schedule), m.Clients, spec.Clients, m.TimeLimit, spec.TimeLimit, kind, *tries, *tries, len(shrunk.Steps), shrunk.Seconds,
			map[bool]string{true: ", stopped at the budget"}[shrunk.OutOfBudget])
		for _, st := range page.Minimal.Faults {
			fmt.Fprintf(stdout, "  %s\n", st)
		}
	}
	fmt.Fprintf(stdout, "  scenario  %s\n  page      %s\n  re-run    %s\n  seeds     %s\n", filepath.Join(dir, page.File), filepath.Join(dir, "shrink.html"), page.Command, page.Repro)
	if shrunk.HarnessError != "" {
		// What was kept before the failure stands; that no smaller one
		// exists is not known.
		fmt.Fprintf(stdout, "stopped by a harness error, so this is not known to be minimal: %s\n", shrunk.HarnessError)
		return exitHarness
	}
	if !page.Kept {
		return 1
	}
	return 0
}

// writeShrink writes a shrink's directory: minimal.toml, both timelines,
// shrink.json and shrink.html.
func writeShrink(dir string, rec scenario.Recorded, kind string, tries int, budget time.Duration, shrunk scenario.Shrunk) (reports.ShrinkPage, error) {
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
	page.Original.Faults = stepLines(shrunk.From.Schedule)
	page.Minimal = reports.ShrinkSide{Title: "minimal", Line: m.Line(), Faults: stepLines(m.Schedule), Found: "not run"}
	if kept {
		if res, err := reports.ReadResults(shrunk.Runs[0]); err == nil {
			page.Minimal = shrinkSide("minimal", shrunk.Runs[0], m, res, dir, "minimal.png")
			page.Minimal.Faults = stepLines(m.Schedule)
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
	side := reports.ShrinkSide{Title: title, Line: spec.Line(), Found: scenario.Found(res), Narrative: reports.FirstFindings(res)}
	if rel, err := filepath.Rel(dir, runDir); err == nil {
		side.Run = filepath.ToSlash(rel) + "/index.html"
	}
	if b, err := os.ReadFile(filepath.Join(runDir, "timeline.png")); err == nil && os.WriteFile(filepath.Join(dir, png), b, 0o644) == nil {
		side.Timeline = png
	}
	return side
}

func stepLines(steps []scenario.Step) []string {
	var out []string
	for _, st := range steps {
		out = append(out, st.String())
	}
	return out
}

// minimalName names the minimal scenario after the run's, in the
// characters a scenario name may hold.
func minimalName(name string) string {
	name = strings.TrimSuffix(name, scenario.ReplaySuffix)
	name = strings.Trim(nameChars.ReplaceAllString(strings.ToLower(name), "-"), "-")
	return name + "-min"
}

var nameChars = regexp.MustCompile(`[^a-z0-9-]+`)
