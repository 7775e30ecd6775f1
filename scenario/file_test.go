package scenario

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// The catalog is its files: each parses, is named as its file, and none
// is there twice.
func TestCatalogFilesParse(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("catalog", "*"+ScenarioExt))
	if err != nil || len(files) != len(Catalog) || len(Catalog) < 32 {
		t.Fatalf("%d files, %d entries (%v)", len(files), len(Catalog), err)
	}
	seen := map[string]bool{}
	for i, f := range files {
		// Parsed only: TestCatalogSpecsAreValid resolves each entry (and
		// knows when the redis-py worker cannot start).
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		e, err := ParseScenario(f, "catalog", data)
		if err != nil {
			t.Fatal(err)
		}
		if base := filepath.Base(f); !strings.HasSuffix(base, "-"+e.Name+ScenarioExt) || Catalog[i].Name != e.Name {
			t.Errorf("%s holds %s; the catalog's entry %d is %s", f, e.Name, i, Catalog[i].Name)
		}
		if seen[e.Name] {
			t.Errorf("%s twice", e.Name)
		}
		seen[e.Name] = true
	}
}

const userScenario = `# a team's own
name = "our-lock-under-pause"
source = "our design review"
story = "a holder freezes past its lease"
expect = "unsafe: stale-write"

[spec]
lock = "cad"
nemesis = "pause-client"
ttl = "1s"
time_limit = "6s"
`

func TestUserScenarioFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "pause.toml")
	os.WriteFile(path, []byte(userScenario), 0o644)
	e, err := LookupOrRead(path)
	if err != nil {
		t.Fatal(err)
	}
	if e.Name != "our-lock-under-pause" || e.Spec.Name != e.Name || !e.Expect.Unsafe || e.Spec.TTL.D() != time.Second ||
		e.Spec.TimeLimit.D() != 6*time.Second || e.Spec.Clients != Defaults().Clients {
		t.Errorf("read %+v", e)
	}
	entries, err := ReadScenarioDir(dir)
	if err != nil || len(entries) != 1 {
		t.Errorf("dir: %v %v", entries, err)
	}
	taken := filepath.Join(t.TempDir(), "gc.toml")
	os.WriteFile(taken, []byte(strings.Replace(userScenario, `name = "our-lock-under-pause"`, `name = "gc-pause"`, 1)), 0o644)
	if _, err := ReadScenario(taken); err == nil || !strings.Contains(err.Error(), taken+`:2: name "gc-pause" is a catalog scenario's`) {
		t.Errorf("a user file named as a catalog entry: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "again.toml"), []byte(userScenario), 0o644)
	if _, err := ReadScenarioDir(dir); err == nil || !strings.Contains(err.Error(), `scenario "our-lock-under-pause" is also`) {
		t.Errorf("two files of one name: %v", err)
	}
}

// A bad file is refused with its line and the field.
func TestBadScenarioFilesNameTheLineAndField(t *testing.T) {
	for _, c := range []struct{ line, bad, want string }{
		{`nemesis = "pause-client"`, `nemsis = "pause-client"`, "x.toml:9: unknown field spec.nemsis (did you mean nemesis? valid in [spec]: topology, target, backend"},
		{`ttl = "1s"`, `ttl = "soon"`, `x.toml:10:7: field spec.ttl:`},
		{`lock = "cad"`, `lock = "cda"`, `x.toml:8: field spec.lock: unknown lock "cda" (did you mean cad? valid: cad,`},
		{`lock = "cad"`, `lock = "cda"   # a typo`, `x.toml:8: field spec.lock: unknown lock "cda" (did you mean cad? valid: cad,`},
		{`expect = "unsafe: stale-write"`, `expect = "unsafe: stale-writes"`, `x.toml:5: expect: unknown anomaly "stale-writes" (did you mean stale-write? valid: double-grant,`},
		{`story = "a holder freezes past its lease"`, `storey = "a holder freezes"`, "x.toml:4: unknown field storey (did you mean story? valid at the top: name, source, source_url, story, expect, compare, remedy, spec)"},
		{`time_limit = "6s"`, `time_limit = 6`, `x.toml:11: field spec.time_limit: a duration is a string such as "1.5s", got 6`},
		{`nemesis = "pause-client"`, `nemesis = "partition-primary"`, `x.toml:9: field spec.nemesis: nemesis partition-primary: topology single has no replication`},
		{`ttl = "1s"`, `seed = 7`, "x.toml:10: unknown field spec.seed (valid in [spec]: topology,"},
	} {
		data := []byte(strings.Replace(userScenario, c.line, c.bad, 1))
		e, err := ParseScenario("x.toml", ".", data)
		if err == nil {
			err = checkScenario(e, "x.toml", data)
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want it to contain %q", c.bad, err, c.want)
		}
	}
	if _, err := ParseScenario("x.toml", ".", []byte("[spec]\nlock = \"cad\"\n")); err == nil || !strings.Contains(err.Error(), "x.toml: no name") {
		t.Errorf("no name: %v", err)
	}
}

func TestScenarioPathsResolve(t *testing.T) {
	e, err := ParseScenario("x.toml", "/teams/ours", []byte(`name = "w"
expect = "safe"
[spec]
lock = "exec"
worker_cmd = "/usr/bin/python3 {dir}/worker.py --fast"
`))
	if err != nil {
		t.Fatal(err)
	}
	if e.Spec.WorkerCmd != "/usr/bin/python3 /teams/ours/worker.py --fast" {
		t.Errorf("worker_cmd %q", e.Spec.WorkerCmd)
	}
	if redisPy, _ := Lookup("redis-py-clean"); redisPy.Spec.WorkerCmd != RedisPyWorker {
		t.Errorf("the catalog's redis-py worker is %q, want %q", redisPy.Spec.WorkerCmd, RedisPyWorker)
	}
}

// A schedule given in full is read, resolved into the steps the run
// follows, written back as it was read, and refused where it is wrong.
func TestScenarioFileWithASchedule(t *testing.T) {
	data := []byte(userScenario + `
[[spec.schedule]]
fault = "pause-client:for=2.5s"
at = "1.2s"

[[spec.schedule]]
fault = "kill-node:delay=40ms"
at = "3.5s"
after_grant = "5ms"

[[spec.schedule]]
fault = "pause-client:for=1s"
at = "1s"
after_promotion = "100ms"
`)
	e, err := ParseScenario("x.toml", ".", data)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := e.Spec.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Steps) != 3 || plan.Steps[0].String() != "pause-client:for=2.5s at 1.200s" || plan.Steps[1].String() != "kill-node:delay=40ms 5ms after a grant at 3.500s" ||
		plan.Steps[2].String() != "pause-client:for=1s 100ms after a promotion at 1.000s" {
		t.Errorf("steps %v", plan.Steps)
	}
	if plan.Spec.Nemesis != "pause-client,kill-node" || !strings.Contains(plan.Spec.Line(), "a schedule of 3 faults") {
		t.Errorf("nemesis %q, line %q", plan.Spec.Nemesis, plan.Spec.Line())
	}
	out, err := FormatScenario(e, "shrunk from a run\nre-run: harness repro x.toml")
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseScenario("y.toml", ".", out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !reflect.DeepEqual(back, e) || !strings.HasPrefix(string(out), "# shrunk from a run\n# re-run: harness repro x.toml\n") {
		t.Errorf("written\n%s\nread back %+v\nwant %+v", out, back, e)
	}
	for bad, want := range map[string]string{
		`at = "3.5s"`:           `x.toml:19: field spec.schedule.at: a duration is a string such as "1.5s", got 3`,
		`fault = "kill-nod`:     `schedule step 2: unknown nemesis "kill-nod`,
		`after_grant = "5ms"`:   `schedule step 2 (kill-node:delay=40ms): times must not be negative`,
		`fault = "pause-client`: `want one fault, not a list`,
	} {
		repl := map[string]string{`at = "3.5s"`: `at = 3`, `fault = "kill-nod`: `fault = "kill-nod`, `after_grant = "5ms"`: `after_grant = "-5ms"`,
			`fault = "pause-client`: `fault = "partition,pause-client`}[bad]
		text := strings.Replace(string(data), bad, repl, 1)
		if bad == `fault = "kill-nod` {
			text = strings.Replace(string(data), `"kill-node:`, `"kill-nod:`, 1)
		}
		e, err := ParseScenario("x.toml", ".", []byte(text))
		if err == nil {
			err = checkScenario(e, "x.toml", []byte(text))
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", repl, err, want)
		}
	}
	both := strings.Replace(string(data), `after_promotion = "100ms"`, `after_promotion = "100ms"`+"\nafter_grant = \"1ms\"", 1)
	if e, err := ParseScenario("x.toml", ".", []byte(both)); err == nil {
		if _, err = e.Spec.Resolve(); err == nil || !strings.Contains(err.Error(), "schedule step 3 (pause-client:for=1s): after_grant and after_promotion are two moments; give one") {
			t.Errorf("a step after a grant and a promotion: %v", err)
		}
	} else {
		t.Errorf("a step after a grant and a promotion: %v", err)
	}
}

func TestSourceURLIsALink(t *testing.T) {
	base := "name = \"x\"\nsource = \"redis/redis#8474\"\n%s\nexpect = \"safe\"\n[spec]\nlock = \"cad\"\n"
	e, err := ParseScenario("x.toml", ".", []byte(fmt.Sprintf(base, `source_url = "https://github.com/redis/redis/pull/8474"`)))
	if err != nil || e.SourceURL != "https://github.com/redis/redis/pull/8474" {
		t.Fatalf("a link: %+v, %v", e, err)
	}
	for _, bad := range []string{`source_url = "redis#8474"`, `source_url = "ftp://example.org/x"`, `source_url = "https://"`} {
		if _, err := ParseScenario("x.toml", ".", []byte(fmt.Sprintf(base, bad))); err == nil || !strings.Contains(err.Error(), "x.toml:3: source_url") {
			t.Errorf("%s: %v, want it refused at line 3", bad, err)
		}
	}
}
