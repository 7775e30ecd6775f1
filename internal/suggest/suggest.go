// Package suggest is the "did you mean" of every refusal that lists the
// valid names: the valid name a mistyped one was most likely meant to be.
package suggest

import (
	"fmt"
	"strings"
)

// Closest is the candidate nearest to word by edit distance (a swap of
// neighbouring letters is one edit; letters compared without case), when it is near enough to be a typo: at
// most a third of the word's length away (at least one edit, at most
// three). A tie goes to the earlier candidate.
func Closest(word string, candidates []string) (string, bool) {
	limit := min(max(1, len([]rune(word))/3), 3)
	best, bestDist := "", limit+1
	for _, c := range candidates {
		if d := distance(strings.ToLower(word), strings.ToLower(c)); d < bestDist && c != word {
			best, bestDist = c, d
		}
	}
	return best, best != ""
}

// Unknown is the refusal of a name of a kind that is none of valid:
// `unknown lock "cda" (did you mean cad? valid: cad, del, ...)`. After adds
// words after the list ("; join faults with + ...").
func Unknown(kind, name string, valid []string, after string) error {
	return fmt.Errorf("unknown %s %q (%svalid: %s%s)", kind, name, DidYouMean(name, valid), strings.Join(valid, ", "), after)
}

// DidYouMean is "did you mean X? " when a candidate is near the word, and
// nothing otherwise.
func DidYouMean(word string, candidates []string) string {
	if c, ok := Closest(word, candidates); ok {
		return "did you mean " + c + "? "
	}
	return ""
}

// distance is the optimal string alignment distance of a and b, by runes:
// Levenshtein's, with two neighbouring letters swapped counted as one edit
// ("cda" for "cad").
func distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}
