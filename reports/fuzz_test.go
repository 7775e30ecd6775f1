package reports

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/history"
)

// FuzzDecodeCheckReport runs anything through the whole offline path that
// `harness check` and `harness report` take: decode, check, results.json,
// linear.html, the plots and index.html. Input is either refused with an
// error that names a line, or checked and drawn; nothing panics, and
// what Decode accepts, Check accepts too. `make test` runs it for a few
// seconds; `make fuzz` for longer.
func FuzzDecodeCheckReport(f *testing.F) {
	events, _ := pausedHolder()
	var buf bytes.Buffer
	if err := history.Encode(&buf, events); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	lines := strings.SplitAfter(buf.String(), "\n")
	f.Add([]byte(strings.Join(lines[:len(lines)/2], "")))
	f.Add([]byte(`{"index":0,"time":1,"type":"invoke","process":0,"f":"acquire","key":"k","token":"t","ttl_ms":1000}
{"index":1,"time":2,"type":"ok","process":0,"f":"acquire","key":"k","token":"t","fence":3,"valid_ms":990}
{"index":2,"time":5,"type":"info","process":"nemesis","f":"partition","phase":"start","target":"client 1"}
{"index":3,"time":9,"type":"invoke","process":1,"f":"acquire","key":"k","token":"u","ttl_ms":1}
{"index":4,"time":9,"type":"fail","process":1,"f":"acquire","reason":"busy"}
`))
	f.Add([]byte(`{"index":0,"time":1,"type":"invoke","process":0,"f":"write","key":"k","token":"t","value":0}` + "\n"))
	f.Add([]byte{})
	if testdata, err := filepath.Glob(filepath.Join("..", "testdata", "runs", "*", "history.jsonl.gz")); err == nil {
		for _, p := range testdata {
			if b, err := gunzipped(p); err == nil {
				// The first events of each recorded run: long enough to
				// hold its shape, short enough to mutate quickly.
				l := strings.SplitAfterN(string(b), "\n", 61)
				f.Add([]byte(strings.Join(l[:min(len(l), 60)], "")))
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		events, err := history.Decode(bytes.NewReader(data))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "line ") && !strings.HasPrefix(err.Error(), "after line ") {
				t.Fatalf("error %q does not name a line", err)
			}
			return
		}
		res, err := Conclude(events, Meta{Seed: 1, Command: "fuzz"}, checker.Options{Slack: DefaultSlack, Timeout: time.Second})
		if err != nil {
			t.Fatalf("Check refused what Decode accepted: %v", err)
		}
		if len(events) == 0 && res.Valid != checker.Unknown {
			t.Fatalf("an empty history is %s", res.Valid)
		}
		dir := t.TempDir()
		if err := history.Encode(mustCreate(t, filepath.Join(dir, "history.jsonl")), events); err != nil {
			t.Fatal(err)
		}
		if err := WriteRun(dir, events, res, true); err != nil {
			t.Fatalf("report: %v", err)
		}
	})
}

func mustCreate(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func gunzipped(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, err
	}
	return io.ReadAll(zr)
}
