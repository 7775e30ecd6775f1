package harness

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/reports"
)

// TestDataReplays checks and reports, through the CLI and from the history
// alone, one recorded run of every catalog scenario (testdata/runs, made
// by `make testdata`), and wants the verdict and every count the recording
// reached. A change to the checker that flips one of them fails here,
// whatever the change meant to do: look at the run, then record again.
func TestDataReplays(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("..", "testdata", "runs", "*"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no recorded runs under testdata/runs: %v", err)
	}
	for _, src := range dirs {
		t.Run(filepath.Base(src), func(t *testing.T) {
			var want reports.Expectation
			b, err := os.ReadFile(filepath.Join(src, "expect.json"))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &want); err != nil {
				t.Fatal(err)
			}
			// check reads the gzipped history where it lies, and writes
			// nothing beside it: testdata/runs is no run directory.
			var stdout, stderr bytes.Buffer
			if code := run([]string{"check", src}, &stdout, &stderr); code != want.Valid.ExitCode() {
				t.Errorf("check exit %d, want %d: %s", code, want.Valid.ExitCode(), stderr.String())
			}
			if _, err := os.Stat(filepath.Join(src, "results.json")); err == nil {
				os.Remove(filepath.Join(src, "results.json"))
				t.Fatalf("check wrote results.json into %s, which is not a run directory", src)
			}
			// With --out, there: results.json and the history beside it,
			// a run directory report takes.
			dir := t.TempDir()
			code := run([]string{"check", src, "--json", "--out", dir}, &stdout, &stderr)
			if code != want.Valid.ExitCode() {
				t.Errorf("check exit %d, want %d: %s", code, want.Valid.ExitCode(), stderr.String())
			}
			res, err := reports.ReadResults(dir)
			if err != nil {
				t.Fatal(err)
			}
			if got := reports.ExpectationOf(want.Scenario, want.Expect, res); !reflect.DeepEqual(got, want) {
				t.Errorf("the checker now says\n %+v\nthe recording said\n %+v", got, want)
			}
			if d := checker.MarginsDisagree(res.Margins, res.Anomalies); d != "" {
				t.Errorf("margins and counts disagree: %s", d)
			}
			stdout.Reset()
			if code := run([]string{"report", dir}, &stdout, &stderr); code != want.Valid.ExitCode() {
				t.Fatalf("report exit %d, want the verdict's %d: %s", code, want.Valid.ExitCode(), stderr.String())
			}
			if !strings.Contains(stdout.String(), fmt.Sprintf("(exit %d)", code)) {
				t.Errorf("report exits %d and prints another: %s", code, stdout.String())
			}
			for _, f := range []string{"index.html", "timeline.png", "latency.png", "rate.png", "results.json"} {
				if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
					t.Errorf("report left no %s: %v", f, err)
				}
			}
			// The page's closest calls are the results' margins.
			page, err := os.ReadFile(filepath.Join(dir, "index.html"))
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(page), `id="margins"`) != (len(res.Margins) > 0) {
				t.Errorf("index.html's closest calls table and the %d margins disagree", len(res.Margins))
			}
			for _, m := range res.Margins {
				if !strings.Contains(html.UnescapeString(string(page)), m.Says) {
					t.Errorf("index.html does not state the %s margin: %s", m.Property, m.Says)
				}
			}
			if c := reports.Closest(res.Margins); c != nil && !strings.Contains(stdout.String(), "closest     "+c.Property) {
				t.Errorf("the summary does not print the closest call (%s):\n%s", c.Property, stdout.String())
			}
		})
	}
}

func gunzip(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	zr, err := gzip.NewReader(in)
	if err != nil {
		return err
	}
	out, err := os.Create(to)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, zr); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
