package history

import (
	"bytes"
	"strings"
	"testing"
)

// FuzzDecode: any input either decodes into events that survive a round
// trip unchanged, or fails with an error that names a line.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"index":0,"time":1,"type":"invoke","process":0,"f":"acquire","key":"k","token":"t","ttl_ms":1000}` + "\n" +
		`{"index":1,"time":2,"type":"ok","process":0,"f":"acquire","key":"k","token":"t","fence":3,"valid_ms":990}` + "\n"))
	f.Add([]byte(`{"index":2,"time":5,"type":"info","process":"nemesis","f":"partition","phase":"start","target":"client 1"}`))
	f.Add([]byte(`{"index":0,"time":1,"type":"ok","process":2,"client":1,"f":"write","value":0}` + "\n\n"))
	f.Add([]byte(`{"index":0,"ti`))
	f.Add([]byte("\xff\xfe"))
	f.Fuzz(func(t *testing.T, data []byte) {
		events, err := Decode(bytes.NewReader(data))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "line ") && !strings.HasPrefix(err.Error(), "after line ") {
				t.Fatalf("error %q does not name a line", err)
			}
			return
		}
		var buf bytes.Buffer
		if err := Encode(&buf, events); err != nil {
			t.Fatal(err)
		}
		again, err := Decode(&buf)
		if err != nil {
			t.Fatalf("re-decoding what Encode wrote: %v\n%s", err, buf.String())
		}
		if len(again) != len(events) {
			t.Fatalf("round trip changed the count: %d -> %d", len(events), len(again))
		}
		for i := range events {
			a, _ := events[i].MarshalLine()
			b, _ := again[i].MarshalLine()
			if !bytes.Equal(a, b) {
				t.Fatalf("event %d changed in the round trip:\n%s\n%s", i, a, b)
			}
		}
	})
}
