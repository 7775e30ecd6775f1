package reports

import (
	"bytes"
	"fmt"
	"image/png"
	"testing"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/history"
)

// The pixels are not asserted (the data that drives them is, in
// timeline_test.go); the images must decode and have a sensible size.
func TestPlotsDecodeAsPNG(t *testing.T) {
	events, res := pausedHolder()
	tl := TimelineData(events, res)
	draws := map[string]func(*bytes.Buffer) error{
		"timeline": func(b *bytes.Buffer) error { return WriteTimelinePNG(b, tl) },
		"latency":  func(b *bytes.Buffer) error { return WriteLatencyPNG(b, LatencyData(events)) },
		"rate":     func(b *bytes.Buffer) error { return WriteRatePNG(b, RateData(events)) },
	}
	for name, draw := range draws {
		var b bytes.Buffer
		if err := draw(&b); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		cfg, err := png.DecodeConfig(&b)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		// 14 inches wide at twice a screen's 96 dpi.
		if cfg.Width != 14*192 || cfg.Height < 600 || cfg.Height > 24*192 {
			t.Errorf("%s is %dx%d", name, cfg.Width, cfg.Height)
		}
		if name == "timeline" {
			w, h := TimelineSize(tl)
			if cfg.Width != w || cfg.Height != h {
				t.Errorf("timeline is %dx%d, TimelineSize says %dx%d", cfg.Width, cfg.Height, w, h)
			}
		}
	}
}

// One row per client, fault label row and anomaly kind, until the image
// reaches its cap; then rows get thinner instead.
func TestTimelineGrowsWithLanesUpToACap(t *testing.T) {
	events, res := pausedHolder()
	_, h := TimelineSize(TimelineData(events, res))
	// faults, double-grant, stale-write and four lanes: 1 + 0.6×7 inches.
	if want := (1 + 0.6*7) * 192; float64(h) < want-1 || float64(h) > want+1 {
		t.Errorf("height %d, want about %.0f", h, want)
	}
	big := longRun(200, 40)
	w, h := TimelineSize(TimelineData(big, Results{}))
	if w != 14*192 || h != 24*192 {
		t.Errorf("40 lanes: %dx%d, want the cap", w, h)
	}
}

// A long run with many clients still draws (and quickly enough to be part
// of every run).
func TestLongRunDraws(t *testing.T) {
	if testing.Short() {
		t.Skip("draws big images")
	}
	events := longRun(600, 12)
	res := Results{Checker: CheckerReport{Findings: []checker.Finding{
		{Anomaly: checker.DoubleGrant, Events: []int{100, 101, 300, 301}},
	}}}
	for _, draw := range []func(*bytes.Buffer) error{
		func(b *bytes.Buffer) error { return WriteTimelinePNG(b, TimelineData(events, res)) },
		func(b *bytes.Buffer) error { return WriteLatencyPNG(b, LatencyData(events)) },
		func(b *bytes.Buffer) error { return WriteRatePNG(b, RateData(events)) },
	} {
		var b bytes.Buffer
		if err := draw(&b); err != nil {
			t.Fatal(err)
		}
		if _, err := png.Decode(&b); err != nil {
			t.Fatal(err)
		}
	}
}

// longRun is a history of seconds s in which clients take turns holding
// the lock for 300 ms, with a pause fault every 20 s.
func longRun(seconds, clients int) []history.Event {
	var b builder
	for i := 0; float64(i)*0.4 < float64(seconds); i++ {
		t0 := float64(i) * 0.4
		c := i % clients
		p := history.Process(c)
		tok := fmt.Sprintf("t%d", i)
		if i%50 == 0 {
			b.at(t0, fault("pause-client", history.Start, fmt.Sprintf("client %d", c), ""))
		}
		b.at(t0, acq(history.Invoke, p, c, tok))
		b.at(t0+0.001, with(acq(history.OK, p, c, tok), func(e *history.Event) { e.Fence = int64(i + 1) }))
		b.at(t0+0.002, op(history.Invoke, history.Write, p, c, tok))
		b.at(t0+0.003, op(history.OK, history.Write, p, c, tok))
		b.at(t0+0.3, op(history.Invoke, history.Release, p, c, tok))
		b.at(t0+0.301, op(history.OK, history.Release, p, c, tok))
		if i%50 == 10 {
			b.at(t0+0.35, fault("pause-client", history.End, fmt.Sprintf("client %d", (i-10)%clients), ""))
		}
	}
	return b.events
}

func TestSecondTicksStayRound(t *testing.T) {
	for _, c := range []struct {
		hi   float64
		want string
	}{{8.8, "0 1 2 3 4 5 6 7 8"}, {0.5, "0.00 0.05 0.10 0.15 0.20 0.25 0.30 0.35 0.40 0.45 0.50"}, {600, "0 60 120 180 240 300 360 420 480 540 600"}} {
		var labels []string
		for _, tk := range (secondTicks{}).Ticks(0, c.hi) {
			if tk.Label != "" {
				labels = append(labels, tk.Label)
			}
		}
		if got := fmt.Sprint(labels); got != "["+c.want+"]" {
			t.Errorf("ticks to %v: %s, want [%s]", c.hi, got, c.want)
		}
	}
}
