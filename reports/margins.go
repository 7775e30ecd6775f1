package reports

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/lockharness/lockharness/checker"
)

// Closest is the run's closest call: the smallest margin, nil when no
// property was measured.
func Closest(margins []checker.Margin) *checker.Margin {
	if len(margins) == 0 {
		return nil
	}
	m := slices.MinFunc(margins, func(a, b checker.Margin) int { return cmp.Compare(a.Ms, b.Ms) })
	return &m
}

// MarginsLine is the margins in one line, as the summary prints them:
// "exclusivity 15.0 ms · write-validity 901.0 ms".
func MarginsLine(margins []checker.Margin) string {
	parts := make([]string, len(margins))
	for i, m := range margins {
		parts[i] = fmt.Sprintf("%s %s", m.Property, marginText(m.Ms))
	}
	return strings.Join(parts, " · ")
}

// marginText is a margin as pages and the summary show it.
func marginText(ms float64) string { return fmt.Sprintf("%.1f ms", ms) }

// marginView is one row of the page's closest calls.
type marginView struct {
	Property, Margin, At, Says string
	Broken                     bool
	Measured                   int
	// Events link into the interactive timeline where they are a
	// client's operation (Link), else name the history index only.
	Events []eventLink
}

type eventLink struct {
	Index int
	Link  bool
}

// marginViews are the page's closest calls, each event linked into the
// timeline where it opens something there (a client's operation).
func marginViews(margins []checker.Margin, a *analysis) []marginView {
	var out []marginView
	for _, m := range margins {
		v := marginView{Property: m.Property, Margin: marginText(m.Ms), At: fmt.Sprintf("%.3f s", m.At), Says: m.Says, Broken: m.Ms < 0, Measured: m.Measured}
		for _, i := range m.Events {
			p, known := a.events.position(i)
			_, op := a.opOf(p)
			v.Events = append(v.Events, eventLink{Index: i, Link: known && op})
		}
		out = append(out, v)
	}
	return out
}
