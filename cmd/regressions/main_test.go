package main

import (
	"strings"
	"testing"
)

const doc = "# Track record\n\nprose | with a bar\n\n" + beginMark + `
| report | what it shows | catalog row | last reproduced |
|---|---|---|---|
| [A](https://a) | a double grant | ` + "`gc-pause`" + ` | abc · 2026-12-01 · Redis 7.0.15 · 5 of 5 seeds |
| [B](https://b) | a lost lease | ` + "`split-brain`" + ` | **no longer reproduces**: x · 1 of 5 seeds; before: def · 2026-11-30 · Redis 7.0.15 · 5 of 5 seeds |
` + endMark + "\n\n| not | the | table | x |\n"

func TestRewriteTouchesOnlyTheLastColumnOfTheTable(t *testing.T) {
	seen := map[string]string{}
	out, err := rewrite(doc, func(name, last string) string {
		seen[name] = last
		return "NEW " + name
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen["gc-pause"] != "abc · 2026-12-01 · Redis 7.0.15 · 5 of 5 seeds" || len(seen) != 2 {
		t.Errorf("cells seen %q", seen)
	}
	for _, want := range []string{"| [A](https://a) | a double grant | `gc-pause` | NEW gc-pause |", "| [B](https://b) | a lost lease | `split-brain` | NEW split-brain |", "prose | with a bar", "| not | the | table | x |", "| report | what it shows | catalog row | last reproduced |"} {
		if !strings.Contains(out, want) {
			t.Errorf("rewritten doc lacks %q:\n%s", want, out)
		}
	}
	if previous(seen["split-brain"]) != "def · 2026-11-30 · Redis 7.0.15 · 5 of 5 seeds" {
		t.Errorf("previous of a marked row: %q", previous(seen["split-brain"]))
	}
	if _, err := rewrite("no markers", func(string, string) string { return "" }); err == nil {
		t.Error("a doc without the markers was rewritten")
	}
}

func TestRewriteRefusesARowItCannotRead(t *testing.T) {
	for _, row := range []string{"| a | b | c | `gc-pause` | d |", "| a | b | no name | d |"} {
		text := beginMark + "\n| report | what it shows | catalog row | last reproduced |\n|---|---|---|---|\n" + row + "\n" + endMark
		if _, err := rewrite(text, func(_, last string) string { return last }); err == nil {
			t.Errorf("%s: rewritten", row)
		}
	}
	if got := rows(doc); len(got) != 2 || got[0] != "gc-pause" || got[1] != "split-brain" {
		t.Errorf("rows = %q", got)
	}
	if cell("a | b") != "a / b" {
		t.Error("a bar left in a cell")
	}
}
