package checker

import (
	"testing"
	"time"

	"github.com/lockharness/lockharness/history"
)

// benchHistory is a correct run of about n lock operations by 10 clients
// over 10 keys, about 3% of them of unknown outcome, with fences.
func benchHistory(n int) []history.Event {
	return simulate(simConfig{
		seed: 1, keys: 10, clients: 10, ops: n,
		ttlMinMs: 50, ttlMaxMs: 150, fenced: true,
		lost: 0.03, rejected: 0.005, overrun: 0.1, drift: 0.0005,
	})
}

func benchmarkCheck(b *testing.B, n int) {
	events := benchHistory(n)
	opts := Options{Slack: simSlackMs * time.Millisecond, Timeout: time.Minute}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		r, err := Check(events, opts)
		if err != nil {
			b.Fatal(err)
		}
		if r.Valid != Valid {
			b.Fatalf("a correct run checks %s: %v", r, r.Notes)
		}
	}
	b.ReportMetric(float64(len(events)/2), "ops")
}

func BenchmarkCheck10k(b *testing.B)  { benchmarkCheck(b, 10_000) }
func BenchmarkCheck100k(b *testing.B) { benchmarkCheck(b, 100_000) }
func BenchmarkCheck1M(b *testing.B)   { benchmarkCheck(b, 1_000_000) }
