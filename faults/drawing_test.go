package faults

import (
	"math"
	"testing"
)

// Every fault is drawn in a colour of its own, so that two faults of one
// run never share a band colour or a key entry a reader could confuse, and
// says in its key what a band of it is. Its colour is translucent enough
// that the leases drawn over it stay readable. That no fault's colour is
// an answer's, a lease's or an anomaly's is held where the reports' colours
// are known (TestEveryFaultIsDrawnAsItDeclares in scenario).
func TestEveryFaultIsDrawnInAColourOfItsOwn(t *testing.T) {
	// As far apart as the reports hold a fault's colour from an answer's:
	// closer, and a reader takes one for the other.
	const apart = 50
	for i, f := range Registry {
		c := f.Drawing.Colour
		if c.A < 60 || c.A > 100 {
			t.Errorf("%s: colour %v has opacity %d, want 60 to 100 (a band under the leases, not over them, nor invisible)", f.Name, c, c.A)
		}
		if f.Drawing.Legend == "" {
			t.Errorf("%s: no legend words", f.Name)
		}
		for _, g := range Registry[:i] {
			o := g.Drawing.Colour
			dr, dg, db := float64(c.R)-float64(o.R), float64(c.G)-float64(o.G), float64(c.B)-float64(o.B)
			if d := math.Sqrt(dr*dr + dg*dg + db*db); d < apart {
				t.Errorf("%s and %s are drawn in nearly one colour (%v and %v, %.0f apart, want %d)", f.Name, g.Name, c, o, d, apart)
			}
		}
	}
}
