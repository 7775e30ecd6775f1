package scenario

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/lockharness/lockharness/examples/workers"
)

// A harness far from any checkout still runs the reference worker: the one
// it carries is written out to the user's cache, once, and named by its
// content.
func TestRepoFileWritesOutTheReferenceWorker(t *testing.T) {
	const rel = "examples/workers/redis_py_lock.py"
	t.Chdir(t.TempDir())
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	p := repoFile(rel)
	if p == rel || !strings.HasPrefix(p, os.Getenv("XDG_CACHE_HOME")) {
		t.Fatalf("repoFile = %s, want a file under the cache", p)
	}
	b, err := os.ReadFile(p)
	if err != nil || !bytes.Equal(b, workers.Files[rel]) {
		t.Fatalf("%s: %v, or not the worker the binary carries", p, err)
	}
	if again := repoFile(rel); again != p {
		t.Errorf("a second call wrote elsewhere: %s", again)
	}
	if got := repoFile("examples/workers/nosuch.py"); got != "examples/workers/nosuch.py" {
		t.Errorf("a file nobody has: %s", got)
	}
}
