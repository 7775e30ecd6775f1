package proc

import "testing"

// A port picked for a server to bind later must not come from the range
// the proxies' listens on port 0 draw from, and is not handed out twice.
func TestFreePortIsBelowTheEphemeralRange(t *testing.T) {
	lo := ephemeralLow()
	seen := map[int]bool{}
	for range 50 {
		p, err := FreePort()
		if err != nil {
			t.Fatal(err)
		}
		if p >= lo || p < 1024 {
			t.Fatalf("port %d outside 1024-%d", p, lo-1)
		}
		if seen[p] {
			t.Fatalf("port %d handed out twice", p)
		}
		seen[p] = true
	}
}
