package reports

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestPageInBrowser opens index.html in headless Chromium (Debian package
// chromium, installed by make setup) and checks what a reader would see:
// the verdict, and every plot loaded. The page's own script marks the body
// data-loaded="all" once every image has decoded.
func TestPageInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a browser")
	}
	browser := ""
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			browser = p
			break
		}
	}
	if browser == "" {
		t.Skip("chromium is not installed (make setup installs Debian's chromium); the page was not checked in a browser")
	}
	events, res := pausedHolder()
	dir := writeRun(t, t.TempDir(), "single-cad-pause-client", "20261129T120001", events, res)
	if err := Render(dir); err != nil {
		t.Fatal(err)
	}

	// The deadline only stops a wedged browser from hanging the suite.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, browser, "--headless", "--no-sandbox", "--disable-gpu",
		"--user-data-dir="+t.TempDir(), "--virtual-time-budget=5000", "--dump-dom",
		"file://"+filepath.Join(dir, "index.html"))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", browser, err, stderr.String())
	}
	dom := string(out)
	if !strings.Contains(dom, `<div id="verdict" class="banner invalid">`) || !strings.Contains(dom, ">INVALID<") {
		t.Errorf("the verdict is not on the page as the browser built it:\n%.2000s", dom)
	}
	if !strings.Contains(dom, `data-loaded="all"`) {
		i := strings.Index(dom, "<body")
		t.Errorf("not every image loaded: %.300s", dom[max(i, 0):])
	}
}
