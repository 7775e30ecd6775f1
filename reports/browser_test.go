package reports

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockharness/lockharness/checker"
)

// TestPageInBrowser opens index.html in headless Chromium (Debian package
// chromium, installed by make setup) and checks what a reader would see:
// the verdict, and every plot loaded. The page's own script marks the body
// data-loaded="all" once every image has decoded.
func TestPageInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a browser")
	}
	browser := chromium(t)
	events, res := pausedHolder()
	dir := writeRun(t, t.TempDir(), "single-cad-pause-client", "20261129T120001", events, res)
	if err := Render(dir); err != nil {
		t.Fatal(err)
	}

	dom := dumpDOM(t, browser, "file://"+filepath.Join(dir, "index.html"))
	if !strings.Contains(dom, `<div id="verdict" class="banner invalid">`) || !strings.Contains(dom, ">INVALID<") {
		t.Errorf("the verdict is not on the page as the browser built it:\n%.2000s", dom)
	}
	if !strings.Contains(dom, `data-loaded="all"`) {
		i := strings.Index(dom, "<body")
		t.Errorf("not every image loaded: %.300s", dom[max(i, 0):])
	}
}

// TestTimelineHTMLInBrowser opens timeline.html in headless Chromium at the
// address of an anomaly's lease (#e<event>, which hovers over it as a
// reader's pointer would) and checks that the details that appear name
// its token and the node it was found on.
func TestTimelineHTMLInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a browser")
	}
	browser := chromium(t)
	events, f := failover(false)
	res := Results{Valid: checker.Invalid, Anomalies: map[string]int{checker.DoubleGrant: 1},
		Checker: CheckerReport{Findings: []checker.Finding{f}}}
	dir := writeRun(t, t.TempDir(), "failover-double-grant", "20261202T120001", events, res)
	if err := Render(dir); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(dir, "timeline.html"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(page), "http://") || strings.Contains(string(page), "https://") || strings.Contains(string(page), " src=") {
		t.Error("timeline.html refers to something outside itself")
	}
	// Event 2 is client 0's grant, the double grant's first lease.
	dom := dumpDOM(t, browser, "file://"+filepath.Join(dir, "timeline.html")+"#e2")
	if !strings.Contains(dom, `data-hover="lease"`) {
		t.Fatalf("no lease is hovered over:\n%.600s", dom[max(strings.Index(dom, "<body"), 0):])
	}
	i := strings.Index(dom, `id="tip"`)
	tip := dom[max(i, 0):]
	if end := strings.Index(tip, "</div>"); end >= 0 {
		tip = tip[:end]
	}
	t.Logf("hover: %s", tip)
	for _, want := range []string{"<b>token</b> a0", "<b>found on</b> n1 (primary)", "in #1 double-grant"} {
		if !strings.Contains(tip, want) {
			t.Errorf("the hover shows %q, lacking %q", tip, want)
		}
	}
}

// chromium is the headless browser the page tests use, or skips the test.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("chromium is not installed (make setup installs Debian's chromium); the page was not checked in a browser")
	return ""
}

// dumpDOM is the document as Chromium built it, scripts run.
func dumpDOM(t *testing.T, browser, url string) string {
	t.Helper()
	// The deadline only stops a wedged browser from hanging the suite.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, browser, "--headless", "--no-sandbox", "--disable-gpu",
		"--user-data-dir="+t.TempDir(), "--virtual-time-budget=5000", "--dump-dom", url)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", browser, err, stderr.String())
	}
	return string(out)
}

// TestSingleFileStandsAlone copies report.html out of its run directory
// and opens it in headless Chromium: every plot must still load, from the
// page itself.
func TestSingleFileStandsAlone(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a browser")
	}
	browser := chromium(t)
	events, res := pausedHolder()
	dir := writeRun(t, t.TempDir(), "single-cad-pause-client", "20261129T120001", events, res)
	if err := RenderPages(dir, true); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(dir, SingleFile))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(page), `src="data:image/png;base64,`); n != 3 {
		t.Errorf("%d plots inlined, want 3", n)
	}
	alone := filepath.Join(t.TempDir(), "review.html")
	if err := os.WriteFile(alone, page, 0o644); err != nil {
		t.Fatal(err)
	}
	dom := dumpDOM(t, browser, "file://"+alone)
	if !strings.Contains(dom, `data-loaded="all"`) || !strings.Contains(dom, ">INVALID<") {
		i := strings.Index(dom, "<body")
		t.Errorf("report.html alone does not show the verdict and every plot: %.300s", dom[max(i, 0):])
	}
}
