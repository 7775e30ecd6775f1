package history

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"
)

// AppendLine writes what encoding/json writes, for every field a client's
// event has, strings that need escaping and nemesis events included.
func TestAppendLineIsMarshalLine(t *testing.T) {
	// A field added to Event must be written by AppendLine too: this
	// count is the fields it knows.
	if n := reflect.TypeFor[Event]().NumField(); n != 24 {
		t.Fatalf("Event has %d fields, AppendLine writes 24: write the new one (or send its events through encoding/json) and count it here", n)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	strs := []string{"", "ok", "lock:orders", "tok-1-2", "a \"quoted\" <b>&", "tab\there", "é", "\u2028", "\xff"}
	pick := func() string { return strs[rng.IntN(len(strs))] }
	num := func() int64 { return []int64{0, 1, -7, 1 << 40}[rng.IntN(4)] }
	for i := range 5000 {
		e := Event{Index: i, Time: num(), Type: pick(), Process: Process(num()), Client: int(num()), F: pick(), Key: pick(),
			Token: pick(), Fence: num(), TTLMs: num(), ValidMs: num(), Error: pick(), Reason: pick(),
			Final: rng.IntN(2) == 0, Background: rng.IntN(2) == 0, FenceChecked: rng.IntN(2) == 0, UnseenRenewals: rng.IntN(2) == 0}
		if rng.IntN(2) == 0 {
			e.Value = Int64(num())
		}
		switch rng.IntN(8) {
		case 0:
			e.Facts = &Facts{}
		case 1:
			e.Detail, e.Phase = pick(), "start"
		}
		want, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		got, err := e.AppendLine([]byte("prefix"))
		if err != nil || !bytes.Equal(got, append([]byte("prefix"), want...)) {
			t.Fatalf("event %+v:\n got %s (%v)\nwant prefix%s", e, got, err, want)
		}
	}
}

func BenchmarkAppendLine(b *testing.B) {
	e := Event{Index: 123456, Time: 9876543210, Type: OK, Process: 3, Client: 2, F: Acquire, Key: "lock:orders",
		Token: "c2-1234", TTLMs: 2000, ValidMs: 1990}
	var buf []byte
	for b.Loop() {
		buf, _ = e.AppendLine(buf[:0])
	}
}

func BenchmarkMarshalLine(b *testing.B) {
	e := Event{Index: 123456, Time: 9876543210, Type: OK, Process: 3, Client: 2, F: Acquire, Key: "lock:orders",
		Token: "c2-1234", TTLMs: 2000, ValidMs: 1990}
	for b.Loop() {
		e.MarshalLine()
	}
}
