package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/reports"
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
	fset := flag.NewFlagSet(name, flag.ContinueOnError)
	fset.SetOutput(stderr)
	timeout := fset.Duration("check-timeout", 30*time.Second, "bound on the linearizability check; past it the verdict is unknown")
	fset.Usage = func() {
		if render {
			fmt.Fprintf(stderr, "Usage: harness report [flags] DIR\n\nRe-checks DIR/history.jsonl and regenerates results.json, linear.html, the plots\nand index.html in DIR.\n\nFlags:\n")
		} else {
			fmt.Fprintf(stderr, "Usage: harness check [flags] PATH\n\nPATH is a run directory or a history.jsonl (see docs/history.md). Writes\nresults.json (and linear.html when the check fails) beside the history and exits\n0 valid, 1 invalid, 2 unknown, 255 when the input is malformed.\n\nFlags:\n")
		}
		fset.PrintDefaults()
	}
	if err := fset.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return exitHarness
	}
	if fset.NArg() != 1 {
		fmt.Fprintf(stderr, "harness %s: want exactly one path, got %d\n", name, fset.NArg())
		fset.Usage()
		return exitHarness
	}
	dir, histPath, err := locateHistory(fset.Arg(0))
	if err != nil {
		fmt.Fprintf(stderr, "harness %s: %v\n", name, err)
		return exitHarness
	}
	events, err := history.ReadFile(histPath)
	if err != nil {
		fmt.Fprintf(stderr, "harness %s: %v\n", name, err)
		return exitHarness
	}
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
	res, err := reports.Conclude(events, meta, checker.Options{Slack: slack, Timeout: *timeout})
	if err != nil {
		fmt.Fprintf(stderr, "harness %s: %s: %v\n", name, histPath, err)
		return exitHarness
	}
	if err := reports.WriteRun(dir, events, res, render); err != nil {
		fmt.Fprintf(stderr, "harness %s: %v\n", name, err)
		return exitHarness
	}
	reports.Summary(stdout, "lockharness "+name+" "+histPath, specLine(res), res, dir)
	if render {
		fmt.Fprintf(stdout, "  report      %s\n", filepath.Join(dir, "index.html"))
		return 0
	}
	return res.Valid.ExitCode()
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
