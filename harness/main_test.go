package harness

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockharness/lockharness/runner"
)

func TestBadNamesListTheValidOnes(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"run", "--lock", "nosuch"}, `unknown lock "nosuch" (valid: cad, del, etcd, etcd-fenced, fenced, naive, redislock, redlock, redsync, renew, rueidislock, wait, exec; exec runs a worker of your own, with --worker-cmd)`},
		{[]string{"run", "--lock", "cda"}, `unknown lock "cda" (did you mean cad? valid:`},
		{[]string{"run", "--lok", "cad"}, `flag provided but not defined: -lok: did you mean --lock?`},
		{[]string{"run", "--time-limt", "3s"}, `did you mean --time-limit?`},
		{[]string{"run", "--seeds", "3"}, "a run takes one --seed; `harness repro NAME|FILE --seeds N` runs a scenario for N seeds"},
		{[]string{"run", "--nemesis", "pause-clinet"}, `unknown nemesis "pause-clinet" (did you mean pause-client? valid:`},
		{[]string{"run", "--nemesis", "pause-client:forr=1s"}, `unknown option "forr" (did you mean for? valid: for=D)`},
		{[]string{"run", "--topology", "sentinal"}, `unknown topology "sentinal" (did you mean sentinel? valid:`},
		{[]string{"repro", "gc-paus"}, `unknown scenario "gc-paus" (did you mean gc-pause? valid:`},
		{[]string{"rnu"}, `unknown command "rnu" (did you mean run? valid:`},
		{[]string{"suite", "libs", "--rows", "nosuch"}, `--rows "nosuch": no row of suite libs holds it (rows: redsync × none;`},
		{[]string{"run", "--nemesis", "nosuch"}, `unknown nemesis "nosuch" (valid: clock-drift, clock-jump, clock-skew, clock-strobe, cluster-failover, delay-write, failover, kill-client, kill-node`},
		{[]string{"run", "--topology", "cluster", "--nemesis", "kill-node:data=lost"}, `topology cluster's nodes cannot lose their data: a Redis Cluster node keeps its ID and slots in nodes.conf`},
		{[]string{"run", "--nemesis", "kill-node:delay=soon"}, `option delay=soon: want a duration like 500ms or 4s (valid: delay=D, node=holder|random|NAME, data=kept|lost)`},
		{[]string{"run", "--nemesis", "partition-primary"}, `nemesis partition-primary: topology single has no replication`},
		{[]string{"run", "--topology", "ring"}, `unknown topology "ring" (valid: single, sentinel, redlock, cluster, target, target-sentinel, etcd)`},
		{[]string{"run", "--persistence", "rdb"}, `unknown persistence "rdb" (valid: none, aof-always)`},
		{[]string{"run", "--ttl", "soon"}, `"soon" is not a duration`},
		{[]string{"run", "--bogus"}, `flag provided but not defined: -bogus`},
		{[]string{"run", "--clients", "100000"}, `--clients 100000 is more than this machine can run`},
		{[]string{"run", "extra"}, `unexpected argument "extra"`},
		{[]string{"repro", "nosuch"}, `unknown scenario "nosuch" (valid:`},
		{[]string{"repro"}, `which scenario? valid: clean-cad`},
		{[]string{"suite", "weekly"}, `unknown suite "weekly" (valid: quick, full, libs)`},
		{[]string{"check"}, `want exactly one path, got 0`},
		{[]string{"list", "extra"}, `takes no arguments`},
		{[]string{"frobnicate"}, `unknown command "frobnicate" (valid: run, repro, suite, replay, shrink, explore, compare, list, check, report, serve, worker-check, version, help)`},
		{[]string{"compare"}, `which locks? --locks A,B,...`},
		{[]string{"compare", "--locks", "cad,nolock"}, `--locks "nolock": unknown lock "nolock" (valid: cad,`},
		{[]string{"compare", "--locks", "cad", "--nemesis", "kill-node,gremlins"}, `--nemesis "gremlins": unknown nemesis "gremlins"`},
		{[]string{"compare", "--locks", "cad", "--ttl", "1s,soon"}, `--ttl "soon": each is a positive duration such as 2s`},
		{[]string{"replay"}, `want one run directory, got 0 arguments`},
		{[]string{"replay", "/nonexistent/run"}, `/nonexistent/run is not a run directory: it has no results.json`},
		{[]string{"replay", "x", "--times", "0"}, `--times must be at least 1, got 0`},
		{[]string{"shrink", "x", "--tries", "0"}, `--tries must be at least 1, got 0`},
		{[]string{"shrink", "x", "--budget", "0s"}, `--budget must be positive, got 0s`},
		{[]string{"run", "--schedule", "/nonexistent/schedule.json"}, `--schedule: open /nonexistent/schedule.json`},
		{[]string{"explore", "--strategy", "smart"}, `unknown --strategy "smart" (valid: guided, random)`},
		{[]string{"explore", "--want", "dubble-grant"}, `unknown --want anomaly "dubble-grant"`},
		{[]string{"explore", "--until", "never"}, `--until must be first or budget, got "never"`},
		{[]string{"explore", "--budget", "0s"}, `--budget must be positive, got 0s`},
		{[]string{"explore", "--nemesis", "pause-client,partition-primary"}, `nemesis partition-primary: topology single has no replication`},
		{[]string{"explore", "--nemesis", "gremlins"}, `unknown nemesis "gremlins"`},
		{[]string{"explore", "--lock", "nolock"}, `unknown lock "nolock" (valid: cad,`},
		{[]string{"explore", "--shrink-share", "1"}, `--shrink-share must be at least 0 and below 1, got 1`},
		{[]string{"explore", "--shard", "3/2", "--seed", "1"}, `--shard must be i/n with 1 ≤ i ≤ n, got "3/2"`},
		{[]string{"explore", "--shard", "1/2"}, `--shard 1/2 needs --seed: the shards of a campaign share one`},
		{[]string{"explore", "merge"}, `which searches? give each shard's`},
		{[]string{"explore", "merge", "/nonexistent"}, `/nonexistent is not a search's directory: it has no explore.json`},
		{nil, "Usage:"},
	}
	for _, c := range cases {
		var stdout, stderr bytes.Buffer
		code := run(c.args, &stdout, &stderr)
		if code != exitUsage {
			t.Errorf("%v: exit %d, want %d (a usage error)", c.args, code, exitUsage)
		}
		if !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%v: stderr %q lacks %q", c.args, stderr.String(), c.want)
		}
		if stdout.Len() != 0 {
			t.Errorf("%v: a usage error printed on stdout: %q", c.args, stdout.String())
		}
	}
}

// Every verb answers --help and help VERB with its usage on stdout and
// exit 0, the usage's first line naming the verb.
func TestEveryVerbHasHelp(t *testing.T) {
	for _, v := range verbs {
		for _, args := range [][]string{{v.name, "--help"}, {v.name, "-h"}, {"help", v.name}} {
			var stdout, stderr bytes.Buffer
			if code := run(args, &stdout, &stderr); code != 0 {
				t.Errorf("%v: exit %d, stderr %q", args, code, stderr.String())
			}
			first, _, _ := strings.Cut(stdout.String(), "\n")
			if !strings.HasPrefix(first, "Usage: harness "+v.name) {
				t.Errorf("%v: first line %q, want the usage", args, first)
			}
			if stderr.Len() != 0 {
				t.Errorf("%v: help wrote to stderr: %q", args, stderr.String())
			}
		}
	}
	var stdout, stderr bytes.Buffer
	run([]string{"run", "--help"}, &stdout, &stderr)
	for _, flag := range []string{"-lock", "-nemesis", "-clients", "-time-limit", "-ttl", "-hold", "-seed", "-persistence", "-store", "-name", "-key", "-json", "-restart-delay"} {
		if !strings.Contains(stdout.String(), flag) {
			t.Errorf("run --help lacks %s", flag)
		}
	}
	stdout.Reset()
	if code := run([]string{"--help"}, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "harness version") {
		t.Errorf("--help: %d %q", code, stdout.String())
	}
}

func TestVersionPrintsThree(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		var stdout, stderr bytes.Buffer
		if code := run(args, &stdout, &stderr); code != 0 {
			t.Fatalf("%v: exit %d", args, code)
		}
		lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
		if len(lines) != 3 || !strings.HasPrefix(lines[0], "harness ") || !strings.Contains(lines[1], "go1.") || !strings.HasPrefix(lines[2], "redis-server ") {
			t.Errorf("%v: %q", args, stdout.String())
		}
	}
}

// Flags may follow the positional argument, and --json prints one JSON
// object on stdout alone.
func TestCheckTakesFlagsAfterThePath(t *testing.T) {
	dir := t.TempDir()
	hist := filepath.Join(dir, "history.jsonl")
	lines := `{"index":0,"time":1,"type":"invoke","process":0,"f":"acquire","key":"k","token":"a","ttl_ms":1000}
{"index":1,"time":2,"type":"ok","process":0,"f":"acquire","key":"k","token":"a"}
`
	if err := os.WriteFile(hist, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := run([]string{"check", dir, "--check-timeout", "5s", "--json"}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	out := strings.TrimSpace(stdout.String())
	if !strings.HasPrefix(out, "{") || strings.Count(out, "\n") != 0 || !strings.Contains(out, `"valid":true`) || !strings.Contains(out, `"exit":0`) {
		t.Errorf("--json printed %q", out)
	}
	if !strings.Contains(stderr.String(), "verdict     VALID") {
		t.Errorf("the human summary did not go to stderr: %q", stderr.String())
	}
	// dir holds a history and nothing a run leaves: check writes nothing
	// there unasked, and says so.
	if _, err := os.Stat(filepath.Join(dir, "results.json")); err == nil {
		t.Errorf("check wrote results.json into %s, which is no run directory", dir)
	}
	if !strings.Contains(stderr.String(), "written     nothing: "+dir+" is not a run directory") {
		t.Errorf("check did not say it wrote nothing: %q", stderr.String())
	}
}

func TestCheckRefusesMalformedAndCallsEmptyUnknown(t *testing.T) {
	dir := t.TempDir()
	back := filepath.Join(dir, "back.jsonl")
	os.WriteFile(back, []byte(`{"index":0,"time":5,"type":"invoke","process":0,"f":"acquire","key":"k","token":"a"}
{"index":1,"time":3,"type":"ok","process":0,"f":"acquire","key":"k","token":"a"}
`), 0o644)
	var stdout, stderr bytes.Buffer
	if code := run([]string{"check", back}, &stdout, &stderr); code != exitHarness || !strings.Contains(stderr.String(), "line 2: time 3 goes backwards") {
		t.Errorf("backwards: exit %d, stderr %q", code, stderr.String())
	}
	empty := filepath.Join(t.TempDir(), "history.jsonl")
	os.WriteFile(empty, nil, 0o644)
	stdout.Reset()
	if code := run([]string{"check", empty}, &stdout, &stderr); code != 2 || !strings.Contains(stdout.String(), "no client operations") {
		t.Errorf("empty: exit %d, stdout %q", code, stdout.String())
	}
}

// The example in docs/history.md is a history `harness check` takes.
func TestHistoryDocExampleChecks(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "docs", "history.md"))
	if err != nil {
		t.Fatal(err)
	}
	// Each example block of event lines is a history of its own.
	var examples [][]string
	inBlock := false
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, `{"index"`) {
			if !inBlock {
				examples = append(examples, nil)
			}
			examples[len(examples)-1] = append(examples[len(examples)-1], l)
		}
		inBlock = strings.HasPrefix(l, `{"index"`)
	}
	if len(examples) == 0 || len(examples[0]) < 4 {
		t.Fatalf("docs/history.md has no example of 4 lines or more: %v", examples)
	}
	for i, lines := range examples {
		path := filepath.Join(t.TempDir(), "history.jsonl")
		os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
		var stdout, stderr bytes.Buffer
		if code := run([]string{"check", path}, &stdout, &stderr); code == exitHarness || code == exitUsage {
			t.Errorf("example %d is refused: exit %d: %s", i+1, code, stderr.String())
		}
	}
}

// A user's scenario file is refused by every verb that takes one, naming
// its line and field, and listed beside the catalog when it is good.
func TestScenarioFilesOnTheCommandLine(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "ours.toml")
	os.WriteFile(good, []byte("name = \"ours\"\nsource = \"our review\"\nexpect = \"safe\"\n\n[spec]\nlock = \"cad\"\nnemesis = \"none\"\n"), 0o644)
	badDir := t.TempDir()
	bad := filepath.Join(badDir, "typo.toml")
	os.WriteFile(bad, []byte("name = \"typo\"\nexpect = \"safe\"\n\n[spec]\nlock = \"cad\"\nnemsis = \"none\"\n"), 0o644)
	want := bad + ":6: unknown field spec.nemsis (did you mean nemesis? valid in [spec]:"
	for _, args := range [][]string{
		{"run", "--scenario", bad},
		{"repro", bad},
		{"suite", "--dir", badDir},
		{"list", "--dir", badDir},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(args, &stdout, &stderr); code != exitUsage || !strings.Contains(stderr.String(), want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", args, code, stderr.String(), exitUsage, want)
		}
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"list", "--dir", dir}, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "Scenarios in "+dir) ||
		!strings.Contains(stdout.String(), "ours  ") {
		t.Errorf("list --dir: exit %d, stdout %q", code, stdout.String())
	}
}

// suite --help says what the libs suite runs from the lists it runs, so
// the two cannot drift apart again (it once left out failover).
func TestSuiteHelpIsTheLibsSuite(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"suite", "--help"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d", code)
	}
	help := strings.Join(strings.Fields(stdout.String()), " ")
	if want := runner.LibsSuiteSummary(); !strings.Contains(help, want) || !strings.Contains(want, "failover") {
		t.Errorf("suite --help does not say %q:\n%s", want, stdout.String())
	}
}
