package history

import (
	"fmt"
	"math"
)

// Forever stands for "no bound" on the history's clock: a lease without
// expiry, the end of an operation whose outcome is unknown, a fault that
// never healed.
const Forever int64 = math.MaxInt64

// maxLeaseMs bounds lease lengths so that time arithmetic cannot overflow:
// a longer one is no expiry at all (a century).
const maxLeaseMs = 100 * 365 * 24 * 3600 * 1000

// LeaseNs is the lease length ttl_ms asks for, in nanoseconds; Forever for
// a lease without expiry (0, negative, or longer than a century).
func LeaseNs(ms int64) int64 {
	if ms <= 0 || ms > maxLeaseMs {
		return Forever
	}
	return ms * 1e6
}

// Plus adds d to t, keeping Forever forever.
func Plus(t, d int64) int64 {
	if t == Forever || d == Forever || (d > 0 && t > Forever-d) {
		return Forever
	}
	return t + d
}

// Secs formats a time on the history's clock the way every narrative and
// page does: "12.301 s", or "never" for Forever.
func Secs(t int64) string {
	if t == Forever {
		return "never"
	}
	return fmt.Sprintf("%.3f s", float64(t)/1e9)
}
