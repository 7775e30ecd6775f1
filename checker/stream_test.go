package checker

import (
	"compress/gzip"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/lockharness/lockharness/history"
)

// TestCheckStreamIsCheck: checking a recorded catalog run as it is read
// reaches what Check reaches on its decoded events: verdict, counts,
// findings (events and narratives), notes and porcupine's result.
func TestCheckStreamIsCheck(t *testing.T) {
	dirs, _ := filepath.Glob(filepath.Join("..", "testdata", "runs", "*"))
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			tables, err := history.ReadTables(dir)
			if err != nil {
				t.Fatal(err)
			}
			opts := Options{Slack: 2 * time.Millisecond, Tables: tables, Database: tables != nil}
			want, err := Check(readGzipHistory(t, filepath.Join(dir, "history.jsonl.gz")), opts)
			if err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(filepath.Join(dir, "history.jsonl.gz"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			zr, err := gzip.NewReader(f)
			if err != nil {
				t.Fatal(err)
			}
			got, nemesis, err := CheckStream(zr, opts)
			if err != nil {
				t.Fatal(err)
			}
			if got.Valid != want.Valid || !reflect.DeepEqual(got.Anomalies, want.Anomalies) || !reflect.DeepEqual(got.Findings, want.Findings) ||
				!reflect.DeepEqual(got.Notes, want.Notes) || got.Linearizability.Result != want.Linearizability.Result || got.Liveness != want.Liveness {
				t.Errorf("streamed: %s %v %v\nwhole: %s %v %v", got.Valid, got.Anomalies, got.Notes, want.Valid, want.Anomalies, want.Notes)
			}
			for _, e := range nemesis {
				if !e.IsNemesis() {
					t.Fatalf("CheckStream's nemesis events hold %+v", e)
				}
			}
		})
	}
}

// Only a check that is its process's one job asks for huge pages: the end
// of harness run checks beside clients that may still be running in the
// same process (a suite's other runs).
func TestOnlyAnOfflineStreamAsksForHugePages(t *testing.T) {
	if streamBuilder(Options{SizeHint: 1 << 26}).HugePages() {
		t.Error("a check beside clients asks for huge pages")
	}
	if !streamBuilder(Options{SizeHint: 1 << 26, Offline: true}).HugePages() {
		t.Error("an offline check does not ask for huge pages")
	}
}
