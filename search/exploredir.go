package search

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/reports"
	"github.com/lockharness/lockharness/runner"
	"github.com/lockharness/lockharness/scenario"
)

// ExploreRunOptions are a search as the harness carries it out: its runs
// on the topology pool in Store, each stopping once an anomaly is certain,
// every distinct anomaly kind found then shrunk (ShrinkShare of the budget
// between them, Tries tries a candidate), and the search written to
// Store/explore/NAME-STAMP/.
type ExploreRunOptions struct {
	ExploreOptions
	Store        string
	CheckTimeout time.Duration
	// ShrinkShare is the share of the budget the shrinks get, beyond
	// what the search left (0: no shrink).
	ShrinkShare float64
	Tries       int
	// Progress gets every run's own progress lines; nil for none.
	Progress io.Writer
	// Shard is "i/n" for one shard of a campaign: it names the search's
	// directory and record (the seed is the caller's: ShardSeed).
	Shard string
}

// ExploredRun is a finished search and where it was written.
type ExploredRun struct {
	Explored
	Dir string
}

// ExploreFile is the search's record in its directory.
const ExploreFile = "explore.json"

// ExploreInStore searches (Explore), shrinks what it found and writes the
// search's directory. Interrupted, it writes what it has, unshrunk.
func ExploreInStore(ctx context.Context, opt ExploreRunOptions) (ExploredRun, error) {
	pool := runner.NewTopologies()
	defer pool.Close()
	opt.Try = func(ctx context.Context, s scenario.Spec) (runner.Outcome, error) {
		plan, err := s.Resolve()
		if err != nil {
			return runner.Outcome{}, err
		}
		return runner.Run(ctx, plan, runner.Options{Store: opt.Store, CheckTimeout: opt.CheckTimeout, StopOn: checker.OnlineAnomalies, Reuse: pool, Progress: opt.Progress})
	}
	began := time.Now()
	// Once it has found something, the search leaves the shrinks their
	// share of the budget.
	searching := opt.ExploreOptions
	searching.Reserve = time.Duration(opt.ShrinkShare * float64(opt.Budget))
	ex := ExploredRun{Explored: Explore(ctx, searching)}
	ex.Interrupted = ctx.Err() != nil
	ex.Shard = opt.Shard
	name := fmt.Sprintf("%s-%s-%s", opt.Space.Base.Lock, opt.Space.Base.Topology, opt.Strategy)
	if opt.Shard != "" {
		name += "-shard-" + strings.ReplaceAll(opt.Shard, "/", "-of-")
	}
	dir, err := reports.NewExploreDir(opt.Store, name, began)
	if err != nil {
		return ex, err
	}
	ex.Dir = dir
	if !ex.Interrupted && opt.ShrinkShare > 0 {
		ex.shrinkFindings(ctx, opt)
	}
	return ex, WriteExplore(ex)
}

// MergeDirs reads the searches in dirs and merges them (Merge).
func MergeDirs(dirs []string) (Explored, error) {
	var list []ExploredRun
	for _, d := range dirs {
		ex, err := ReadExplored(d)
		if err != nil {
			return Explored{}, err
		}
		list = append(list, ex)
	}
	return Merge(list)
}

// WriteMerged writes a merge to store/explore/LOCK-TOPOLOGY-merged-TIME/.
func WriteMerged(store string, merged Explored) (ExploredRun, error) {
	dir, err := reports.NewExploreDir(store, fmt.Sprintf("%s-%s-merged", merged.Lock, merged.Topology), time.Now())
	if err != nil {
		return ExploredRun{}, err
	}
	ex := ExploredRun{Explored: merged, Dir: dir}
	return ex, WriteExplore(ex)
}

// shrinkFindings shrinks the first run of each wanted kind found, sharing
// ShrinkShare of the budget between them.
func (ex *ExploredRun) shrinkFindings(ctx context.Context, opt ExploreRunOptions) {
	var todo []int
	for i, f := range ex.Findings {
		if f.Wanted {
			todo = append(todo, i)
		}
	}
	if len(todo) == 0 {
		return
	}
	each := time.Duration(opt.ShrinkShare*float64(opt.Budget)) / time.Duration(len(todo))
	for _, i := range todo {
		f := &ex.Findings[i]
		rec, err := ReadRecorded(f.Dir)
		if err != nil {
			f.Shrink = "not shrunk: " + err.Error()
			continue
		}
		spec, kind, err := rec.ShrinkFrom(f.Anomaly)
		if err != nil {
			f.Shrink = "not shrunk: " + err.Error()
			continue
		}
		evident, ok := rec.Evident(kind)
		if !ok {
			evident = spec.TimeLimit.D()
		}
		if opt.Log != nil {
			opt.Log("shrinking the %s of run #%d (%s), for at most %v", kind, f.Run, f.Dir, each.Round(time.Second))
		}
		log := func(string, ...any) {}
		if opt.Log != nil {
			log = func(format string, args ...any) { opt.Log("  "+format, args...) }
		}
		done, err := ShrinkRecorded(ctx, rec, spec, kind, evident, ShrinkRunOptions{Tries: opt.Tries, Budget: each, Store: opt.Store, CheckTimeout: opt.CheckTimeout, Log: log})
		switch {
		case ctx.Err() != nil:
			f.Shrink = "interrupted"
			return
		case err != nil:
			f.Shrink = "not shrunk: " + err.Error()
		case done.Page.Kept:
			m := done.Shrunk.Minimal
			f.Minimal = filepath.Join(done.Dir, done.Page.File)
			f.Shrink = fmt.Sprintf("%d of %d faults, %d clients, time limit %v: found in %d of %d tries (%d cuts in %.0fs)",
				len(m.Schedule), len(done.Shrunk.From.Schedule), m.Clients, m.TimeLimit, opt.Tries, opt.Tries, len(done.Shrunk.Steps), done.Shrunk.Seconds)
		default:
			f.Minimal = filepath.Join(done.Dir, done.Page.File)
			f.Shrink = fmt.Sprintf("no cut kept it in %d of %d tries; the file is the schedule as found (%d cuts in %.0fs)", opt.Tries, opt.Tries, len(done.Shrunk.Steps), done.Shrunk.Seconds)
		}
	}
}

// WriteExplore writes a search's explore.json and explore.html into its
// directory.
func WriteExplore(ex ExploredRun) error {
	b, err := json.MarshalIndent(ex.Explored, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(ex.Dir, ExploreFile), append(b, '\n'), 0o644); err != nil {
		return err
	}
	return reports.WriteExplore(ex.Dir, explorePage(ex))
}

// explorePage is the search as its page shows it.
func explorePage(ex ExploredRun) reports.ExplorePage {
	rel := func(p string) string {
		if r, err := filepath.Rel(ex.Dir, p); err == nil {
			return filepath.ToSlash(r)
		}
		return p
	}
	page := reports.ExplorePage{Lock: ex.Lock, Topology: ex.Topology, Shard: ex.Shard, Strategy: ex.Strategy, Seed: ex.Seed, Budget: ex.Budget, Seconds: ex.Seconds, Faults: ex.Faults,
		Runs: len(ex.Runs), Features: ex.Features, Corpus: ex.Corpus, Interrupted: ex.Interrupted}
	for _, src := range ex.Sources {
		page.Sources = append(page.Sources, reports.ExploreSourceRow{Label: src.Label, Link: rel(filepath.Join(src.Dir, "explore.html")),
			Strategy: src.Strategy, Shard: src.Shard, Seed: src.Seed, Runs: src.Runs, Seconds: src.Seconds})
	}
	for _, f := range ex.Findings {
		row := reports.ExploreFindingRow{Anomaly: f.Anomaly, Run: f.Run, Seconds: f.Seconds, Schedule: f.Genome.String(), Wanted: f.Wanted,
			RunLink: rel(filepath.Join(f.Dir, "index.html")), Shrink: f.Shrink}
		if f.Minimal != "" {
			row.Minimal = rel(f.Minimal)
		}
		if res, err := reports.ReadResults(f.Dir); err == nil {
			row.Story = firstOf(res, f.Anomaly)
		}
		page.Findings = append(page.Findings, row)
	}
	for _, c := range ex.Closest {
		page.Closest = append(page.Closest, reports.ExploreClosestRow{Property: c.Property, Ms: c.Ms, Run: c.Run, Says: c.Says, RunLink: rel(filepath.Join(c.Dir, "index.html"))})
	}
	best := map[string]float64{}
	for _, r := range ex.Runs {
		for p, ms := range r.Margins {
			if v, ok := best[p]; !ok || ms < v {
				best[p] = ms
			}
		}
		point := reports.ExplorePoint{Run: r.N, Search: r.Search, Seconds: r.Seconds, Features: r.Features, Found: r.Found, Schedule: r.Genome.String(), New: r.New, Best: map[string]float64{}}
		for p, v := range best {
			point.Best[p] = v
		}
		page.Progress = append(page.Progress, point)
	}
	for _, p := range checker.MarginProperties {
		if _, ok := best[p]; ok {
			page.Properties = append(page.Properties, p)
		}
	}
	return page
}

// firstOf is the narrative of the run's first finding of kind.
func firstOf(res reports.Results, kind string) string {
	i := slices.IndexFunc(res.Checker.Findings, func(f checker.Finding) bool { return f.Anomaly == kind })
	if i < 0 {
		return ""
	}
	return res.Checker.Findings[i].Narrative
}
