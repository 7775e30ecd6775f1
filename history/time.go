package history

import "math"

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
