package runner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/reports"
)

// A history the recorder could not write whole ends in a torn line: the
// run is no verdict, and its results say so with both errors, where the
// run's history was once checked from memory.
func TestATornHistoryConcludesAsFailed(t *testing.T) {
	var b strings.Builder
	for i, e := range []history.Event{
		{Type: history.Invoke, Process: 0, F: history.Acquire, Key: "k", Token: "t", TTLMs: 1000},
		{Type: history.OK, Process: 0, F: history.Acquire, Key: "k", Token: "t", Fence: 1},
	} {
		e.Index = i
		line, err := e.MarshalLine()
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	whole := b.String()
	path := filepath.Join(t.TempDir(), history.File)
	if err := os.WriteFile(path, []byte(whole), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := concludeFile(path, reports.Meta{}, checker.Options{})
	if err != nil || res.Valid == checker.Failed {
		t.Fatalf("a whole history: %s, %v", res.Valid, err)
	}

	torn := whole + `{"index":2,"type":"invoke","proc`
	if err := os.WriteFile(path, []byte(torn), 0o644); err != nil {
		t.Fatal(err)
	}
	wrote := &reports.RunError{Stage: reports.StageRun, Message: "writing the history: no space left on device"}
	res, err = concludeFile(path, reports.Meta{Error: wrote}, checker.Options{})
	if err == nil || !strings.Contains(err.Error(), "line 3") {
		t.Errorf("a torn history's error: %v, want one naming line 3", err)
	}
	if res.Valid != checker.Failed || res.Error == nil || !strings.Contains(res.Error.Message, "no space left") || !strings.Contains(res.Error.Message, "line 3") {
		t.Errorf("a torn history's results: %s, %+v; want failed, with the write's error and the check's", res.Valid, res.Error)
	}
}
