package checker

import (
	"strings"
	"testing"

	"github.com/lockharness/lockharness/models"
)

// The model's descriptions for linear.html tell times as the narratives
// do: models sits below the checker and formats them itself.
func TestModelsTellTimesAsTheNarratives(t *testing.T) {
	for _, at := range []int64{0, 1_500_000_000, 12_301_456_789} {
		st := models.Lease{Held: true, Holder: "a", From: at, Until: at + 1e9}
		for _, want := range []string{"may expire from " + Secs(at), "certainly over by " + Secs(at+1e9)} {
			if s := st.String(); !strings.Contains(s, want) {
				t.Errorf("%q lacks %q", s, want)
			}
		}
	}
}
