package checker

import (
	"fmt"

	"github.com/lockharness/lockharness/history"
)

// plus adds d to t on the history's clock, keeping history.Forever
// forever: the lease arithmetic of the audits.
func plus(t, d int64) int64 {
	if t == history.Forever || d == history.Forever || (d > 0 && t > history.Forever-d) {
		return history.Forever
	}
	return t + d
}

// Secs formats a time on the history's clock the way every narrative and
// page does: "12.301 s", or "never" for history.Forever.
func Secs(t int64) string {
	if t == history.Forever {
		return "never"
	}
	return fmt.Sprintf("%.3f s", float64(t)/1e9)
}
