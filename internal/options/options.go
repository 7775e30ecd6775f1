// Package options reads the options a registry entry takes after its name,
// the way lock recipes and faults are written on the command line:
//
//	redsync:setnx-on-extend:tries=1
//	kill-node:delay=4s
//	clock-jump:by=3s,node=holder
//
// Each entry declares the options it accepts (Spec); Parse checks the names,
// the kinds of their values and duplicates, and every error names the valid
// options.
package options

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/lockharness/lockharness/internal/suggest"
)

// Kind is what an option's value must be.
type Kind int

const (
	// Flag takes no value.
	Flag Kind = iota
	// Int is an integer ≥ 1.
	Int
	// Duration is a non-negative Go duration (500ms, 4s).
	Duration
	// SignedDuration is a Go duration that may be negative (-3s).
	SignedDuration
	// Choice is one of Spec.Choices.
	Choice
	// Word is any text without the separators , : + and =; the entry
	// judges it (a node's name, say).
	Word
	// Slots are client slots, integers ≥ 0 joined by "/" (0/2/5): the
	// separators , and + are the nemesis list's own.
	Slots
	// Rate is a signed percentage, how much faster something runs: 2%,
	// -0.5%, 0.05%; within ±50%.
	Rate
	// Span is a non-negative duration or "run", the whole run.
	Span
)

// WholeRun is the Span value that means the whole run.
const WholeRun = "run"

// maxRate bounds a Rate: a clock running at half speed or half again as
// fast is past any clock a machine keeps, and a rate of -100% would stop it.
const maxRate = 50

// Spec is one option an entry accepts.
type Spec struct {
	Name string
	Kind Kind
	// Arg names the value in help ("N", "D"); empty derives it from Kind.
	Arg string
	// Choices are the values of a Choice option.
	Choices []string
	Summary string
}

// ArgName is how help names the option's value: "N", "D", "a|b".
func (s Spec) ArgName() string {
	switch {
	case s.Arg != "":
		return s.Arg
	case s.Kind == Int:
		return "N"
	case s.Kind == Duration, s.Kind == SignedDuration:
		return "D"
	case s.Kind == Choice:
		return strings.Join(s.Choices, "|")
	case s.Kind == Word:
		return "WORD"
	case s.Kind == Slots:
		return "N/N/..."
	case s.Kind == Rate:
		return "±P%"
	case s.Kind == Span:
		return "D|" + WholeRun
	}
	return ""
}

// String is how the option is written: "tries=N", "setnx-on-extend".
func (s Spec) String() string {
	if s.Kind == Flag {
		return s.Name
	}
	return s.Name + "=" + s.ArgName()
}

// check reports whether v is a valid value for the option.
func (s Spec) check(v string) error {
	switch s.Kind {
	case Int:
		if n, err := strconv.Atoi(v); err != nil || n < 1 {
			return fmt.Errorf("option %s=%s: want an integer ≥ 1", s.Name, v)
		}
	case Duration, SignedDuration:
		d, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("option %s=%s: want a duration like 500ms or 4s", s.Name, v)
		}
		if d < 0 && s.Kind == Duration {
			return fmt.Errorf("option %s=%s: want a duration that is not negative", s.Name, v)
		}
	case Choice:
		for _, c := range s.Choices {
			if v == c {
				return nil
			}
		}
		return fmt.Errorf("option %s=%s: want one of %s", s.Name, v, strings.Join(s.Choices, ", "))
	case Word:
		if strings.ContainsAny(v, ",:+= ") {
			return fmt.Errorf("option %s=%q: a value may not hold , : + = or spaces", s.Name, v)
		}
	case Rate:
		if _, err := parseRate(v); err != nil {
			return fmt.Errorf("option %s=%s: %v", s.Name, v, err)
		}
	case Span:
		if v == WholeRun {
			return nil
		}
		if d, err := time.ParseDuration(v); err != nil || d < 0 {
			return fmt.Errorf("option %s=%s: want a duration like 500ms or 4s, or %s for the whole run", s.Name, v, WholeRun)
		}
	case Slots:
		for _, item := range strings.Split(v, "/") {
			if n, err := strconv.Atoi(item); err != nil || n < 0 {
				return fmt.Errorf("option %s=%s: want client slots joined by / (0/2)", s.Name, v)
			}
		}
	}
	return nil
}

// Valid lists specs as help writes them: "setnx-on-extend, tries=N".
func Valid(specs []Spec) string {
	if len(specs) == 0 {
		return "none"
	}
	s := make([]string, len(specs))
	for i, o := range specs {
		s[i] = o.String()
	}
	return strings.Join(s, ", ")
}

// Values are parsed options: name → value, "" for a flag. Every value has
// been checked against its Spec, so the getters cannot fail.
type Values map[string]string

// Split cuts an entry's text into its name and the options after the first
// colon (hasOpts says whether there was a colon at all).
func Split(text string) (name, opts string, hasOpts bool) {
	return strings.Cut(text, ":")
}

// Parse reads options separated by colons or commas ("a=1:b", "a=1,b")
// against the specs. Unknown options, flags given a value, values missing
// or of the wrong kind, empty items and repeats are errors naming the valid
// options.
func Parse(text string, specs []Spec) (Values, error) {
	valid := Valid(specs)
	if len(specs) == 0 {
		return nil, fmt.Errorf("takes no options")
	}
	items := strings.FieldsFunc(text, func(c rune) bool { return c == ':' || c == ',' })
	if len(items) == 0 || strings.Contains(text, "::") || strings.Contains(text, ",,") ||
		strings.HasSuffix(text, ":") || strings.HasSuffix(text, ",") ||
		strings.HasPrefix(text, ":") || strings.HasPrefix(text, ",") {
		return nil, fmt.Errorf("empty option (valid: %s)", valid)
	}
	vals := Values{}
	for _, item := range items {
		k, v, hasValue := strings.Cut(item, "=")
		spec, known := find(specs, k)
		switch {
		case !known:
			return nil, fmt.Errorf("unknown option %q (%svalid: %s)", k, suggest.DidYouMean(k, specNames(specs)), valid)
		case spec.Kind == Flag && hasValue:
			return nil, fmt.Errorf("option %s is a flag and takes no value (valid: %s)", k, valid)
		case spec.Kind != Flag && (!hasValue || v == ""):
			return nil, fmt.Errorf("option %s needs a value: %s (valid: %s)", k, spec, valid)
		}
		if err := spec.check(v); err != nil {
			return nil, fmt.Errorf("%v (valid: %s)", err, valid)
		}
		if _, dup := vals[k]; dup {
			return nil, fmt.Errorf("option %s given twice", k)
		}
		vals[k] = v
	}
	return vals, nil
}

func find(specs []Spec, name string) (Spec, bool) {
	for _, s := range specs {
		if s.Name == name {
			return s, true
		}
	}
	return Spec{}, false
}

// String spells the options canonically: sorted, colon-separated, as they
// follow the entry's name ("setnx-on-extend:tries=1").
func (v Values) String() string {
	parts := make([]string, 0, len(v))
	for k, val := range v {
		if val == "" {
			parts = append(parts, k)
		} else {
			parts = append(parts, k+"="+val)
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, ":")
}

// With is the entry's text: name, and the options after a colon if any.
func (v Values) With(name string) string {
	if len(v) == 0 {
		return name
	}
	return name + ":" + v.String()
}

// Flag reports whether the flag option is set.
func (v Values) Flag(name string) bool {
	_, ok := v[name]
	return ok
}

// Get is the option's value, or def when it was not given.
func (v Values) Get(name, def string) string {
	if val, ok := v[name]; ok {
		return val
	}
	return def
}

// Int is an Int option's value, or def.
func (v Values) Int(name string, def int) int {
	val, ok := v[name]
	if !ok {
		return def
	}
	n, _ := strconv.Atoi(val)
	return n
}

// Duration is a duration option's value, or what def returns (called only
// when the option was not given, so that a default drawn at random draws
// nothing when the option fixes it).
func (v Values) Duration(name string, def func() time.Duration) time.Duration {
	val, ok := v[name]
	if !ok {
		return def()
	}
	d, _ := time.ParseDuration(val)
	return d
}

// parseRate reads a signed percentage as parts per billion.
func parseRate(v string) (int64, error) {
	num, ok := strings.CutSuffix(v, "%")
	f, err := strconv.ParseFloat(num, 64)
	if !ok || err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("want a percentage such as 2%%, -0.5%% or 0.05%%")
	}
	if f < -maxRate || f > maxRate {
		return 0, fmt.Errorf("want a rate within ±%d%%", maxRate)
	}
	return int64(math.Round(f * 1e7)), nil
}

// Rate is a Rate option's value in parts per billion, or what def returns.
func (v Values) Rate(name string, def func() int64) int64 {
	val, ok := v[name]
	if !ok {
		return def()
	}
	r, _ := parseRate(val)
	return r
}

// Span is a Span option's duration, or what def returns, and whether it is
// the whole run.
func (v Values) Span(name string, def func() time.Duration) (d time.Duration, whole bool) {
	val, ok := v[name]
	switch {
	case !ok:
		return def(), false
	case val == WholeRun:
		return 0, true
	}
	d, _ = time.ParseDuration(val)
	return d, false
}

// FormatRate writes parts per billion as a Rate option's value: "2%",
// "-0.5%".
func FormatRate(ppb int64) string {
	return strconv.FormatFloat(float64(ppb)/1e7, 'f', -1, 64) + "%"
}

// Slots is a Slots option's client slots, sorted and without repeats, and
// whether it was given.
func (v Values) Slots(name string) ([]int, bool) {
	val, ok := v[name]
	if !ok {
		return nil, false
	}
	var out []int
	for _, item := range strings.Split(val, "/") {
		n, _ := strconv.Atoi(item)
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out, true
}

// JoinSlots spells client slots as a Slots option's value.
func JoinSlots(slots []int) string {
	s := make([]string, len(slots))
	for i, n := range slots {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, "/")
}

func specNames(specs []Spec) []string {
	names := make([]string, len(specs))
	for i, s := range specs {
		names[i] = s.Name
	}
	return names
}
