package reports

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/lockharness/lockharness/checker"
)

func TestRenderWritesPlotsAndPage(t *testing.T) {
	events, res := pausedHolder()
	dir := writeRun(t, t.TempDir(), "single-cad-pause-client", "20261129T120001", events, res)
	before, _ := os.ReadFile(filepath.Join(dir, "results.json"))
	if err := Render(dir); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"timeline.png", "latency.png", "rate.png"} {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := png.DecodeConfig(f)
		f.Close()
		if err != nil || cfg.Width < 800 || cfg.Height < 300 {
			t.Errorf("%s: %dx%d, %v", name, cfg.Width, cfg.Height, err)
		}
	}
	after, _ := os.ReadFile(filepath.Join(dir, "results.json"))
	if !bytes.Equal(before, after) {
		t.Errorf("Render changed results.json")
	}

	b, err := os.ReadFile(filepath.Join(dir, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	for _, want := range []string{
		`<div id="verdict" class="banner invalid">`,
		"INVALID",
		"mutual exclusion broke: double-grant ×1, stale-write ×1",
		"harness run --lock cad --nemesis pause-client --ttl 1s --time-limit 15s --seed 1",
		"2026-11-29 12:00:01",
		// the fault schedule
		"<td>pause-client</td><td>client 0</td><td class=\"num\">0.104 s</td><td class=\"num\">2.000 s</td>",
		"never healed",
		// the checker's narrative and the story behind it
		"2.001 s the resource accepted the first holder&#39;s write (stored 1) after the newer holder&#39;s",
		"while client 0 still believes it holds its lease (fence 5), which ran out at 1.090 s",
		"pause-client client 0 starts (frozen before its write)",
		`id="anomaly-2"`,
		`<img src="timeline.png"`, `<img src="latency.png"`, `<img src="rate.png"`,
		`href="history.jsonl"`, `href="results.json"`, `href="harness.log"`, `href="nodes/n1/redis.log"`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("index.html lacks %q", want)
		}
	}
	if strings.Contains(page, "linear.html") || strings.Contains(page, "redis.conf") {
		t.Errorf("index.html links a file it should not")
	}
	// Self-contained: nothing is fetched from elsewhere.
	if m := regexp.MustCompile(`(?i)(src|href)="(https?:)?//`).FindString(page); m != "" {
		t.Errorf("index.html refers outside the run directory: %s", m)
	}

	// With linear.html present, the page links it; rendering again is fine.
	if err := os.WriteFile(filepath.Join(dir, "linear.html"), []byte("<html></html>"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Render(dir); err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(filepath.Join(dir, "index.html"))
	if !strings.Contains(string(b), `href="linear.html"`) {
		t.Errorf("index.html does not link linear.html")
	}
	leftovers, _ := filepath.Glob(filepath.Join(dir, ".*"))
	if len(leftovers) > 0 {
		t.Errorf("temporary files left behind: %v", leftovers)
	}
}

func TestRenderValidAndBrokenRuns(t *testing.T) {
	events, res := pausedHolder()
	res.Valid, res.Anomalies, res.Checker.Findings = checker.Valid, map[string]int{}, nil
	store := t.TempDir()
	dir := writeRun(t, store, "clean", "20261129T120002", events, res)
	if err := Render(dir); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "index.html"))
	if !strings.Contains(string(b), `class="banner valid"`) || !strings.Contains(string(b), "fencing rejected 1 stale write") {
		t.Errorf("valid page:\n%s", b)
	}

	// A history cut short mid-line still renders what it has, says so,
	// and reports the error.
	hist := filepath.Join(dir, "history.jsonl")
	whole, _ := os.ReadFile(hist)
	os.WriteFile(hist, append(whole, []byte(`{"index":29,"ti`)...), 0o644)
	err := Render(dir)
	if err == nil || !strings.Contains(err.Error(), "line 30") {
		t.Errorf("Render of a torn history: %v", err)
	}
	b, _ = os.ReadFile(filepath.Join(dir, "index.html"))
	if !strings.Contains(string(b), "could not be read to the end") {
		t.Errorf("the page does not say the history was torn")
	}

	if err := Render(filepath.Join(store, "missing")); err == nil {
		t.Errorf("Render of a missing directory succeeded")
	}
}
