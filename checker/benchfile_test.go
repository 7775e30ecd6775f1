package checker

import (
	"bufio"
	"os"
	"strconv"
	"testing"

	"github.com/lockharness/lockharness/history"
)

// TestWriteBenchHistory writes the benchmarks' correct run of
// $LOCKHARNESS_BENCH_OPS operations (10 keys, 10 clients, 3% of unknown
// outcome) to $LOCKHARNESS_BENCH_HISTORY, for bench/check.sh to check with
// the harness binary; skipped unless both are set.
func TestWriteBenchHistory(t *testing.T) {
	path, n := os.Getenv("LOCKHARNESS_BENCH_HISTORY"), os.Getenv("LOCKHARNESS_BENCH_OPS")
	if path == "" || n == "" {
		t.Skip("writes a benchmark history for bench/check.sh")
	}
	ops, err := strconv.Atoi(n)
	if err != nil {
		t.Fatalf("LOCKHARNESS_BENCH_OPS=%q: %v", n, err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	if err := history.Encode(w, benchHistory(ops)); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}
