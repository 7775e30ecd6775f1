package history

import "image/color"

// Drawing is how the reports draw a fault's windows: the colour of its
// bands and the words of its entry in the key. A fault declares it with
// the rest of its traits (faults.Fault.Drawing); the reports find it by the
// fault's name (reports.FaultDrawing). It is defined here, beside the facts
// a fault records, because the faults and the reports both read this
// package and neither may import the other.
type Drawing struct {
	// Colour fills the fault's bands; its alpha is the band's opacity
	// over the leases drawn on it (70 to 80 keeps them readable). The zero
	// colour declares none: the fault takes one of the reports' palette.
	Colour color.NRGBA
	// Legend says in a few words what a band of the fault is ("node
	// killed, restarted"); the key shows it after the fault's name.
	Legend string
}
