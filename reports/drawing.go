package reports

import (
	"image/color"
	"maps"
	"math"
	"slices"

	"github.com/lockharness/lockharness/history"
)

// FaultDrawing finds the drawing a fault declares (history.Drawing: its
// colour and legend words) by the fault's name. The runner package, which
// knows the faults, sets it: the reports do not, so that a history is
// drawn without them. Nil, or a name no fault has (a history recorded
// elsewhere, what the harness observed), and the name takes a colour of
// faultPalette and its key says only the name.
var FaultDrawing func(name string) (history.Drawing, bool)

// declared is the drawing the fault named declares, if any.
func declared(name string) (history.Drawing, bool) {
	if FaultDrawing == nil {
		return history.Drawing{}, false
	}
	return FaultDrawing(name)
}

// apart is the least distance (in RGB) at which a reader tells two
// colours of the timeline apart: the palette's orange that was 1 from an
// info answer's was read as one.
const apart = 50

// colourDistance is how far apart two colours are in RGB, opacity aside:
// the page draws fills opaque where the image draws them translucent.
func colourDistance(a, b color.NRGBA) float64 {
	dr, dg, db := float64(a.R)-float64(b.R), float64(a.G)-float64(b.G), float64(a.B)-float64(b.B)
	return math.Sqrt(dr*dr + dg*dg + db*db)
}

// ColourClash names what the timeline draws in nearly colour c (an
// answer, an anomaly, a lease, a write), the nearest if several, or is ""
// when c is apart from all of them, as a fault's declared colour must be.
func ColourClash(c color.NRGBA) string {
	taken := map[string]color.Color{"anomaly": red, "lease": leaseFill, "final check's lease": finalFill}
	for oc, col := range outcomeColor {
		taken["operation: "+answerLegend[oc]] = col
	}
	for st, sty := range writeStyle {
		taken[writeLegend[st]] = sty.Color
	}
	for oc, col := range attemptFill {
		taken[attemptLegend[oc]] = col
	}
	clash, nearest := "", float64(apart)
	for _, what := range slices.Sorted(maps.Keys(taken)) {
		if d := colourDistance(c, color.NRGBAModel.Convert(taken[what]).(color.NRGBA)); d < nearest {
			clash, nearest = what, d
		}
	}
	return clash
}

// faultColors gives each fault of bands its colour: the one it declares,
// or else, in order of first appearance, the next colour of faultPalette
// apart from every colour already given, so that a name no fault has
// never looks like a fault beside it. Without declarations that is the
// palette in order, as before faults declared colours.
func faultColors(bands []Band) map[string]color.NRGBA {
	colors := map[string]color.NRGBA{}
	for _, b := range bands {
		if d, ok := declared(b.Fault); ok && d.Colour != (color.NRGBA{}) {
			colors[b.Fault] = d.Colour
		}
	}
	free := func(c color.NRGBA) bool {
		for _, used := range colors {
			if colourDistance(c, used) < apart {
				return false
			}
		}
		return true
	}
	next := 0
	for _, b := range bands {
		if _, ok := colors[b.Fault]; ok {
			continue
		}
		c := faultPalette[next%len(faultPalette)]
		for i := range faultPalette {
			if p := faultPalette[(next+i)%len(faultPalette)]; free(p) {
				c, next = p, next+i
				break
			}
		}
		colors[b.Fault] = c
		next++
	}
	return colors
}

// FaultKey is a fault's entry in the key of timeline.png and timeline.html.
type FaultKey struct {
	Fault string
	// Colour fills its windows; an observed instant's line and swatch are
	// a darker shade of it (observedColor).
	Colour color.NRGBA
	// Label is the entry's words: "fault: NAME (its legend words)", or
	// "seen: NAME" for what the harness observed.
	Label string
	// Legend are the words the fault declares for its entry, if any.
	Legend   string
	Observed bool
}

// FaultKeys are the key's entries of the timeline's faults, in the order
// they first appear, in the colours the whole run's timeline gives them.
func (t Timeline) FaultKeys() []FaultKey { return faultKeys(t.Bands, t.faultColors()) }

func faultKeys(bands []Band, colors map[string]color.NRGBA) []FaultKey {
	var keys []FaultKey
	seen := map[string]bool{}
	for _, b := range bands {
		if seen[b.Fault] {
			continue
		}
		seen[b.Fault] = true
		k := FaultKey{Fault: b.Fault, Colour: colors[b.Fault], Observed: b.Observed}
		if b.Observed {
			k.Label = "seen: " + b.Fault
		} else {
			k.Label = "fault: " + b.Fault
			if d, ok := declared(b.Fault); ok && d.Legend != "" {
				k.Legend = d.Legend
				k.Label += " (" + d.Legend + ")"
			}
		}
		keys = append(keys, k)
	}
	return keys
}
