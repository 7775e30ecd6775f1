package suggest

import "testing"

func TestClosest(t *testing.T) {
	verbs := []string{"run", "repro", "suite", "replay", "shrink", "compare", "list", "check", "report", "serve", "worker-check", "version"}
	flags := []string{"lock", "time-limit", "nemesis", "seed", "scenario", "store"}
	for _, tc := range []struct {
		word       string
		candidates []string
		want       string
	}{
		{"rnu", verbs, "run"},
		{"repor", verbs, "repro"},
		{"lok", flags, "lock"},
		{"time-limt", flags, "time-limit"},
		{"nemsis", flags, "nemesis"},
		{"seeds", flags, "seed"},
		{"Lock", flags, "lock"},
		{"banana", verbs, ""},
	} {
		got, ok := Closest(tc.word, tc.candidates)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("Closest(%q) = %q, %v; want %q", tc.word, got, ok, tc.want)
		}
	}
}

func TestUnknown(t *testing.T) {
	got := Unknown("lock", "cda", []string{"cad", "del"}, "").Error()
	if want := `unknown lock "cda" (did you mean cad? valid: cad, del)`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	got = Unknown("lock", "zzzz", []string{"cad", "del"}, "; or exec").Error()
	if want := `unknown lock "zzzz" (valid: cad, del; or exec)`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}
