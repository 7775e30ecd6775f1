package reports

import (
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strings"
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
	if want := []string{"client 0", "client 1", "client 2", "final check (client 3)"}; !reflect.DeepEqual(labels, want) {
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
	for i := range bands {
		if bands[i].Facts == nil {
			t.Errorf("band %d has no facts", i)
		}
		bands[i].Facts, bands[i].Ended = nil, nil
	}
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

// timeline.html draws what timeline.png draws: a row per anomaly kind, the
// stale write's mark, the final check's lane named as what it is, every
// fault in a colour of its own that no answer has, and a key that holds
// the PNG legend's entries for what the timeline shows.
func TestTimelineHTMLDrawsWhatThePNGDraws(t *testing.T) {
	events, res := pausedHolder()
	a := analyse(events)
	tl := TimelineData(events, res)
	var b strings.Builder
	if err := WriteTimelineHTML(&b, "x", a, tl, res); err != nil {
		t.Fatal(err)
	}
	data := timelinePageData(t, b.String())
	if got := strings.Join(data.AnomalyRows, ","); got != "double-grant,stale-write" {
		t.Errorf("anomaly rows %q, want one per kind", got)
	}
	stale := 0
	for _, w := range data.Writes {
		if w.Status == WriteStale {
			stale++
		}
	}
	if stale != 1 {
		t.Errorf("%d stale-write marks, want 1: %+v", stale, data.Writes)
	}
	lanes := map[string]bool{}
	for _, l := range data.Lanes {
		lanes[l.Label] = l.Final
	}
	if !lanes["final check (client 3)"] {
		t.Errorf("lanes %v: the final check's lane is not named for what it is", lanes)
	}
	// Not only another string: a colour a reader tells apart.
	tl2 := TimelineData(events, res)
	for f, c := range tl2.faultColors() {
		for oc, ac := range outcomeColor {
			dr, dg, db := float64(c.R)-float64(ac.R), float64(c.G)-float64(ac.G), float64(c.B)-float64(ac.B)
			if d := math.Sqrt(dr*dr + dg*dg + db*db); d < 50 { // the orange the palette began with was 1 from info's
				t.Errorf("fault %s is drawn in nearly the colour of a %s answer (%v against %v, %.0f apart)", f, oc, c, ac, d)
			}
		}
	}
	var keys []string
	for _, k := range data.Legend {
		keys = append(keys, k.Label)
	}
	legend := strings.Join(keys, "; ")
	for _, want := range []string{"believed past its validity", "final check's lease", "stale write", "write rejected (fence)", "anomaly (#n as on the page)", "fault: pause-client", "fault: kill-node", "operation: info (timeout, unknown)"} {
		if !strings.Contains(legend, want) {
			t.Errorf("the key lacks %q: %s", want, legend)
		}
	}
}

// timelinePageData is the data timeline.html draws from.
func timelinePageData(t *testing.T, page string) timelinePage {
	t.Helper()
	start := strings.Index(page, `<script id="data" type="application/json">`) + len(`<script id="data" type="application/json">`)
	end := strings.Index(page[start:], "</script>")
	var data timelinePage
	if err := json.Unmarshal([]byte(page[start:start+end]), &data); err != nil {
		t.Fatal(err)
	}
	return data
}

// The data is encoded into the page as it is written, and what a client
// or a finding says cannot end its script element: an error that reads
// like the end of one arrives whole, and the page has one element of data,
// whatever its title says.
func TestTimelinePageDataCannotCloseItsScript(t *testing.T) {
	events, res := pausedHolder()
	const says = "</script><!-- <b>&"
	events[5].Error = says
	res.Checker.Findings[0].Narrative = says
	var b strings.Builder
	// A title that holds the mark of the data's place does not move it.
	if err := WriteTimelineHTML(&b, "run "+dataMark, analyse(events), TimelineData(events, res), res); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	if n := strings.Count(page, says); n != 0 {
		t.Errorf("the page carries %q as it is, %d times", says, n)
	}
	data := timelinePageData(t, page)
	if !slices.ContainsFunc(data.Ops, func(o htmlOp) bool { return o.Error == says }) {
		t.Errorf("no operation's error reads %q after the round trip", says)
	}
	if !slices.ContainsFunc(data.Anomalies, func(a htmlAnomaly) bool { return a.Narrative == says }) {
		t.Errorf("no anomaly's narrative reads %q after the round trip", says)
	}
	if !strings.HasSuffix(strings.TrimSpace(page), "</html>") {
		t.Errorf("the page does not end as its template does: %q", page[max(0, len(page)-80):])
	}
}
