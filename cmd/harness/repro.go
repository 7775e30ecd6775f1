package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/internal/proc"
	"github.com/lockharness/lockharness/reports"
	"github.com/lockharness/lockharness/scenario"
)

// cmdRepro runs one catalog scenario for several seeds and says how often
// the harness reported what the catalog expects.
func cmdRepro(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("repro", flag.ContinueOnError)
	fs.SetOutput(stderr)
	seeds := fs.Int("seeds", 1, "how many seeds to run")
	first := fs.Int64("first-seed", 1, "the first seed; the others follow it")
	store := fs.String("store", "store", "directory that keeps run directories")
	checkTimeout := fs.Duration("check-timeout", 30*time.Second, "bound on the linearizability check; past it the verdict is unknown")
	verbose := fs.Bool("v", false, "print each run's progress lines")
	onBackend := backendFlags(fs)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: harness repro [flags] NAME\n\nRuns the catalog scenario NAME for --seeds seeds and exits 0 exactly when every\nseed met the catalog's expectation (unsafe ones caught, safe ones passed).\nScenarios: %s\n\nFlags:\n", strings.Join(catalogNames(), ", "))
		fs.PrintDefaults()
	}
	name, code, ok := parseNamed(fs, args)
	if !ok {
		return code
	}
	if name == "" {
		fmt.Fprintln(stderr, "harness repro: which scenario? valid: "+strings.Join(catalogNames(), ", "))
		return exitHarness
	}
	entry, err := scenario.Lookup(name)
	if err != nil {
		fmt.Fprintf(stderr, "harness repro: %v\n", err)
		return exitHarness
	}
	onBackend(&entry.Spec)
	if err := entry.Spec.Validate(); err != nil {
		fmt.Fprintf(stderr, "harness repro: %v\n", err)
		return exitHarness
	}
	if *seeds < 1 {
		fmt.Fprintf(stderr, "harness repro: --seeds must be at least 1, got %d\n", *seeds)
		return exitHarness
	}

	ctx, stop := interruptible(stderr)
	defer stop()
	defer proc.KillAll()
	var report strings.Builder
	out := io.MultiWriter(stdout, &report)
	fmt.Fprintf(out, "repro %s (%s): %s\n  expect %s; %d seeds from %d; %s backend\n", entry.Name, entry.Source, entry.Story, entry.Expect, *seeds, *first, entry.Spec.Backend)
	var took []time.Duration
	var runs []reports.Results
	met := 0
	for i := 0; i < *seeds; i++ {
		spec := entry.Spec
		spec.Seed = *first + int64(i)
		opt := scenario.Options{Store: *store, CheckTimeout: *checkTimeout}
		if *verbose {
			opt.Progress = stderr
		}
		start := time.Now()
		res, err := scenario.Run(ctx, spec, opt)
		took = append(took, time.Since(start))
		if ctx.Err() != nil {
			fmt.Fprintf(out, "  interrupted during seed %d; %d of %d seeds met the expectation so far\n", spec.Seed, met, i)
			return exitHarness
		}
		if err != nil {
			fmt.Fprintf(out, "  seed %-4d harness error: %v\n", spec.Seed, err)
			continue
		}
		runs = append(runs, res.Results)
		ok, why := entry.Expect.Met(res.Results)
		mark := "met"
		if ok {
			met++
		} else {
			mark = "MISSED: " + why
		}
		fmt.Fprintf(out, "  seed %-4d %-8s %s  %5.1fs  %s  %s\n", spec.Seed, res.Results.Valid, anomalyLine(res.Results), took[i].Seconds(), mark, res.Dir)
	}
	fmt.Fprintf(out, "%d of %d seeds met %q; median %.1fs per seed\n", met, *seeds, entry.Expect.String(), median(took).Seconds())
	fmt.Fprintf(out, "  rates: %s\n", rates(runs))
	if entry.Compare != "" {
		if other := storedRuns(*store, entry.Compare); len(other) > 0 {
			fmt.Fprintf(out, "  %s in the same store (%d runs): %s\n", entry.Compare, len(other), rates(other))
		} else {
			fmt.Fprintf(out, "  compare with `harness repro %s --seeds %d --store %s`\n", entry.Compare, *seeds, *store)
		}
	}
	path := filepath.Join(*store, entry.Name, "repro-"+time.Now().Format("20060102T150405")+".txt")
	if err := os.WriteFile(path, []byte(report.String()), 0o644); err == nil {
		fmt.Fprintf(stdout, "  written to %s\n", path)
	}
	if met != *seeds {
		return 1
	}
	return 0
}

// parseNamed parses a verb's flags and its one NAME argument, which may
// come before or after the flags. When it returns !ok, the verb exits with
// code (0 for --help).
func parseNamed(fs *flag.FlagSet, args []string) (name string, code int, ok bool) {
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		name, args = args[0], args[1:]
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return "", 0, false
		}
		return "", exitHarness, false
	}
	if name == "" && fs.NArg() > 0 {
		name = fs.Arg(0)
	}
	return name, 0, true
}

func catalogNames() []string {
	var names []string
	for _, e := range scenario.Catalog {
		names = append(names, e.Name)
	}
	return names
}

func anomalyLine(r reports.Results) string {
	var parts []string
	for _, name := range checker.AnomalyNames {
		parts = append(parts, fmt.Sprintf("%s %d", name, r.Anomalies[name]))
	}
	return strings.Join(parts, " ")
}

// rates summarises how often a set of runs saw each anomaly.
func rates(runs []reports.Results) string {
	if len(runs) == 0 {
		return "no runs"
	}
	var parts []string
	for _, name := range []string{checker.DoubleGrant, checker.StaleWrite} {
		total, with := 0, 0
		for _, r := range runs {
			total += r.Anomalies[name]
			if r.Anomalies[name] > 0 {
				with++
			}
		}
		parts = append(parts, fmt.Sprintf("%s %.1f per run (in %d of %d runs)", name, float64(total)/float64(len(runs)), with, len(runs)))
	}
	invalid, illegal := 0, 0
	for _, r := range runs {
		if r.Valid == checker.Invalid {
			invalid++
		}
		if r.Checker.Linearizability.Result == checker.LinearIllegal {
			illegal++
		}
	}
	return strings.Join(parts, "; ") + fmt.Sprintf("; not linearizable %d of %d; invalid %d of %d", illegal, len(runs), invalid, len(runs))
}

// storedRuns reads every results.json of a scenario in the store.
func storedRuns(store, name string) []reports.Results {
	dirs, _ := filepath.Glob(filepath.Join(store, name, "*", "results.json"))
	sort.Strings(dirs)
	var out []reports.Results
	for _, p := range dirs {
		if r, err := reports.ReadResults(filepath.Dir(p)); err == nil {
			out = append(out, r)
		}
	}
	return out
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}
