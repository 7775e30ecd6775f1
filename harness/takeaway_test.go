package harness

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// report --summary says a recorded run in three lines, naming a remedy only
// where a catalog row shows one for the first finding's cause: fencing for
// a frozen client's stale write (persistence for an empty restart is
// scenario's TestCatalogRemedies: the recorded restart predates the end
// detail that says the node came back empty), and none for a failover that lost an unreplicated grant (WAIT does not save
// it: failover-wait is unsafe too). --png draws the moments around the
// first anomaly.
func TestReportSummaryNamesOnlyRemediesARowShows(t *testing.T) {
	for name, want := range map[string]string{
		"gc-pause":              "as catalog row gc-pause-fenced shows (safe: fencing.rejected >= 1, refused-write 0)",
		"failover-double-grant": "Remedy: no catalog row shows one for this cause (unreplicated).",
		"clean-cad":             "Remedy: none needed here",
	} {
		t.Run(name, func(t *testing.T) {
			src := filepath.Join("..", "testdata", "runs", name)
			dir := t.TempDir()
			var stdout, stderr bytes.Buffer
			if code := run([]string{"check", src, "--out", dir}, &stdout, &stderr); code == exitHarness {
				t.Fatalf("check: %s", stderr.String())
			}
			stdout.Reset()
			png := filepath.Join(t.TempDir(), "anomaly.png")
			args := []string{"report", dir, "--summary"}
			if name != "clean-cad" {
				args = append(args, "--png", png)
			}
			code := run(args, &stdout, &stderr)
			lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
			if code == exitHarness || code == exitUsage || len(lines) < 3 {
				t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout.String(), stderr.String())
			}
			if !strings.HasPrefix(lines[0], "Tested: ") || !strings.HasPrefix(lines[2], "Remedy: ") || !strings.Contains(lines[2], want) {
				t.Errorf("summary:\n%s\nwant a remedy line with %q", stdout.String(), want)
			}
			if name != "clean-cad" {
				if b, err := os.ReadFile(png); err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) {
					t.Errorf("--png wrote no image: %v", err)
				}
			}
			page, _ := os.ReadFile(filepath.Join(dir, "index.html"))
			if !strings.Contains(string(page), `id="takeaway"`) || !strings.Contains(string(page), strings.SplitN(lines[2], " (", 2)[0]) {
				t.Errorf("index.html does not show the takeaway first")
			}
		})
	}
}
