package checker

import (
	"slices"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/lockharness/lockharness/models"
)

// Porcupine is handed the segments no witness settles a batch at a time:
// every segment lands in one batch, in order, and no batch passes the limit
// unless it is one segment longer than it.
func TestHardSegmentsAreBatchedWholeAndInOrder(t *testing.T) {
	seg := func(n int) models.Segment { return models.Segment{Ops: make([]models.LockOp, n)} }
	lengths := []int{3, 9, 4, 4, 12, 1, 1, 1, 10, 2}
	// batchesOf feeds the segments to a search whose porcupine answers
	// answer, and returns the batches it was handed, by their segments'
	// lengths, and the result.
	batchesOf := func(limit int, answer porcupine.CheckResult, deadline time.Time) ([][]int, porcupine.CheckResult) {
		var shape [][]int
		s := &search{deadline: deadline, limit: limit, result: porcupine.Ok,
			witnessed: func(models.Segment) bool { return false },
			porcupine: func(batch []models.Segment, timeout time.Duration) porcupine.CheckResult {
				if timeout <= 0 {
					t.Errorf("porcupine handed a timeout of %v, which it reads as none", timeout)
				}
				var ls []int
				for _, b := range batch {
					ls = append(ls, b.Len())
				}
				shape = append(shape, ls)
				return answer
			}}
		for _, n := range lengths {
			if !s.add(seg(n)) {
				break
			}
		}
		return shape, s.done()
	}
	later := time.Now().Add(time.Hour)
	for _, limit := range []int{1, 5, 10, 100} {
		shape, result := batchesOf(limit, porcupine.Ok, later)
		var got []int
		for _, b := range shape {
			n := 0
			for _, l := range b {
				n += l
			}
			got = append(got, b...)
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
		if result != porcupine.Ok {
			t.Errorf("limit %d: every batch ok, and the search says %s", limit, result)
		}
	}
	shape, _ := batchesOf(10, porcupine.Ok, later)
	if want := [][]int{{3}, {9}, {4, 4}, {12}, {1, 1, 1}, {10}, {2}}; !slices.EqualFunc(shape, want, slices.Equal) {
		t.Errorf("limit 10: batches of %v, want %v", shape, want)
	}
	// A batch not linearizable ends the search; one unknown does not.
	if shape, result := batchesOf(10, porcupine.Illegal, later); len(shape) != 1 || result != porcupine.Illegal {
		t.Errorf("porcupine finding the first batch illegal: %d batches checked, result %s; want 1, illegal", len(shape), result)
	}
	if shape, result := batchesOf(10, porcupine.Unknown, later); len(shape) != 7 || result != porcupine.Unknown {
		t.Errorf("porcupine unknown on every batch: %d batches checked, result %s; want 7, unknown", len(shape), result)
	}
	// Past the deadline nothing is handed to porcupine.
	if shape, result := batchesOf(10, porcupine.Ok, time.Now().Add(-time.Second)); len(shape) != 0 || result != porcupine.Unknown {
		t.Errorf("past the deadline: %d batches checked, result %s; want 0, unknown", len(shape), result)
	}
	// Witnessed segments are not searched, and no segments is no batch.
	searched := 0
	s := &search{deadline: later, limit: 10, result: porcupine.Ok,
		witnessed: func(models.Segment) bool { return true },
		porcupine: func([]models.Segment, time.Duration) porcupine.CheckResult { searched++; return porcupine.Illegal }}
	for _, n := range lengths {
		s.add(seg(n))
	}
	if r := s.done(); r != porcupine.Ok || searched != 0 {
		t.Errorf("witnessed segments: %d batches searched, result %s; want none, ok", searched, r)
	}
	if r := newSearch(models.LeaseLockCheck(0), later).done(); r != porcupine.Ok {
		t.Errorf("a search of no segments: %s", r)
	}
}
