// Package reports turns a checked run into what people and scripts read: the
// run directory and store/latest, results.json (a stable contract), the
// one-screen console summary, the timeline, latency and rate plots, the
// run's index.html with a story per anomaly, and the store browser.
package reports

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// NewRunDir creates store/<name>/<YYYYMMDDTHHMMSS>/ (the name PathSafe; a -N suffix when
// two runs start in the same second) and points store/latest at it.
func NewRunDir(store, name string, now time.Time) (string, error) {
	dir, err := newStampDir(filepath.Join(store, PathSafe(name)), "", now)
	if err != nil {
		return "", err
	}
	if err := pointLatest(store, dir); err != nil {
		return "", err
	}
	return dir, nil
}

// NewSuiteDir creates store/suites/<YYYYMMDDTHHMMSS>/; store/latest keeps
// pointing at the newest run.
func NewSuiteDir(store string, now time.Time) (string, error) {
	return newStampDir(filepath.Join(store, "suites"), "", now)
}

// NewExploreDir creates store/explore/<name>-<YYYYMMDDTHHMMSS>/, with a -N
// suffix when searches started in the same second (the shards of one
// campaign do) share a name.
func NewExploreDir(store, name string, now time.Time) (string, error) {
	return newStampDir(filepath.Join(store, "explore"), PathSafe(name)+"-", now)
}

// PathSafe is name with every character but letters, digits, '.', '-' and
// '_' replaced by '_': a lock's name carries its options
// (redsync:setnx-on-extend:tries=1), and a colon or '=' in a directory
// name trips make, scp and other filesystems.
func PathSafe(name string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-', r == '_':
			return r
		}
		return '_'
	}, name)
}

func newStampDir(base, prefix string, now time.Time) (string, error) {
	if err := os.MkdirAll(base, 0o755); err != nil {
		return "", err
	}
	stamp := prefix + now.Format("20060102T150405")
	dir := filepath.Join(base, stamp)
	for i := 2; ; i++ {
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			return dir, nil
		}
		if !os.IsExist(err) {
			return "", err
		}
		dir = filepath.Join(base, fmt.Sprintf("%s-%d", stamp, i))
	}
}

// latestMu serialises pointLatest: runs going at once (repro --parallel)
// share its temporary name.
var latestMu sync.Mutex

// pointLatest swaps store/latest atomically: a new link, then a rename over
// the old one, so a reader never finds it missing.
func pointLatest(store, dir string) error {
	latestMu.Lock()
	defer latestMu.Unlock()
	rel, err := filepath.Rel(store, dir)
	if err != nil {
		return err
	}
	tmp := filepath.Join(store, fmt.Sprintf(".latest-%d", os.Getpid()))
	os.Remove(tmp)
	if err := os.Symlink(rel, tmp); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(store, "latest"))
}
