package harness

import (
	"bufio"
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

// recheck checks a recorded history again, from the files alone, and writes
// results.json (and, for report, the plots and pages) beside it. check exits
// with the verdict; report exits 0 once everything is written.
func recheck(name string, args []string, stdout, stderr io.Writer, render bool) int {
	c := newCommand(name, "PATH [flags]", "PATH is a run directory or a history.jsonl (see docs/history.md). Checks the\n"+
		"history with porcupine's lease-lock model and the audits, writes results.json\n"+
		"(and linear.html when the check fails) beside it and exits 0 valid, 1 invalid,\n"+
		"2 unknown (an empty history is no evidence), 255 when the input is malformed.")
	if render {
		c = newCommand(name, "DIR [flags]", "Re-checks DIR/history.jsonl and regenerates results.json, linear.html, the plots\n"+
			"and index.html in DIR. Exits 0 once everything is written.")
	}
	timeout := c.Duration("check-timeout", 30*time.Second, "bound on the linearizability check; past it the verdict is unknown")
	single := new(bool)
	if render {
		single = c.Bool("single-file", false, "also write DIR/"+reports.SingleFile+": the page with its plots inside it, one file to paste into a review")
	}
	asJSON := c.Bool("json", false, "print one JSON summary on stdout (the human summary goes to stderr)")
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
	hist, err := os.Open(histPath)
	if err != nil {
		fmt.Fprintf(stderr, "harness %s: %v\n", name, err)
		return exitHarness
	}
	defer hist.Close()
	meta := reports.Meta{Spec: []byte("{}")}
	slack := reports.DefaultSlack
	if old, err := reports.ReadResults(dir); err == nil {
		meta = reports.MetaOf(old)
		if old.Checker.SlackMs > 0 {
			slack = time.Duration(old.Checker.SlackMs * float64(time.Millisecond))
		}
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
	// The history is checked as it is read: a soak's millions of events
	// are never all in memory.
	var size int64
	if st, err := hist.Stat(); err == nil {
		size = st.Size()
	}
	if !render {
		// The plots read the whole history again, and hold it.
		limitMemory(size)
	}
	res, err := reports.ConcludeStream(bufio.NewReaderSize(hist, 1<<20), meta, checker.Options{Slack: slack, Timeout: *timeout, Tables: tables,
		Database: spec.Resource == resource.Postgres, SizeHint: size})
	if err != nil {
		fmt.Fprintf(stderr, "harness %s: %s: %v\n", name, histPath, err)
		return exitHarness
	}
	if err := reports.WriteRunFrom(dir, histPath, res, render, *single); err != nil {
		fmt.Fprintf(stderr, "harness %s: %v\n", name, err)
		return exitHarness
	}
	reports.Summary(human, "lockharness "+name+" "+histPath, specLine(res), res, dir)
	if *asJSON {
		printJSON(stdout, runSummary(dir, res))
	}
	if render {
		fmt.Fprintf(human, "  report      %s\n", filepath.Join(dir, "index.html"))
		if *single {
			fmt.Fprintf(human, "  one file    %s\n", filepath.Join(dir, reports.SingleFile))
		}
		return 0
	}
	return res.Valid.ExitCode()
}

// limitMemory sets Go's soft memory limit for checking a history of size
// bytes, unless GOMEMLIMIT sets one, and then, unless GOGC sets it, lets
// the collector run only at that limit. What check holds is mostly the
// history's operations, about 0.9 times the file's size, and collecting
// them over and over as the heap grows is most of the collector's cost:
// 1.6 times the size (at least 448 MiB) leaves room for the rest, and a
// heap that outgrows it is collected as the limit says, not refused.
func limitMemory(size int64) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	debug.SetMemoryLimit(max(448<<20, size/10*16))
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(-1)
	}
}

// locateHistory accepts a run directory or the history file itself.
func locateHistory(path string) (dir, hist string, err error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", "", err
	}
	if st.IsDir() {
		return path, filepath.Join(path, "history.jsonl"), nil
	}
	return filepath.Dir(path), path, nil
}

func specLine(r reports.Results) string {
	if r.Command == "" {
		return "(a history recorded elsewhere)"
	}
	return r.Command
}
