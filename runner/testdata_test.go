package runner

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/internal/proc"
	"github.com/lockharness/lockharness/reports"
	"github.com/lockharness/lockharness/scenario"
)

// TestRecordTestdata records one run of every catalog scenario (seed 1)
// into ../testdata/runs/NAME/: its history (gzipped) and the verdict the
// checker reached, which cmd/harness's TestDataReplays holds every later
// checker to. It runs only when asked: `make testdata` records every row,
// `make testdata NAMES=a,b` the rows named.
func TestRecordTestdata(t *testing.T) {
	which := os.Getenv("LOCKHARNESS_RECORD_TESTDATA")
	if which == "" {
		t.Skip("records ../testdata/runs; run it with `make testdata`")
	}
	needRedis(t)
	t.Cleanup(proc.KillAll)
	names := strings.Split(which, ",")
	for _, e := range scenario.Catalog {
		if which != "1" && !slices.Contains(names, e.Name) {
			continue
		}
		t.Run(e.Name, func(t *testing.T) {
			s := e.Spec
			s.Name, s.Seed = e.Name, 1
			out, err := RunSpec(context.Background(), s, Options{Store: t.TempDir(), WorkerBin: workerBin})
			if err != nil {
				t.Fatal(err)
			}
			if ok, why := e.Expect.Met(out.Results); !ok {
				t.Fatalf("%s seed 1 missed its expectation (%s): not recorded", e.Name, why)
			}
			dir := filepath.Join("..", "testdata", "runs", e.Name)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := gzipFile(filepath.Join(out.Dir, "history.jsonl"), filepath.Join(dir, "history.jsonl.gz")); err != nil {
				t.Fatal(err)
			}
			// A real resource's final rows are part of the evidence.
			if tables, err := history.ReadTables(out.Dir); err != nil {
				t.Fatal(err)
			} else if tables != nil {
				if err := history.WriteTables(dir, tables); err != nil {
					t.Fatal(err)
				}
			}
			b, err := json.MarshalIndent(reports.ExpectationOf(e.Name, e.Expect.String(), out.Results), "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "expect.json"), append(b, '\n'), 0o644); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func gzipFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		return err
	}
	zw, _ := gzip.NewWriterLevel(out, gzip.BestCompression)
	if _, err := io.Copy(zw, in); err != nil {
		out.Close()
		return err
	}
	if err := zw.Close(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
