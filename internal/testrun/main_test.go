package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The shards come out within one test's time of each other, every test in
// exactly one, a test never timed counting as the median.
func TestBalanceDealsLongestFirst(t *testing.T) {
	times := map[string]float64{"TestA": 140, "TestB": 80, "TestC": 50, "TestD": 45, "TestE": 10, "TestF": 10, "TestG": 5}
	var tests []string
	for _, name := range []string{"TestA", "TestB", "TestC", "TestD", "TestE", "TestF", "TestG", "TestNew"} {
		tests = append(tests, "p "+name)
	}
	groups := balance(tests, times, 3)
	var all []string
	loads := make([]float64, len(groups))
	for i, g := range groups {
		for _, unit := range g {
			all = append(all, unit)
			name := strings.TrimPrefix(unit, "p ")
			if s, ok := times[name]; ok {
				loads[i] += s
			} else {
				loads[i] += 45 // the median of the times known
			}
		}
	}
	slices.Sort(all)
	if want := slices.Sorted(slices.Values(tests)); !slices.Equal(all, want) {
		t.Fatalf("tests dealt %v, want each of %v once", all, want)
	}
	if spread := slices.Max(loads) - slices.Min(loads); spread > 140 {
		t.Errorf("shard loads %v: further apart than the longest test", loads)
	}
	if !slices.Equal(groups[0][:1], []string{"p TestA"}) {
		t.Errorf("the longest test does not open the first shard: %v", groups)
	}
}

// A shard runs its tests of each package in a go test of that package,
// one after the other, each name a pattern of its own (TestA must not also
// run TestAB); tests are balanced by their names' times whatever their
// package.
func TestShardsRunEachPackagesTestsInTurn(t *testing.T) {
	jobs := shardJobs([]string{"p/a TestA.b", "p/b TestSlow", "p/a TestC"}, map[string]float64{"TestSlow": 100, "TestA.b": 1, "TestC": 1}, 2, "a+b")
	if len(jobs) != 2 || len(jobs[0].runs) != 1 || jobs[0].runs[0][0] != "p/b" {
		t.Fatalf("jobs %+v, want the slow test alone in the first shard", jobs)
	}
	got := jobs[1].runs
	if len(got) != 1 || got[0][0] != "p/a" || got[0][2] != `^(TestA\.b|TestC)$` || jobs[1].name != "a+b [shard 2 of 2, 2 tests]" {
		t.Errorf("the second shard %q runs %q", jobs[1].name, got)
	}
}

func TestTimesRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "times.tsv")
	r := result{tests: map[string]float64{
		sharded[0] + ".TestSlow":                   12.5,
		"github.com/lockharness/lockharness/x.Tst": 3, // not a sharded package's: left out
	}}
	if err := writeTimes(path, []result{r}); err != nil {
		t.Fatal(err)
	}
	got := readTimes(path)
	if len(got) != 1 || got["TestSlow"] != 12.5 {
		b, _ := os.ReadFile(path)
		t.Errorf("read back %v from\n%s", got, b)
	}
	if b, _ := os.ReadFile(path); !strings.HasPrefix(string(b), "# ") {
		t.Errorf("the file does not say what it is:\n%s", b)
	}
	if len(readTimes(filepath.Join(t.TempDir(), "none"))) != 0 {
		t.Error("a missing file gives times")
	}
}
