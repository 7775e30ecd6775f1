package reports

import (
	"reflect"
	"testing"
	"time"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/history"
)

func TestTimelineLanesLeasesAndWrites(t *testing.T) {
	events, res := pausedHolder()
	tl := TimelineData(events, res)

	var labels []string
	for _, l := range tl.Lanes {
		labels = append(labels, l.Label)
	}
	if want := []string{"client 0", "client 1", "client 2", "client 3 (final)"}; !reflect.DeepEqual(labels, want) {
		t.Errorf("lanes %q, want %q", labels, want)
	}
	if tl.End != sec(3.602) {
		t.Errorf("end %v", tl.End)
	}

	type lease struct {
		client     int
		token      string
		fence      int64
		start, end time.Duration
		by         string
	}
	want := []lease{
		{0, "a0", 5, sec(0.102), sec(2.300), EndRelease},
		{1, "b1", 6, sec(1.202), sec(1.500), EndRelease},
		{2, "c0", 7, sec(2.402), sec(2.900), EndReplaced},
		{1, "b2", 4, sec(3.002), sec(3.500), EndNextCycle},
		{3, "f0", 0, sec(3.602), sec(3.602), EndHistoryEnd},
	}
	if len(tl.Leases) != len(want) {
		t.Fatalf("%d leases, want %d: %+v", len(tl.Leases), len(want), tl.Leases)
	}
	for i, w := range want {
		l := tl.Leases[i]
		got := lease{l.Client, l.Token, l.Fence, l.Start, l.End, l.EndBy}
		if got != w {
			t.Errorf("lease %d = %+v, want %+v", i, got, w)
		}
	}
	// Client 0 believed in its lease long after its own validity ran out.
	if a0 := tl.Leases[0]; a0.ValidUntil != sec(0.100)+990*time.Millisecond {
		t.Errorf("a0 valid until %v", a0.ValidUntil)
	}
	if got := tl.Leases[0].Anomalies; !reflect.DeepEqual(got, []string{checker.DoubleGrant, checker.StaleWrite}) {
		t.Errorf("a0 is in anomalies %q", got)
	}
	if got := tl.Leases[2].Anomalies; got != nil {
		t.Errorf("c0 is in no anomaly, got %q", got)
	}

	var writes []string
	for _, w := range tl.Writes {
		writes = append(writes, w.Status)
	}
	if want := []string{WriteStale, WriteAccepted, WriteUnknown, WriteRejected}; !reflect.DeepEqual(writes, want) {
		t.Errorf("writes %q, want %q (in invoke order)", writes, want)
	}
	if w := tl.Writes[0]; w.Client != 0 || w.At != sec(2.001) || w.Fence != 5 || w.Event != 13 {
		t.Errorf("stale write %+v", w)
	}
}

func TestTimelineBandPerFaultWindow(t *testing.T) {
	events, res := pausedHolder()
	bands := TimelineData(events, res).Bands
	want := []Band{
		{Fault: "pause-client", Target: "client 0", Detail: "frozen before its write; resumed",
			Start: sec(0.104), End: sec(2.000), StartEvent: 3, EndEvent: 12},
		{Fault: "kill-node", Target: "n1", Detail: "client 2 just acquired",
			Start: sec(2.404), End: sec(3.602), Open: true, StartEvent: 19, EndEvent: -1},
	}
	if !reflect.DeepEqual(bands, want) {
		t.Errorf("bands\n got %+v\nwant %+v", bands, want)
	}
	if bands[0].Label() != "pause-client client 0" {
		t.Errorf("label %q", bands[0].Label())
	}
}

func TestTimelineRedSpans(t *testing.T) {
	events, res := pausedHolder()
	spans := TimelineData(events, res).RedSpans
	type span struct {
		anomaly, label string
		client         int
		start, end     time.Duration
	}
	var got []span
	for _, s := range spans {
		got = append(got, span{s.Anomaly, s.Label, s.Client, s.Start, s.End})
	}
	want := []span{
		// The finding's whole story in its anomaly's row …
		{checker.DoubleGrant, "#1", -1, sec(0.100), sec(1.500)},
		// … and on each lane the part both clients believed they held it.
		{checker.DoubleGrant, "#1", 0, sec(1.202), sec(1.500)},
		{checker.DoubleGrant, "#1", 1, sec(1.202), sec(1.500)},
		{checker.StaleWrite, "#2", -1, sec(0.100), sec(2.001)},
		// From the newer holder's grant to the stale write landing.
		{checker.StaleWrite, "#2", 0, sec(1.202), sec(2.001)},
		{checker.StaleWrite, "#2", 1, sec(1.202), sec(2.001)},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("red spans\n got %+v\nwant %+v", got, want)
	}
}

// A finding that names events the history does not have (a results.json
// from another history) draws nothing rather than failing.
func TestTimelineToleratesForeignFindings(t *testing.T) {
	events, res := pausedHolder()
	res.Checker.Findings = []checker.Finding{{Anomaly: checker.LostUpdate, Events: []int{900, 901}}}
	if spans := TimelineData(events, res).RedSpans; len(spans) != 0 {
		t.Errorf("spans %+v", spans)
	}
	if tl := TimelineData(nil, Results{}); len(tl.Lanes) != 0 || tl.End != 0 {
		t.Errorf("empty history: %+v", tl)
	}
}

func TestLatencyAndRateData(t *testing.T) {
	events, _ := pausedHolder()
	l := LatencyData(events)
	if len(l.Points) != 13 {
		t.Fatalf("%d latency points, want 13 finished operations", len(l.Points))
	}
	var paused *LatencyPoint
	for i, p := range l.Points {
		if p.Kind == history.Write && p.Client == 0 {
			paused = &l.Points[i]
		}
	}
	if paused == nil || paused.Latency != sec(2.001)-sec(0.103) || paused.Outcome != history.OK {
		t.Errorf("the paused write: %+v", paused)
	}
	if len(l.Bands) != 2 {
		t.Errorf("latency bands %d", len(l.Bands))
	}

	r := RateData(events)
	if r.Bin != 100*time.Millisecond || len(r.Series) == 0 || len(r.Series[0].Counts) != 37 {
		t.Errorf("bin %v, series %+v", r.Bin, r.Series)
	}
	total := map[string]int{}
	okAt := -1
	for j, sr := range r.Series {
		for _, n := range sr.Counts {
			total[sr.Name()] += n
		}
		if sr.Kind == history.Write && sr.Answer == AnswerOK {
			okAt = j
		}
	}
	// 8 ok, 4 fail (the two refused acquires busy), 1 info.
	want := map[string]int{"acquire ok": 5, "acquire busy": 2, "release ok": 1, "release fail": 1,
		"write ok": 2, "write fail": 1, "write info": 1}
	if !reflect.DeepEqual(total, want) {
		t.Errorf("completions %v, want %v", total, want)
	}
	// The paused write's 2.001 s lands in bin 20, alone: ten per second
	// over a 100 ms bin.
	if okAt < 0 {
		t.Fatal("no write ok series")
	}
	if got := r.PerSecond(okAt, 20); got != 10 {
		t.Errorf("rate in bin 20 = %v", got)
	}
}

func TestRateBinsGrowWithTheRun(t *testing.T) {
	for _, c := range []struct {
		end time.Duration
		bin time.Duration
	}{{sec(5), 100 * time.Millisecond}, {sec(15), 250 * time.Millisecond}, {sec(60), time.Second}, {sec(3600), time.Minute}} {
		events := []history.Event{{Index: 0, Time: int64(c.end), Type: history.Invoke, F: history.Acquire}}
		if got := RateData(events).Bin; got != c.bin {
			t.Errorf("a %v run: bins of %v, want %v", c.end, got, c.bin)
		}
	}
}
