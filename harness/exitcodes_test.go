package harness

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockharness/lockharness/internal/proc"
)

// A run the harness cannot make (a target that does not answer) is exit 255
// in every place that says how it ended: the exit status, the summary, the
// --json line, results.json and the run's page; never a verdict.
func TestAHarnessFailureIsExit255Everywhere(t *testing.T) {
	store := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := run([]string{"run", "--target", "redis://127.0.0.1:1", "--time-limit", "2s", "--store", store, "--quiet", "--json"}, &stdout, &stderr)
	if code != exitHarness {
		t.Fatalf("exit %d, want %d: %s", code, exitHarness, stderr.String())
	}
	if !strings.Contains(stderr.String(), "verdict     ERROR, no verdict (exit 255)") {
		t.Errorf("the summary does not say exit 255:\n%s", stderr.String())
	}
	var line struct {
		Dir   string          `json:"dir"`
		Exit  int             `json:"exit"`
		Valid json.RawMessage `json:"valid"`
		Error struct{ Stage, Message string }
	}
	if err := json.Unmarshal(stdout.Bytes(), &line); err != nil {
		t.Fatalf("--json printed %q: %v", stdout.String(), err)
	}
	if line.Exit != exitHarness || string(line.Valid) != `"error"` || line.Error.Stage != "start" || !strings.Contains(line.Error.Message, "127.0.0.1:1") {
		t.Errorf("--json says exit %d, valid %s, error %+v; want 255, \"error\", a start error naming the target", line.Exit, line.Valid, line.Error)
	}
	b, err := os.ReadFile(filepath.Join(line.Dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"valid": "error"`) || !strings.Contains(string(b), `"stage": "start"`) {
		t.Errorf("results.json:\n%s", b)
	}
	// The re-run lands in the same store, not in one of the working
	// directory's.
	if !strings.Contains(string(b), "--store "+store) {
		t.Errorf("the re-run command leaves out --store %s:\n%s", store, b)
	}
	page, err := os.ReadFile(filepath.Join(line.Dir, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), `class="banner error"`) {
		t.Errorf("index.html shows no error banner")
	}
}

// repro tells "found a bug" from "the harness broke": a worker that cannot
// go on fails every seed as a harness error, and repro runs them all, then
// exits 255 with them counted apart from missed.
func TestReproExits255WhenTheHarnessFailedASeed(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("no redis-server on PATH (make setup)")
	}
	t.Cleanup(proc.KillAll)
	dir := t.TempDir()
	worker := `read hello; echo '{"kind":"ready","protocol":1,"name":"badpass"}'; ` +
		`read req; echo '{"kind":"fatal","error":"WRONGPASS invalid username-password pair"}'; sleep 5`
	file := filepath.Join(dir, "ours.toml")
	toml := "name = \"ours\"\nsource = \"our review\"\nexpect = \"safe\"\n\n[spec]\nlock = \"exec\"\nworker_cmd = " +
		strconvQuote(worker) + "\nnemesis = \"none\"\ntime_limit = \"2s\"\n"
	if err := os.WriteFile(file, []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := run([]string{"repro", file, "--seeds", "2", "--store", filepath.Join(dir, "store"), "--json"}, &stdout, &stderr)
	if code != exitHarness {
		t.Fatalf("exit %d, want %d:\n%s", code, exitHarness, stderr.String())
	}
	var doc struct {
		Schema, Met, Missed, Errors int
		Passed                      bool
	}
	if err := json.Unmarshal(stdout.Bytes(), &doc); err != nil {
		t.Fatalf("--json printed %q: %v", stdout.String(), err)
	}
	if doc.Schema != 2 || doc.Errors != 2 || doc.Missed != 0 || doc.Met != 0 || doc.Passed {
		t.Errorf("--json: %+v; want schema 2, 2 errors, 0 missed, 0 met, not passed", doc)
	}
	if !strings.Contains(stderr.String(), "2 of 2 seeds failed as harness errors") {
		t.Errorf("repro does not say the seeds failed as harness errors:\n%s", stderr.String())
	}
	if n := proc.Live(); n != 0 {
		t.Errorf("%d processes left", n)
	}
}

func strconvQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// worker-check names the first mistake as the cause, ahead of what passed
// after it.
func TestWorkerCheckNamesTheFirstProblem(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("no redis-server on PATH (make setup)")
	}
	t.Cleanup(proc.KillAll)
	worker := `read hello; echo '{"kind":"ready","protocol":1,"name":"badpass"}'; read req; echo '{"kind":"fatal","error":"WRONGPASS"}'; sleep 5`
	var stdout, stderr bytes.Buffer
	if code := run([]string{"worker-check", worker}, &stdout, &stderr); code != 1 {
		t.Fatalf("exit %d, want 1:\n%s\n%s", code, stdout.String(), stderr.String())
	}
	out := stdout.String()
	fail, ok := strings.Index(out, "FAIL"), strings.Index(out, "  ok ")
	if fail < 0 || ok >= 0 && ok < fail {
		t.Errorf("the session's failure does not come first:\n%s", out)
	}
	if !strings.Contains(out, "1 problem in 1 session") || !strings.Contains(out, `the first, which the others may follow from: single: a "fatal" line during acquire`) {
		t.Errorf("the last line does not name the first problem:\n%s", out)
	}
}
