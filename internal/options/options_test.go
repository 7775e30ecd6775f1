package options

import (
	"strings"
	"testing"
	"time"
)

var specs = []Spec{
	{Name: "flag"},
	{Name: "n", Kind: Int},
	{Name: "d", Kind: Duration},
	{Name: "by", Kind: SignedDuration},
	{Name: "mode", Kind: Choice, Choices: []string{"a", "b"}},
	{Name: "node", Kind: Word, Arg: "NAME"},
}

func TestParse(t *testing.T) {
	v, err := Parse("n=3:flag,d=4s:by=-2s,mode=b:node=n1", specs)
	if err != nil {
		t.Fatal(err)
	}
	if v.String() != "by=-2s:d=4s:flag:mode=b:n=3:node=n1" || v.With("x") != "x:by=-2s:d=4s:flag:mode=b:n=3:node=n1" {
		t.Errorf("canonical %q", v)
	}
	never := func() time.Duration { t.Error("default drawn for a given option"); return 0 }
	if !v.Flag("flag") || v.Int("n", 1) != 3 || v.Duration("d", never) != 4*time.Second || v.Duration("by", never) != -2*time.Second ||
		v.Get("mode", "a") != "b" || v.Get("node", "") != "n1" {
		t.Errorf("values %v", v)
	}
	empty := Values{}
	if empty.Int("n", 7) != 7 || empty.Duration("d", func() time.Duration { return time.Second }) != time.Second || empty.With("x") != "x" {
		t.Errorf("defaults")
	}
	for text, want := range map[string]string{
		"":             "empty option",
		"n=1::flag":    "empty option",
		",flag":        "empty option",
		"flag=1":       "flag is a flag and takes no value",
		"n":            "n needs a value: n=N",
		"n=0":          "want an integer ≥ 1",
		"d=-1s":        "not negative",
		"d=soon":       "want a duration",
		"mode=c":       "want one of a, b",
		"node=a=b":     "may not hold",
		"speed=1":      `unknown option "speed" (valid: flag, n=N, d=D, by=D, mode=a|b, node=NAME)`,
		"flag:flag":    "flag given twice",
		"by=1s,by=-1s": "by given twice",
	} {
		if _, err := Parse(text, specs); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v, want %q", text, err, want)
		}
	}
	if _, err := Parse("x", nil); err == nil || !strings.Contains(err.Error(), "takes no options") {
		t.Errorf("no specs: %v", err)
	}
}

func TestSlots(t *testing.T) {
	specs := []Spec{{Name: "clients", Kind: Slots}}
	v, err := Parse("clients=2/0/2", specs)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := v.Slots("clients"); !ok || len(got) != 2 || got[0] != 0 || got[1] != 2 || JoinSlots(got) != "0/2" {
		t.Errorf("slots %v %v", got, ok)
	}
	if _, ok := (Values{}).Slots("clients"); ok {
		t.Error("absent option given")
	}
	for _, bad := range []string{"clients=a", "clients=-1", "clients=1//2", "clients=1/"} {
		if _, err := Parse(bad, specs); err == nil || !strings.Contains(err.Error(), "want client slots joined by /") {
			t.Errorf("%s: %v", bad, err)
		}
	}
}

func TestRateAndSpan(t *testing.T) {
	specs := []Spec{{Name: "rate", Kind: Rate}, {Name: "for", Kind: Span}}
	for text, want := range map[string]struct {
		ppb   int64
		d     time.Duration
		whole bool
	}{
		"rate=2%:for=3s":      {20_000_000, 3 * time.Second, false},
		"rate=-0.5%:for=run":  {-5_000_000, 0, true},
		"rate=0.05%:for=0s":   {500_000, 0, false},
		"rate=50%:for=1500ms": {500_000_000, 1500 * time.Millisecond, false},
	} {
		v, err := Parse(text, specs)
		if err != nil {
			t.Fatalf("Parse(%q): %v", text, err)
		}
		never := func() time.Duration { t.Error("default drawn for a given option"); return 0 }
		d, whole := v.Span("for", never)
		if r := v.Rate("rate", func() int64 { return 0 }); r != want.ppb || d != want.d || whole != want.whole {
			t.Errorf("Parse(%q): rate %d, for %v whole %v; want %+v", text, r, d, whole, want)
		}
		if got := FormatRate(want.ppb); "rate="+got != strings.Split(text, ":")[0] {
			t.Errorf("FormatRate(%d) = %q", want.ppb, got)
		}
	}
	for text, want := range map[string]string{
		"rate=2":     "want a percentage",
		"rate=x%":    "want a percentage",
		"rate=51%":   "within ±50%",
		"rate=-60%":  "within ±50%",
		"rate=NaN%":  "want a percentage",
		"for=-1s":    "or run for the whole run",
		"for=always": "or run for the whole run",
	} {
		if _, err := Parse(text, specs); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v, want %q", text, err, want)
		}
	}
	if (Spec{Name: "rate", Kind: Rate}).String() != "rate=±P%" || (Spec{Name: "for", Kind: Span}).String() != "for=D|run" {
		t.Error("help names")
	}
}
