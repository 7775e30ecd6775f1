package harness

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// The CI and Kubernetes examples (examples/ci, examples/kubernetes) are
// held to what they run: every harness command in them, expanded by a
// shell as the CI system or the pod would for each shard, is one --plan
// accepts; the shard counts agree with the matrix, parallel: or
// completions, every shard from 1 to n is run exactly once, and each merge
// is handed every part exactly once.
func TestCIExamplesRunWhatTheySay(t *testing.T) {
	for _, ex := range []struct {
		file string
		// shards reads the number of shards the file declares; jobs its
		// scripts, each with the variables a shard's shell gets.
		shards func(t *testing.T, docs []map[string]any) int
		jobs   func(t *testing.T, docs []map[string]any, n int) []shellJob
		// parts is where shard i's store is when the merge runs, given
		// the store its command wrote to.
		parts func(store string) string
	}{
		{"../examples/ci/github-actions.yml", githubShards, githubJobs, func(store string) string { return filepath.Join("parts", store) }},
		{"../examples/ci/gitlab-ci.yml", gitlabShards, gitlabJobs, func(store string) string { return store }},
		{"../examples/kubernetes/suite.yaml", k8sShards, k8sJobs, func(store string) string { return store }},
		{"../examples/kubernetes/explore.yaml", k8sShards, k8sJobs, func(store string) string { return store }},
	} {
		t.Run(filepath.Base(ex.file), func(t *testing.T) {
			docs := readYAML(t, ex.file)
			if ex.file == "../examples/kubernetes/suite.yaml" || ex.file == "../examples/kubernetes/explore.yaml" {
				docs = append(docs, readYAML(t, strings.TrimSuffix(ex.file, ".yaml")+"-merge.yaml")...)
			}
			n := ex.shards(t, docs)
			if n < 2 {
				t.Fatalf("%d shards declared", n)
			}
			var seen []int
			stores := map[int]string{}
			var merges [][]string
			root := t.TempDir()
			for _, job := range ex.jobs(t, docs, n) {
				for _, args := range job.expand(t, root) {
					if len(args) >= 2 && args[1] == "merge" {
						merges = append(merges, args)
						continue
					}
					var stdout, stderr bytes.Buffer
					if code := run(append(slices.Clone(args), "--plan"), &stdout, &stderr); code != 0 {
						t.Errorf("harness %s --plan: exit %d: %s", strings.Join(args, " "), code, stderr.String())
					}
					shard := flagValue(args, "--shard")
					var i, of int
					if _, err := fmt.Sscanf(shard, "%d/%d", &i, &of); err != nil || of != n {
						t.Errorf("harness %s: --shard %q, want i/%d", strings.Join(args, " "), shard, n)
						continue
					}
					if slices.Contains(args, "--plan") {
						continue
					}
					seen = append(seen, i)
					stores[i] = flagValue(args, "--store")
				}
			}
			slices.Sort(seen)
			if want := seq(1, n); !slices.Equal(seen, want) {
				t.Fatalf("shards run: %v, want each of %v once", seen, want)
			}
			if len(merges) != 1 {
				t.Fatalf("%d merge commands, want 1", len(merges))
			}
			// What the merge is handed, with every part where it lands.
			var made []string
			for i := 1; i <= n; i++ {
				dir := filepath.Join(ex.parts(stores[i]), partDir(merges[0][0], i, n))
				if !filepath.IsAbs(dir) {
					dir = filepath.Join(root, dir)
				}
				os.MkdirAll(dir, 0o755)
				made = append(made, dir)
			}
			var given []string
			for _, job := range ex.jobs(t, docs, n) {
				for _, args := range job.expand(t, root) {
					if len(args) >= 2 && args[1] == "merge" {
						for _, a := range args[2:] {
							if strings.HasPrefix(a, "-") {
								break
							}
							if !filepath.IsAbs(a) {
								a = filepath.Join(root, a)
							}
							given = append(given, a)
						}
					}
				}
			}
			slices.Sort(given)
			slices.Sort(made)
			if !slices.Equal(given, made) {
				t.Errorf("the merge is handed %v, want every part once: %v", given, made)
			}
		})
	}
}

// partDir is where a part's suite or search lands under its store: the
// names reports.NewSuiteDir and search.ExploreInStore give them.
func partDir(verb string, i, n int) string {
	if verb == "explore" {
		return fmt.Sprintf("explore/redsync-redlock-guided-shard-%d-of-%d-20261206T000000", i, n)
	}
	return "suites/20261206T000000"
}

// shellJob is one script of an example, run once for each shard with the
// variables the shard's shell gets; a script that is not sharded runs once.
type shellJob struct {
	script string
	// shards are the variables of each shard's run; one empty set for a
	// script that runs once.
	shards []map[string]string
	// replace is text replaced in the script before it runs (the CI
	// system's own expressions, a volume's mount point).
	replace func(script string, vars map[string]string, root string) string
}

// expand runs the job's script through /bin/sh for each shard, in root,
// with harness a function that prints its arguments, and returns each
// call's arguments.
func (j shellJob) expand(t *testing.T, root string) [][]string {
	t.Helper()
	var calls [][]string
	for _, vars := range j.shards {
		script := j.script
		if j.replace != nil {
			script = j.replace(script, vars, root)
		}
		cmd := exec.Command("/bin/sh", "-c", `harness() { for a in "$@"; do printf '%s\0' "$a"; done; echo; }; `+script)
		cmd.Dir = root
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HARNESS=harness"}
		for k, v := range vars {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("sh -c %q: %v", script, err)
		}
		for _, line := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
			if args := strings.Split(strings.TrimSuffix(line, "\x00"), "\x00"); line != "" {
				calls = append(calls, args)
			}
		}
	}
	return calls
}

func githubShards(t *testing.T, docs []map[string]any) int {
	return len(path[[]any](t, docs[0], "jobs", "suite", "strategy", "matrix", "shard"))
}

func githubJobs(t *testing.T, docs []map[string]any, n int) []shellJob {
	if env := path[string](t, docs[0], "env", "HARNESS"); !strings.HasPrefix(env, "docker run --rm -v ${{ github.workspace }}:/data -w /data ") {
		t.Errorf("HARNESS %q does not run the image with the workspace at /data", env)
	}
	var jobs []shellJob
	for name, job := range path[map[string]any](t, docs[0], "jobs") {
		shards := []map[string]string{{}}
		if name == "suite" {
			shards = nil
			for _, s := range path[[]any](t, job.(map[string]any), "strategy", "matrix", "shard") {
				shards = append(shards, map[string]string{"shard": fmt.Sprint(s)})
			}
		}
		for _, step := range path[[]any](t, job.(map[string]any), "steps") {
			if script, ok := step.(map[string]any)["run"].(string); ok {
				jobs = append(jobs, shellJob{script: script, shards: shards, replace: func(s string, vars map[string]string, _ string) string {
					return strings.ReplaceAll(s, "${{ matrix.shard }}", vars["shard"])
				}})
			}
		}
	}
	return jobs
}

func gitlabShards(t *testing.T, docs []map[string]any) int {
	return path[int](t, docs[0], "lockharness-suite", "parallel")
}

func gitlabJobs(t *testing.T, docs []map[string]any, n int) []shellJob {
	var jobs []shellJob
	for _, job := range docs[0] {
		m, ok := job.(map[string]any)
		if !ok || m["script"] == nil {
			continue
		}
		shards := []map[string]string{{}}
		if p, ok := m["parallel"].(int); ok {
			shards = nil
			for i := 1; i <= p; i++ {
				shards = append(shards, map[string]string{"CI_NODE_INDEX": fmt.Sprint(i), "CI_NODE_TOTAL": fmt.Sprint(p)})
			}
		}
		for _, line := range path[[]any](t, m, "script") {
			jobs = append(jobs, shellJob{script: line.(string), shards: shards})
		}
	}
	return jobs
}

func k8sShards(t *testing.T, docs []map[string]any) int {
	for _, d := range docs {
		if d["kind"] == "Job" && path[string](t, d, "spec", "completionMode") == "Indexed" {
			if c, p := path[int](t, d, "spec", "completions"), path[int](t, d, "spec", "parallelism"); c != p {
				t.Errorf("job %v: %d completions, %d at once", path[string](t, d, "metadata", "name"), c, p)
			}
			return path[int](t, d, "spec", "completions")
		}
	}
	t.Fatal("no Indexed Job")
	return 0
}

func k8sJobs(t *testing.T, docs []map[string]any, n int) []shellJob {
	var jobs []shellJob
	for _, d := range docs {
		if d["kind"] != "Job" {
			continue
		}
		shards := []map[string]string{{}}
		if mode, _ := path[map[string]any](t, d, "spec")["completionMode"].(string); mode == "Indexed" {
			shards = nil
			for i := range path[int](t, d, "spec", "completions") {
				shards = append(shards, map[string]string{"JOB_COMPLETION_INDEX": fmt.Sprint(i)})
			}
		}
		for _, c := range path[[]any](t, d, "spec", "template", "spec", "containers") {
			container := c.(map[string]any)
			if cmd := path[[]any](t, container, "command"); len(cmd) != 2 || cmd[0] != "/bin/sh" || cmd[1] != "-c" {
				t.Errorf("container command %v, want /bin/sh -c", cmd)
			}
			for _, a := range path[[]any](t, container, "args") {
				jobs = append(jobs, shellJob{script: a.(string), shards: shards, replace: func(s string, _ map[string]string, root string) string {
					// The shared volume, mounted at /parts.
					return strings.ReplaceAll(s, "/parts", filepath.Join(root, "parts"))
				}})
			}
		}
	}
	return jobs
}

func readYAML(t *testing.T, file string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var docs []map[string]any
	for {
		var d map[string]any
		if err := dec.Decode(&d); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			t.Fatalf("%s: %v", file, err)
		}
		docs = append(docs, d)
	}
	return docs
}

// path walks a decoded YAML document by keys to a value of type T.
func path[T any](t *testing.T, doc map[string]any, keys ...string) T {
	t.Helper()
	var v any = doc
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("%v: not a mapping at %q", keys, k)
		}
		v = m[k]
	}
	out, ok := v.(T)
	if !ok {
		t.Fatalf("%v: %T, not %T", keys, v, out)
	}
	return out
}

func flagValue(args []string, name string) string {
	for i, a := range args {
		if a == name && i+1 < len(args) {
			return args[i+1]
		}
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v
		}
	}
	return ""
}

func seq(from, to int) []int {
	var out []int
	for i := from; i <= to; i++ {
		out = append(out, i)
	}
	return out
}
