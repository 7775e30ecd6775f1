// Package version says what the harness is made of: its own version from
// the build information, the Go toolchain that built it, the lock libraries
// compiled in, and the redis-server it would run.
package version

import (
	"os/exec"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
)

// commit is the checkout the binary was built from, as `git describe
// --always --dirty` says it; the Makefile sets it with -ldflags -X for
// builds whose build information carries no VCS stamp (-buildvcs=false).
var commit string

// Harness is the harness's version: the module version the binary was
// built at, or "(devel)" with the commit and a "+dirty" mark for a build
// from a checkout.
func Harness() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	rev, modified := commit, ""
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev != "" && v == "(devel)" {
		if len(rev) > 12 && rev != commit {
			rev = rev[:12]
		}
		v += " " + rev
		if modified == "true" {
			v += "+dirty"
		}
	}
	return v
}

// Go is the Go version that built the binary.
func Go() string { return runtime.Version() }

// Module is the version of a Go module compiled into the binary, or "" if
// it is not.
func Module(path string) string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	for _, d := range bi.Deps {
		if d.Path == path {
			if d.Replace != nil {
				return d.Replace.Version + " (replacing " + d.Version + ")"
			}
			return d.Version
		}
	}
	return ""
}

var redisOnce = sync.OnceValues(func() (string, error) {
	path, err := exec.LookPath("redis-server")
	if err != nil {
		return "", err
	}
	out, err := exec.Command(path, "--version").Output()
	if err != nil {
		return "", err
	}
	// "Redis server v=7.0.15 sha=00000000:0 malloc=jemalloc-5.3.0 bits=64 build=..."
	for _, f := range strings.Fields(string(out)) {
		if v, ok := strings.CutPrefix(f, "v="); ok {
			return v + " (" + path + ")", nil
		}
	}
	return strings.TrimSpace(string(out)) + " (" + path + ")", nil
})

// RedisServer is the version of the redis-server on PATH, with its path.
func RedisServer() (string, error) { return redisOnce() }
