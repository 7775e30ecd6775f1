// Command regressions keeps docs/regressions.md, the track record of
// public reports the harness reproduces, true: it runs every catalog row
// the table lists with `harness repro` for a number of seeds and rewrites
// each row's last column with what it measured (the harness's commit, the
// date, the Redis version, the seeds met). A row that no longer reproduces
// is marked so, with when it last did, and kept.
//
//	go run ./cmd/regressions [-seeds 5] [-harness bin/harness] [-doc docs/regressions.md] [-rows a,b]
//
// It exits 0 when every row reproduced, 1 when one did not, 2 for a bad
// command line or a table it cannot read.
package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/lockharness/lockharness/reports"
)

// The table sits between these markers, so that the prose around it is
// never rewritten.
const (
	beginMark = "<!-- regressions:begin -->"
	endMark   = "<!-- regressions:end -->"
)

// rowName finds the catalog row a table row names: the first `name` in
// its third column.
var rowName = regexp.MustCompile("`([a-z0-9-]+)`")

func main() {
	seeds := flag.Int("seeds", 5, "seeds per row")
	harness := flag.String("harness", "bin/harness", "the harness binary (`make build`)")
	doc := flag.String("doc", "docs/regressions.md", "the track record to rewrite")
	only := flag.String("rows", "", "comma-separated catalog rows to run (default: every row of the table)")
	flag.Parse()
	if *seeds < 1 || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: regressions [-seeds N ≥ 1] [-harness BIN] [-doc FILE] [-rows a,b]")
		os.Exit(2)
	}
	text, err := os.ReadFile(*doc)
	if err != nil {
		fmt.Fprintln(os.Stderr, "regressions:", err)
		os.Exit(2)
	}
	stamp, err := provenance(*harness)
	if err != nil {
		fmt.Fprintln(os.Stderr, "regressions:", err)
		os.Exit(2)
	}
	var want []string
	if *only != "" {
		want = strings.Split(*only, ",")
		listed := rows(string(text))
		for _, name := range want {
			if !slices.Contains(listed, name) {
				fmt.Fprintf(os.Stderr, "regressions: -rows: %q is not a row of %s (rows: %s)\n", name, *doc, strings.Join(listed, ", "))
				os.Exit(2)
			}
		}
	}
	store, err := os.MkdirTemp("", "regressions-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "regressions:", err)
		os.Exit(2)
	}
	defer os.RemoveAll(store)
	failed := 0
	cells := map[string]string{}
	_, err = rewrite(string(text), func(name, last string) string {
		if want != nil && !slices.Contains(want, name) {
			return last
		}
		met, err := repro(*harness, name, *seeds, store)
		result := fmt.Sprintf("%s · %d of %d seeds", stamp, met, *seeds)
		switch {
		case err != nil:
			failed++
			fmt.Fprintf(os.Stderr, "%-34s harness failed: %v\n", name, err)
			cells[name] = fmt.Sprintf("**not run** (%s: %v); before: %s", stamp, cell(oneLine(err)), previous(last))
			return last
		case met < *seeds:
			failed++
			fmt.Fprintf(os.Stderr, "%-34s NO LONGER REPRODUCES: %d of %d seeds\n", name, met, *seeds)
			cells[name] = fmt.Sprintf("**no longer reproduces**: %s; before: %s", result, previous(last))
			return last
		}
		fmt.Fprintf(os.Stderr, "%-34s %d of %d seeds\n", name, met, *seeds)
		cells[name] = result
		return last
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "regressions:", err)
		os.Exit(2)
	}
	// The runs take minutes: the table is read again now, so that an
	// edit made meanwhile is kept, and written whole or not at all.
	if text, err = os.ReadFile(*doc); err == nil {
		var out string
		if out, err = rewrite(string(text), func(name, last string) string { return cmp.Or(cells[name], last) }); err == nil {
			err = writeAtomic(*doc, out)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "regressions:", err)
		os.Exit(2)
	}
	fmt.Fprintf(os.Stderr, "rewrote %s\n", *doc)
	if failed > 0 {
		os.Exit(1)
	}
}

// rows are the catalog rows the table lists.
func rows(text string) []string {
	var out []string
	rewrite(text, func(name, last string) string {
		out = append(out, name)
		return last
	})
	return out
}

// cell makes text safe in a table cell: a bar would split it.
func cell(text string) string { return strings.ReplaceAll(text, "|", "/") }

// writeAtomic replaces the file at path with text through a temporary
// file in its directory.
func writeAtomic(path, text string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(text); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// rewrite calls cell for every row of the table with its catalog row's
// name and its last column, and puts what it returns in that column.
func rewrite(text string, cell func(name, last string) string) (string, error) {
	begin, end := strings.Index(text, beginMark), strings.Index(text, endMark)
	if begin < 0 || end < begin {
		return "", fmt.Errorf("no table between %s and %s", beginMark, endMark)
	}
	lines := strings.Split(text[begin:end], "\n")
	rows := 0
	for i, line := range lines {
		cols := strings.Split(line, " | ")
		if !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| report") || strings.HasPrefix(line, "|---") {
			continue
		}
		if len(cols) != 4 {
			return "", fmt.Errorf("table row %q has %d columns, want 4 (report, what it shows, catalog row, last reproduced)", line, len(cols))
		}
		m := rowName.FindStringSubmatch(cols[2])
		if m == nil {
			return "", fmt.Errorf("table row %q names no catalog row in backticks in its third column", line)
		}
		last := strings.TrimSuffix(cols[3], " |")
		cols[3] = cell(m[1], last) + " |"
		lines[i] = strings.Join(cols, " | ")
		rows++
	}
	if rows == 0 {
		return "", errors.New("the table lists no catalog row")
	}
	return text[:begin] + strings.Join(lines, "\n") + text[end:], nil
}

// repro runs one catalog row and counts the seeds that met its
// expectation.
func repro(harness, name string, seeds int, store string) (int, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(harness, "repro", name, "--seeds", fmt.Sprint(seeds), "--json", "--store", filepath.Join(store, name))
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	var s reports.Suite
	if err := json.Unmarshal(stdout.Bytes(), &s); err != nil {
		return 0, fmt.Errorf("%v: %s", errors.Join(runErr, err), lastLine(stderr.String()))
	}
	if s.Errors > 0 {
		return 0, fmt.Errorf("%d of %d seeds failed in the harness: %s", s.Errors, seeds, lastLine(stderr.String()))
	}
	return s.Met, nil
}

// provenance is what a reproduction ran on: the harness's commit (with
// "+changes" when the checkout differs from it), the date, Redis's version.
func provenance(harness string) (string, error) {
	if _, err := os.Stat(harness); err != nil {
		return "", fmt.Errorf("%v (run `make build`)", err)
	}
	commit, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "", fmt.Errorf("git rev-parse: %v", err)
	}
	c := strings.TrimSpace(string(commit))
	if changes, _ := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); len(changes) > 0 {
		c += "+changes"
	}
	v, err := exec.Command("redis-server", "--version").Output()
	if err != nil {
		return "", fmt.Errorf("redis-server --version: %v", err)
	}
	version := "?"
	if m := regexp.MustCompile(`v=([0-9.]+)`).FindSubmatch(v); m != nil {
		version = string(m[1])
	}
	return fmt.Sprintf("%s · %s · Redis %s", c, time.Now().UTC().Format("2006-01-02"), version), nil
}

// previous is a row's earlier reproduction, without an earlier mark.
func previous(last string) string {
	if i := strings.LastIndex(last, "before: "); i >= 0 {
		return last[i+len("before: "):]
	}
	return last
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

func oneLine(err error) string { return strings.ReplaceAll(err.Error(), "\n", " ") }
