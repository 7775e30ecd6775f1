package harness

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"time"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/reports"
	"github.com/lockharness/lockharness/resource"
)

func cmdCheck(args []string, stdout, stderr io.Writer) int {
	return recheck("check", args, stdout, stderr, false)
}

func cmdReport(args []string, stdout, stderr io.Writer) int {
	return recheck("report", args, stdout, stderr, true)
}

// recheck checks a recorded history again, from the files alone. check
// writes results.json (and linear.html) where --out says, by default into
// PATH's directory only when that is a run directory; report rewrites a run
// directory's results.json, plots and pages. Both exit with the verdict.
func recheck(name string, args []string, stdout, stderr io.Writer, render bool) int {
	c := newCommand(name, "PATH [flags]", "PATH is a run directory, or a history file (history.jsonl, gzipped or not; see\n"+
		"docs/history.md). Checks the history with porcupine's lease-lock model and the\n"+
		"audits and exits 0 valid, 1 invalid, 2 unknown (an empty history is no evidence),\n"+
		"255 when the input is malformed. It writes results.json (and linear.html when the\n"+
		"check fails) into --out, by default into PATH's run directory, and nowhere when PATH\n"+
		"is a history outside one.")
	if render {
		c = newCommand(name, "DIR [flags]", "Re-checks DIR's history (history.jsonl or history.jsonl.gz) and regenerates\n"+
			"results.json, linear.html, the plots and index.html in DIR. Exits as check does,\n"+
			"with the verdict (0 valid, 1 invalid, 2 unknown, 255 the harness failed), once\n"+
			"everything is written.")
	}
	timeout := c.checkTimeoutFlag()
	single, summary, png := new(bool), new(bool), new(string)
	out := new(string)
	if render {
		single = c.Bool("single-file", false, "also write DIR/"+reports.SingleFile+": the page with its plots inside it, one file to paste into a review")
		summary = c.Bool("summary", false, "print only the run in three lines fit for a slide (index.html shows them first): what was tested, what broke and its first cause, and the remedy a catalog row shows for that cause, if one does")
		png = c.String("png", "", "also write to `FILE` the timeline of the moments around the first anomaly, as one image")
	} else {
		out = c.String("out", "", "write results.json and linear.html into `DIR` (made if missing); default: PATH's directory when it is a run directory")
	}
	asJSON := c.Bool("json", false, "print one JSON summary on stdout (the human summary goes to stderr)")
	outliveFlag := c.Duration("outlive", -1, "how long past its TTL the lock service may keep a lease (etcd: the TTL and 2.5s); default: what the run's results.json says, 0 for a history without one")
	pos, code, ok := c.parse(args, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return c.fail(stderr, "want exactly one path, got %d", len(pos))
	}
	human := stdout
	if *asJSON {
		human = stderr
	}
	dir, histPath, err := locateHistory(pos[0])
	if err != nil {
		fmt.Fprintf(stderr, "harness %s: %v\n", name, err)
		return exitHarness
	}
	if render && !isRunDir(dir) {
		return c.fail(stderr, "%s is not a run directory (no results.json or harness.log): report rewrites a run's pages from its history; `harness check PATH --out DIR` checks a history from elsewhere into DIR, which report then takes", dir)
	}
	hist, err := history.Open(histPath)
	if err != nil {
		fmt.Fprintf(stderr, "harness %s: %v\n", name, err)
		return exitHarness
	}
	defer hist.Close()
	meta := reports.Meta{Spec: []byte("{}")}
	slack, outlive := reports.DefaultSlack, time.Duration(0)
	if old, err := reports.ReadResults(dir); err == nil {
		meta = reports.MetaOf(old)
		if old.Checker.SlackMs > 0 {
			slack = time.Duration(old.Checker.SlackMs * float64(time.Millisecond))
		}
		outlive = time.Duration(old.Checker.OutliveMs * float64(time.Millisecond))
	} else if !errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(stderr, "harness %s: %s/results.json: %v\n", name, dir, err)
		return exitHarness
	}
	tables, err := history.ReadTables(dir)
	if err != nil {
		fmt.Fprintf(stderr, "harness %s: %s: %v\n", name, dir, err)
		return exitHarness
	}
	var spec struct {
		Resource string `json:"resource"`
	}
	json.Unmarshal(meta.Spec, &spec)
	protected, _ := resource.Lookup(spec.Resource)
	if *outliveFlag >= 0 {
		outlive = *outliveFlag
	}
	opts := checker.Options{Slack: slack, Outlive: outlive, Timeout: *timeout, Tables: tables, Database: protected.Database, Offline: true}
	// The history is checked as it is read, so that a soak's millions of
	// events are never all in memory; the pages read it again for the few
	// they tell one by one (reports.ReadRun).
	var run *reports.Run
	opts.SizeHint = history.Size(histPath)
	if render {
		collectOften()
	} else {
		limitMemory(opts.SizeHint)
	}
	res, err := reports.ConcludeStream(hist, meta, opts)
	if err == nil && render {
		run, err = reports.ReadRun(histPath, res)
	}
	if err != nil {
		fmt.Fprintf(stderr, "harness %s: %s: %v\n", name, histPath, err)
		return exitHarness
	}
	into := dir
	switch {
	case *out != "":
		into = *out
		if err := os.MkdirAll(into, 0o755); err != nil {
			fmt.Fprintf(stderr, "harness %s: --out: %v\n", name, err)
			return exitHarness
		}
	case !render && !isRunDir(dir):
		into = ""
	}
	if *out != "" && filepath.Clean(into) != filepath.Clean(dir) {
		// DIR becomes a run directory report can take: the history (and
		// the database's rows) beside the results.
		if err := placeHistory(histPath, dir, into); err != nil {
			fmt.Fprintf(stderr, "harness %s: --out: %v\n", name, err)
			return exitHarness
		}
	}
	if into != "" {
		write := func() error { return reports.WriteRunFrom(into, histPath, res, render, *single) }
		if run != nil {
			write = func() error { return run.Write(into, render, *single) }
		}
		if err := write(); err != nil {
			fmt.Fprintf(stderr, "harness %s: %v\n", name, err)
			return exitHarness
		}
	}
	if run != nil && (*png != "" || *summary) {
		if *png != "" {
			from, to, err := run.WriteAnomalyPNG(*png)
			switch {
			case errors.Is(err, reports.ErrNoAnomaly):
				defer fmt.Fprintf(human, "  image       none written: %v\n", err)
			case err != nil:
				fmt.Fprintf(stderr, "harness %s: --png: %v\n", name, err)
				return exitHarness
			default:
				defer fmt.Fprintf(human, "  image       %s (the timeline from %.3f s to %.3f s, around anomaly #1)\n", *png, from.Seconds(), to.Seconds())
			}
		}
		if *summary {
			for _, l := range run.Takeaway().Lines() {
				fmt.Fprintln(human, l)
			}
			return res.Valid.ExitCode()
		}
	}
	reports.Summary(human, "lockharness "+name+" "+histPath, specLine(res), res, cmp.Or(into, dir))
	switch {
	case render:
		fmt.Fprintf(human, "  report      %s\n", filepath.Join(dir, "index.html"))
		if *single {
			fmt.Fprintf(human, "  one file    %s\n", filepath.Join(dir, reports.SingleFile))
		}
	case into == "":
		fmt.Fprintf(human, "  written     nothing: %s is not a run directory (--out DIR writes results.json there)\n", dir)
	default:
		fmt.Fprintf(human, "  written     %s\n", filepath.Join(into, "results.json"))
	}
	if *asJSON {
		printJSON(stdout, runSummary(cmp.Or(into, dir), res))
	}
	return res.Valid.ExitCode()
}

// placeHistory puts the history at histPath, and the database's rows
// beside it in dir, into the directory into: linked where the file system
// allows, copied otherwise.
func placeHistory(histPath, dir, into string) error {
	files := map[string]string{histPath: filepath.Join(into, filepath.Base(histPath))}
	if tables := filepath.Join(dir, history.TablesFile); fileExists(tables) {
		files[tables] = filepath.Join(into, history.TablesFile)
	}
	for from, to := range files {
		os.Remove(to)
		if os.Link(from, to) == nil {
			continue
		}
		if err := copyFile(from, to); err != nil {
			return err
		}
	}
	return nil
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// isRunDir reports whether dir is a run's directory, which the harness may
// write results into: a run leaves harness.log and results.json there.
func isRunDir(dir string) bool {
	return fileExists(filepath.Join(dir, "results.json")) || fileExists(filepath.Join(dir, "harness.log"))
}

// limitMemory sets Go's soft memory limit for checking a history of size
// bytes, unless GOMEMLIMIT sets one, and then, unless GOGC sets it, lets
// the collector run only at that limit. What check holds at most is the
// history's operations and, while they are paired, the table numbering
// their tokens, about 0.54 times the file's size, and collecting them
// over and over as the heap grows is most of the collector's cost: 0.65
// times the size (at least 256 MiB) leaves room for the rest, and a heap
// that outgrows it is collected as the limit says, not refused. (10M
// operations, 2.8 GB of history: 16.3 s and 1.85 GB at 0.65 times; 18.5
// s and 1.71 GB at 0.6; 28.7 s and 1.73 GB at 0.54, where the collector
// runs all the time.)
func limitMemory(size int64) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	debug.SetMemoryLimit(max(256<<20, size/20*13))
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(-1)
	}
}

// collectOften has Go's collector run when the heap has grown by a
// quarter since the last collection, not doubled, unless GOGC says
// otherwise: for the end of a run and for harness report, which hold a
// soak's operations and then draw its pages, and whose garbage would
// otherwise double that in the process's memory. On a 25-minute soak
// (536,970 events) report peaked at 169 MB instead of 229 MB, in 2.4 s
// instead of 2.6 s (before porcupine's form of a key was built a segment
// at a time).
func collectOften() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(25)
	}
}

// locateHistory accepts a run directory or the history file itself.
func locateHistory(path string) (dir, hist string, err error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", "", err
	}
	if st.IsDir() {
		return path, history.InDir(path), nil
	}
	return filepath.Dir(path), path, nil
}

func specLine(r reports.Results) string {
	if r.Command == "" {
		return "(a history recorded elsewhere)"
	}
	return r.Command
}
