package checker

import (
	"slices"
	"testing"

	"github.com/lockharness/lockharness/models"
)

// Porcupine is handed the segments no witness settles a batch at a time:
// every segment lands in one batch, in order, and no batch passes the limit
// unless it is one segment longer than it.
func TestHardSegmentsAreBatchedWholeAndInOrder(t *testing.T) {
	seg := func(n int) models.Segment { return models.Segment{Ops: make([]models.LockOp, n)} }
	lengths := []int{3, 9, 4, 4, 12, 1, 1, 1, 10, 2}
	var segs []models.Segment
	for _, n := range lengths {
		segs = append(segs, seg(n))
	}
	for _, limit := range []int{1, 5, 10, 100} {
		var got []int
		for _, b := range batches(segs, limit) {
			n := 0
			for _, s := range b {
				n += s.Len()
				got = append(got, s.Len())
			}
			if n > limit && len(b) > 1 {
				t.Errorf("limit %d: a batch of %d segments holds %d operations", limit, len(b), n)
			}
			if len(b) == 0 {
				t.Errorf("limit %d: an empty batch", limit)
			}
		}
		if !slices.Equal(got, lengths) {
			t.Errorf("limit %d: the batches hold segments of %v, want %v", limit, got, lengths)
		}
	}
	var shape [][]int
	for _, b := range batches(segs, 10) {
		var ls []int
		for _, s := range b {
			ls = append(ls, s.Len())
		}
		shape = append(shape, ls)
	}
	if want := [][]int{{3}, {9}, {4, 4}, {12}, {1, 1, 1}, {10}, {2}}; !slices.EqualFunc(shape, want, slices.Equal) {
		t.Errorf("limit 10: batches of %v, want %v", shape, want)
	}
	if b := batches(nil, 10); len(b) != 0 {
		t.Errorf("no segments gave %d batches", len(b))
	}
}
