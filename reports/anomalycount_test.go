package reports

import (
	"bytes"
	"strings"
	"testing"

	"github.com/lockharness/lockharness/checker"
)

// TestUncheckedLivenessIsNotNoStuckLock: a run whose liveness was not
// checked (stopped early) shows stuck-lock as not checked on its summary
// and its page; a checked one shows its count.
func TestUncheckedLivenessIsNotNoStuckLock(t *testing.T) {
	for _, tc := range []struct {
		liveness string
		stuck    int
		want     string
	}{
		{checker.LivenessNotChecked, 0, "stuck-lock not checked"},
		{checker.LivenessOK, 0, "stuck-lock 0"},
		{checker.LivenessStuck, 1, "stuck-lock 1"},
	} {
		res := Results{Anomalies: map[string]int{checker.StuckLock: tc.stuck}}
		res.Checker.Liveness = tc.liveness
		if got := checker.StuckLock + " " + AnomalyCount(res, checker.StuckLock); got != tc.want {
			t.Errorf("liveness %s: %q, want %q", tc.liveness, got, tc.want)
		}
		var b bytes.Buffer
		Summary(&b, "run", "spec", res, "dir")
		if !strings.Contains(b.String(), tc.want) {
			t.Errorf("liveness %s: the summary lacks %q:\n%s", tc.liveness, tc.want, b.String())
		}
		page := newIndexPage(t.TempDir(), res, &analysis{}, nil)
		row := ""
		for _, kv := range page.Checks {
			if kv.Key == checker.StuckLock {
				row = kv.Key + " " + kv.Value
			}
		}
		if row != tc.want {
			t.Errorf("liveness %s: the page's row says %q, want %q", tc.liveness, row, tc.want)
		}
	}
}
