package checker

import (
	"math/rand"
	"slices"
	"testing"
)

// TestSelectKthAgreesWithSorting: the quickselect behind the latency
// percentiles picks what sorting would, over runs of few distinct values
// (many ties) and of many.
func TestSelectKthAgreesWithSorting(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for trial := range 500 {
		n := 1 + rng.Intn(300)
		spread := []int64{1, 3, 1000}[trial%3]
		values := make([]int64, n)
		for i := range values {
			values[i] = rng.Int63n(spread)
		}
		sorted := slices.Sorted(slices.Values(values))
		k := rng.Intn(n)
		if got := selectKth(slices.Clone(values), k); got != sorted[k] {
			t.Fatalf("selectKth(%v, %d) = %d, sorted has %d", values, k, got, sorted[k])
		}
	}
}
