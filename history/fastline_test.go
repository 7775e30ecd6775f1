package history

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestFastLinesDecodeAsEncodingJSON decodes every line of every recorded
// catalog run, and some written by hand, with the fast parser and with
// encoding/json, and wants the same event, or the fast parser to give the
// line to encoding/json.
func TestFastLinesDecodeAsEncodingJSON(t *testing.T) {
	lines := [][]byte{
		[]byte(`{"index":0,"time":5,"type":"invoke","process":"nemesis","f":"partition","phase":"start","target":"n1","detail":"cut \u003cn2\u003e \"x\""}`),
		[]byte(`{"index":0,"time":5,"type":"info","process":"nemesis","f":"partition","phase":"start","target":"clients 0,2","options":"clients=0/2:for=2.5s"}`),
		[]byte(`{"index":1,"time":6,"type":"ok","process":3,"client":2,"f":"write","key":"k","token":"t","value":null}`),
		[]byte(`{ "index" : 2 , "time":7,"type":"fail","process":3,"f":"acquire","value":-4,"final":true,"unseen_renewals":false }`),
		[]byte(`{"index":3,"time":1.5}`),
		[]byte(`{"Index":3,"time":1}`),
		[]byte(`{"index":3,"time":1,"extra":{"a":1}}`),
		[]byte(`{"index":3,"process":-1}`),
		[]byte(`{"index":3,"error":"line\nbreak é"}`),
		[]byte(`{}`),
		[]byte(`{"index":99999999999999999999}`),
		[]byte(`{"index":007,"value":01}`),
		[]byte(`{"index":0,"value":0,"time":-0}`),
		[]byte("{\"index\":1,\"token\":\"a\xffb\"}"),
		[]byte(`{"index":1,"token":"é ü"}`),
	}
	dirs, _ := filepath.Glob(filepath.Join("..", "testdata", "runs", "*", "history.jsonl.gz"))
	for _, path := range dirs {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		zr, err := gzip.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		buf.ReadFrom(zr)
		f.Close()
		lines = append(lines, bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n"))...)
	}
	p := newLineParser()
	fast := 0
	for _, line := range lines {
		var want Event
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		wantErr := dec.Decode(&want)
		var got Event
		if !p.parse(line, &got) {
			continue
		}
		fast++
		if wantErr != nil {
			t.Errorf("%s: the fast parser accepted what encoding/json refuses (%v)", line, wantErr)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n fast %+v\n json %+v", line, got, want)
		}
	}
	if fast < len(lines)*9/10 {
		t.Errorf("the fast parser took only %d of %d lines", fast, len(lines))
	}
}
