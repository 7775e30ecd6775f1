// Command testrun runs the project's tests as `make test` does, in less
// wall time: the packages whose tests mostly wait on real servers (the
// runner package's real Redis runs) are cut into shards, each a `go test`
// process of its own, run beside the other packages. A shard is its own
// process, so the tests that kill every child they registered or count
// what is left (internal/proc) see only their own shard's. The shards are
// balanced by the tests' recorded times (testdata/test-times.tsv, written
// by `make test-times`); a test not recorded there counts as the median.
// At the end it prints each package's time and the slowest tests.
//
//	go run ./internal/testrun [-shards N] [-times FILE] [-record FILE] [PKG...]
package main

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// sharded are the packages cut into shards: the ones whose tests are
// long waits on real servers.
var sharded = []string{"github.com/lockharness/lockharness/runner", "github.com/lockharness/lockharness/search"}

func main() {
	shards := flag.Int("shards", 3, "how many processes the sharded packages' tests are cut into")
	timesFile := flag.String("times", "testdata/test-times.tsv", "the tests' recorded times, to balance the shards by")
	record := flag.String("record", "", "write every test's time to this `FILE` (the -times format) after the run")
	timeout := flag.String("timeout", "20m", "go test's -timeout for each process")
	flag.Parse()
	if *shards < 1 {
		fmt.Fprintf(os.Stderr, "testrun: -shards must be at least 1, got %d\n", *shards)
		os.Exit(2)
	}
	patterns := flag.Args()
	if len(patterns) == 0 {
		patterns = []string{"./..."}
	}
	pkgs, err := goList(patterns)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testrun:", err)
		os.Exit(2)
	}
	times := readTimes(*timesFile)
	var jobs []job
	var rest, shardedHere []string
	var units []string // "PKG TEST" of every sharded package's tests
	for _, p := range pkgs {
		if !slices.Contains(sharded, p) {
			rest = append(rest, p)
			continue
		}
		shardedHere = append(shardedHere, short(p))
		tests, err := listTests(p)
		if err != nil {
			fmt.Fprintln(os.Stderr, "testrun:", err)
			os.Exit(2)
		}
		for _, t := range tests {
			units = append(units, p+" "+t)
		}
	}
	jobs = shardJobs(units, times, *shards, strings.Join(shardedHere, "+"))
	if len(rest) > 0 {
		jobs = append(jobs, job{name: "the other packages", runs: [][]string{rest}})
	}
	start := time.Now()
	results := make([]result, len(jobs))
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = j.run(*timeout)
		}()
	}
	wg.Wait()
	failed := report(os.Stdout, results, time.Since(start))
	if *record != "" {
		if err := writeTimes(*record, results); err != nil {
			fmt.Fprintln(os.Stderr, "testrun:", err)
			failed = true
		}
	}
	if failed {
		os.Exit(1)
	}
}

func short(pkg string) string { return strings.TrimPrefix(pkg, "github.com/lockharness/lockharness/") }

func goList(patterns []string) ([]string, error) {
	out, err := exec.Command("go", append([]string{"list"}, patterns...)...).Output()
	if err != nil {
		return nil, fmt.Errorf("go list %s: %w", strings.Join(patterns, " "), err)
	}
	return strings.Fields(string(out)), nil
}

// listTests names a package's top-level tests.
func listTests(pkg string) ([]string, error) {
	cmd := exec.Command("go", "test", "-list", ".", pkg)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go test -list . %s: %w\n%s%s", pkg, err, out, stderr.Bytes())
	}
	var tests []string
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "Test") {
			tests = append(tests, line)
		}
	}
	return tests, nil
}

// shardJobs deals the sharded packages' tests ("PKG TEST") into n shards
// of about equal recorded time, each shard a job that runs its tests of one
// package after the other's, so that no more real-server tests run at once
// than there are shards. label names the packages.
func shardJobs(units []string, times map[string]float64, n int, label string) []job {
	var jobs []job
	for i, group := range balance(units, times, n) {
		if len(group) == 0 {
			continue
		}
		j := job{name: fmt.Sprintf("%s [shard %d of %d, %d tests]", label, i+1, n, len(group))}
		byPkg := map[string][]string{}
		var order []string
		for _, u := range group {
			p, t, _ := strings.Cut(u, " ")
			if byPkg[p] == nil {
				order = append(order, p)
			}
			// A name is a pattern of its own: TestA must not also run TestAB.
			byPkg[p] = append(byPkg[p], regexp.QuoteMeta(t))
		}
		for _, p := range order {
			j.runs = append(j.runs, []string{p, "-run", "^(" + strings.Join(byPkg[p], "|") + ")$"})
		}
		jobs = append(jobs, j)
	}
	return jobs
}

// balance deals the tests ("PKG TEST") into n groups of about equal
// recorded time (times are by test name), longest first onto the group
// with the least so far.
func balance(tests []string, times map[string]float64, n int) [][]string {
	name := func(t string) string {
		_, test, _ := strings.Cut(t, " ")
		return test
	}
	known := slices.Collect(func(yield func(float64) bool) {
		for _, t := range tests {
			if s, ok := times[name(t)]; ok && !yield(s) {
				return
			}
		}
	})
	slices.Sort(known)
	median := 5.0
	if len(known) > 0 {
		median = known[len(known)/2]
	}
	cost := func(t string) float64 {
		if s, ok := times[name(t)]; ok {
			return s
		}
		return median
	}
	sorted := slices.Clone(tests)
	slices.SortStableFunc(sorted, func(a, b string) int { return cmp.Compare(cost(b), cost(a)) })
	groups := make([][]string, n)
	load := make([]float64, n)
	for _, t := range sorted {
		i := slices.Index(load, slices.Min(load))
		groups[i] = append(groups[i], t)
		load[i] += cost(t)
	}
	return groups
}

type job struct {
	name string
	// runs are go test's arguments, run one after another.
	runs [][]string
}

type result struct {
	job     job
	took    time.Duration
	err     error
	failed  bool
	pkgs    map[string]float64 // package -> seconds
	tests   map[string]float64 // package.Test -> seconds
	output  map[string]*bytes.Buffer
	summary []string // go test's own ok/FAIL lines
}

// event is one line of `go test -json` (test2json).
type event struct {
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

// run runs the job's go tests, one after another, and gathers what they
// said.
func (j job) run(timeout string) result {
	r := result{job: j, pkgs: map[string]float64{}, tests: map[string]float64{}, output: map[string]*bytes.Buffer{}}
	start := time.Now()
	fmt.Printf("testrun: %s started\n", j.name)
	for _, args := range j.runs {
		if r.err = r.goTest(timeout, args); r.err != nil {
			break
		}
	}
	r.took = time.Since(start)
	status := "passed"
	if r.failed {
		status = "FAILED"
	}
	fmt.Printf("testrun: %s %s in %s\n", j.name, status, r.took.Round(time.Second))
	return r
}

// goTest runs one go test and takes in what it said.
func (r *result) goTest(timeout string, args []string) error {
	cmd := exec.Command("go", append([]string{"test", "-count=1", "-timeout", timeout, "-json"}, args...)...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e event
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			fmt.Println(sc.Text()) // a build failure's words
			continue
		}
		r.take(e)
	}
	io.Copy(io.Discard, out)
	if err := cmd.Wait(); err != nil {
		r.failed = true
	}
	return nil
}

func (r *result) take(e event) {
	key := e.Package
	if e.Test != "" {
		key += "." + e.Test
	}
	switch e.Action {
	case "build-output":
		// A compiler's words (go 1.24 and later send them here).
		fmt.Print(e.Output)
	case "output":
		b := r.output[key]
		if b == nil {
			b = &bytes.Buffer{}
			r.output[key] = b
		}
		b.WriteString(e.Output)
	case "pass", "fail", "skip":
		if e.Test == "" {
			r.pkgs[e.Package] = e.Elapsed
			line := fmt.Sprintf("%-4s %s\t%.1fs", strings.ToUpper(e.Action), short(e.Package), e.Elapsed)
			if e.Action == "pass" {
				line = fmt.Sprintf("ok   %s\t%.1fs", short(e.Package), e.Elapsed)
			}
			r.summary = append(r.summary, line)
		} else if !strings.Contains(e.Test, "/") {
			r.tests[key] = e.Elapsed
		}
		if e.Action == "fail" {
			r.failed = true
			if b := r.output[key]; b != nil && e.Test != "" {
				fmt.Printf("--- FAIL: %s (%s)\n%s", e.Test, short(e.Package), b)
			} else if b != nil && e.Test == "" && !strings.Contains(b.String(), "--- FAIL") {
				fmt.Print(b) // a panic or build error outside any test
			}
		}
	}
}

// report prints what every job found and reports whether anything failed.
func report(w io.Writer, results []result, took time.Duration) bool {
	failed := false
	pkgs := map[string]float64{}
	tests := map[string]float64{}
	var lines []string
	for _, r := range results {
		if r.err != nil {
			fmt.Fprintf(w, "testrun: %s: %v\n", r.job.name, r.err)
			failed = true
		}
		failed = failed || r.failed
		lines = append(lines, r.summary...)
		for p, s := range r.pkgs {
			pkgs[p] += s
		}
		for t, s := range r.tests {
			tests[t] = s
		}
	}
	sort.Strings(lines)
	fmt.Fprintln(w)
	for _, l := range lines {
		fmt.Fprintln(w, l)
	}
	fmt.Fprintf(w, "\nslowest packages (seconds of test time, shards summed):\n")
	for _, p := range topN(pkgs, 6) {
		fmt.Fprintf(w, "  %7.1f  %s\n", pkgs[p], short(p))
	}
	fmt.Fprintf(w, "slowest tests:\n")
	for _, t := range topN(tests, 10) {
		fmt.Fprintf(w, "  %7.1f  %s\n", tests[t], short(t))
	}
	for _, r := range results {
		fmt.Fprintf(w, "  %s: %s\n", r.job.name, r.took.Round(time.Second))
	}
	verdict := "PASSED"
	if failed {
		verdict = "FAILED"
	}
	fmt.Fprintf(w, "testrun: %s in %s (wall)\n", verdict, took.Round(time.Second))
	return failed
}

func topN(m map[string]float64, n int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return m[keys[i]] > m[keys[j]] })
	return keys[:min(n, len(keys))]
}

// readTimes reads TEST<TAB>SECONDS lines; a missing file is no times.
func readTimes(path string) map[string]float64 {
	times := map[string]float64{}
	b, err := os.ReadFile(path)
	if err != nil {
		return times
	}
	for _, line := range strings.Split(string(b), "\n") {
		name, secs, ok := strings.Cut(line, "\t")
		if s, err := strconv.ParseFloat(secs, 64); ok && err == nil && !strings.HasPrefix(name, "#") {
			times[name] = s
		}
	}
	return times
}

// writeTimes writes the sharded packages' tests' times.
func writeTimes(path string, results []result) error {
	var b strings.Builder
	b.WriteString("# seconds each test of a sharded package took (make test-times); testrun balances its shards by them\n")
	var names []string
	times := map[string]float64{}
	for _, r := range results {
		for t, s := range r.tests {
			dot := strings.LastIndex(t, ".")
			pkg, test := t[:dot], t[dot+1:]
			if slices.Contains(sharded, pkg) {
				names = append(names, test)
				times[test] = s
			}
		}
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(&b, "%s\t%.1f\n", n, times[n])
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}
