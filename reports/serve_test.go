package reports

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockharness/lockharness/checker"
)

// testStore holds three runs of two scenarios, latest pointing at the
// newest, and a symlink that leads out of the store.
func testStore(t *testing.T) string {
	t.Helper()
	store := t.TempDir()
	events, res := pausedHolder()
	writeRun(t, store, "single-cad-pause-client", "20261129T120001", events, res)
	clean := res
	clean.Valid, clean.Anomalies, clean.Checker.Findings = checker.Valid, map[string]int{}, nil
	writeRun(t, store, "single-fenced-pause-client", "20261129T120005", events, clean)
	failed := res
	failed.Valid, failed.Error = checker.Failed, &RunError{Stage: StageStart, Message: "redis-server did not start"}
	newest := writeRun(t, store, "single-cad-pause-client", "20261129T120005-2", events, failed)
	if err := Render(newest); err != nil {
		t.Fatal(err)
	}
	// A directory without results.json is not a run.
	os.MkdirAll(filepath.Join(store, "single-cad-pause-client", "20261129T130000"), 0o755)
	if err := os.Symlink(filepath.Join("single-cad-pause-client", "20261129T120005-2"), filepath.Join(store, "latest")); err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "secret"), []byte("not yours"), 0o644)
	if err := os.Symlink(outside, filepath.Join(store, "escape")); err != nil {
		t.Fatal(err)
	}
	return store
}

func newServer(t *testing.T, store string) http.Handler {
	t.Helper()
	h, err := NewServer(store)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestServeListsRunsNewestFirst(t *testing.T) {
	srv := httptest.NewServer(newServer(t, testStore(t)))
	defer srv.Close()

	code, body := get(t, srv.URL+"/")
	if code != http.StatusOK {
		t.Fatalf("home: %d", code)
	}
	order := []string{"2026-11-29 12:00:05 #2", "2026-11-29 12:00:05<", "2026-11-29 12:00:01"}
	last := -1
	for _, s := range order {
		i := strings.Index(body, s)
		if i < 0 || i < last {
			t.Errorf("home page: %q missing or out of order", s)
		}
		last = i
	}
	for _, want := range []string{
		`<span class="tag error">error</span>`, `<span class="tag valid">valid</span>`, `<span class="tag invalid">invalid</span>`,
		`href="/single-cad-pause-client/20261129T120005-2/index.html"`,
		`href="/single-cad-pause-client/20261129T120001/history.jsonl"`,
		`(latest)`, "3 runs",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("home page lacks %q", want)
		}
	}
	if strings.Contains(body, "130000") {
		t.Errorf("a directory without results.json is listed")
	}

	_, body = get(t, srv.URL+"/?name=fenced")
	if !strings.Contains(body, "single-fenced-pause-client/20261129T120005/") || strings.Contains(body, "single-cad-pause-client/2026") {
		t.Errorf("filter by name:\n%s", body)
	}
	_, body = get(t, srv.URL+"/?name=nothing-like-it")
	if !strings.Contains(body, "No run’s scenario name contains") {
		t.Errorf("empty filter result:\n%s", body)
	}
}

func TestServeFilesOfRuns(t *testing.T) {
	srv := httptest.NewServer(newServer(t, testStore(t)))
	defer srv.Close()
	for path, want := range map[string]string{
		"/single-cad-pause-client/20261129T120005-2/index.html": "ERROR",
		"/latest/results.json": `"stage": "start",`,
		"/single-cad-pause-client/20261129T120001/nodes/n1/redis.log": "Ready to accept connections",
		"/single-cad-pause-client/20261129T120001/":                   `href="history.jsonl"`,
		"/single-cad-pause-client/20261129T120001/nodes/":             `href="n1/"`,
		"/single-fenced-pause-client/20261129T120005/history.jsonl":   `"f":"acquire"`,
		"/single-cad-pause-client/20261129T120005-2/timeline.png":     "\x89PNG",
	} {
		code, body := get(t, srv.URL+path)
		if code != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("GET %s: %d, want 200 with %q", path, code, want)
		}
	}
	code, _ := get(t, srv.URL+"/single-cad-pause-client/20261129T120001")
	if code != http.StatusMovedPermanently {
		t.Errorf("a directory without its slash: %d", code)
	}
	resp, err := http.Get(srv.URL + "/latest/history.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("history.jsonl served as %q", ct)
	}
}

// Requests are written by hand: an HTTP client would clean the path first.
func TestServeRefusesPathsOutsideTheStore(t *testing.T) {
	srv := httptest.NewServer(newServer(t, testStore(t)))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	for _, c := range []struct {
		method, path string
		want         int
	}{
		{"GET", "/../../../etc/passwd", http.StatusBadRequest},
		{"GET", "/latest/../../../etc/passwd", http.StatusBadRequest},
		{"GET", "/%2e%2e/%2e%2e/etc/passwd", http.StatusBadRequest},
		{"GET", "/..%2f..%2fetc/passwd", http.StatusBadRequest},
		{"GET", "/escape/secret", http.StatusForbidden},
		{"GET", "/no-such-run/results.json", http.StatusNotFound},
		{"POST", "/", http.StatusMethodNotAllowed},
	} {
		if got := rawStatus(t, addr, c.method, c.path); got != c.want {
			t.Errorf("%s %s: %d, want %d", c.method, c.path, got, c.want)
		}
	}
}

func rawStatus(t *testing.T, addr, method, path string) int {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "%s %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\nContent-Length: 0\r\n\r\n", method, path, addr)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
