package reports

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/history"
)

// TestNoLinearHTMLForASoak: a failed check of more operations than
// LinearHTMLMaxOps writes results.json with a note saying why there is no
// linear.html, and reads no history for it.
func TestNoLinearHTMLForASoak(t *testing.T) {
	dir := t.TempDir()
	res := Results{Valid: checker.Unknown, Stats: map[string]checker.OpStats{"acquire": {OK: LinearHTMLMaxOps, Fail: 1}}}
	// No history is there: reading it for linear.html would fail.
	if err := WriteRunFrom(dir, filepath.Join(dir, history.File), res, false, false); err != nil {
		t.Fatalf("the history was read for linear.html: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "linear.html")); err == nil {
		t.Error("linear.html written for a soak")
	}
	got, err := ReadResults(dir)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Join(got.Checker.Notes, "; "); !strings.Contains(n, "linear.html not written: 200001 operations") {
		t.Errorf("notes %q", n)
	}
}
