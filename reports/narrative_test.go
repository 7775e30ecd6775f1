package reports

import (
	"strings"
	"testing"
)

func TestStoryTellsTheStaleWrite(t *testing.T) {
	events, res := pausedHolder()
	lines := Story(events, res.Checker.Findings[1])
	var got []string
	for _, l := range lines {
		got = append(got, l.String())
	}
	want := []string{
		"0.100 s client 0 (process 0) asks for lock:orders (token a0, ttl 1000 ms)",
		"0.102 s client 0 (process 0) acquired lock:orders (fence 5, token a0), lease valid to 1.090 s",
		"0.103 s client 0 (process 0) writes to the resource under fence 5, token a0, having read 0",
		"0.104 s pause-client client 0 starts (frozen before its write)",
		"1.200 s client 1 (process 1) asks for lock:orders (token b1, ttl 1000 ms)",
		"1.202 s client 1 (process 1) acquired lock:orders (fence 6, token b1), lease valid to 2.190 s" +
			" while client 0 still believes it holds its lease (fence 5), which ran out at 1.090 s",
		"1.203 s client 1 (process 1) writes to the resource under fence 6, token b1, having read 0",
		"1.204 s client 1 (process 1) wrote: the resource accepted it (stored 1)",
		"2.000 s pause-client client 0 ends (resumed)",
		"2.001 s client 0 (process 0) wrote: the resource accepted it (stored 1), a stale write",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("story:\n%s\n\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, l := range lines {
		if l.Fault != (l.Who == "") {
			t.Errorf("line %q: fault %v, who %q", l, l.Fault, l.Who)
		}
	}
	if lines[3].Event != 3 || !lines[3].Fault {
		t.Errorf("the pause is event 3: %+v", lines[3])
	}
}

func TestStoryOfTheOtherEvents(t *testing.T) {
	events, res := pausedHolder()
	// Everything else the history holds, as one pretend finding, so that
	// every kind of line is told once.
	f := res.Checker.Findings[0]
	f.Events = []int{14, 15, 16, 17, 18, 20, 22, 24, 25, 26, 27, 28}
	var got []string
	for _, l := range Story(events, f) {
		got = append(got, l.String())
	}
	text := strings.Join(got, "\n")
	for _, want := range []string{
		"2.300 s client 0 (process 0) asks to release lock:orders (token a0)",
		"2.301 s client 0 (process 0) failed to release lock:orders (lock not held)",
		"2.404 s kill-node n1 starts (client 2 just acquired)",
		"2.900 s client 2 (process 2) write of lock:orders has an unknown outcome (EOF); its process is retired",
		"3.004 s client 1 (process 1) wrote: the resource rejected it (fence 4 is below the highest accepted fence 6)",
		"3.501 s client 1 (process 1) was refused lock:orders (lock busy)",
		"3.602 s client 3 (process 3) in the final check acquired lock:orders (token f0), lease valid to 4.590 s",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("story lacks %q:\n%s", want, text)
		}
	}
}
