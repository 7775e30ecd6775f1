// Package search is searching over fault schedules: a recorded run read
// back (Recorded), replayed on its own schedule (ReplaySpec), and shrunk
// to the smallest scenario that still finds its anomaly (Shrink,
// ShrinkRecorded); explore's search for schedules that break a lock joins
// it. It runs what it tries through runner, as any run is run.
package search

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/faults"
	"github.com/lockharness/lockharness/reports"
	"github.com/lockharness/lockharness/scenario"
)

// Recorded is a finished run read back from its directory: its spec, seed
// included, its results and the fault schedule it followed.
type Recorded struct {
	Dir      string
	Spec     scenario.Spec
	Results  reports.Results
	Followed faults.Followed
}

// ReadRecorded reads a run directory written by Run. A directory without
// results.json or schedule.json (a history checked offline, a run from
// before runs kept their schedule) is refused, saying which is missing.
func ReadRecorded(dir string) (Recorded, error) {
	r := Recorded{Dir: dir}
	var err error
	if r.Results, err = reports.ReadResults(dir); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return r, fmt.Errorf("%s is not a run directory: it has no results.json", dir)
		}
		return r, err
	}
	if len(r.Results.Spec) == 0 || string(r.Results.Spec) == "null" {
		return r, fmt.Errorf("%s: results.json has no spec: the history was recorded elsewhere, so there is nothing to run again", dir)
	}
	if err := json.Unmarshal(r.Results.Spec, &r.Spec); err != nil {
		return r, fmt.Errorf("%s: the spec in results.json: %w", dir, err)
	}
	r.Spec.Seed = r.Results.Seed
	if e := r.Results.Error; e != nil && e.Stage == reports.StageStart {
		// Such a run followed no schedule, and keeps none.
		return r, fmt.Errorf("%s: the run failed before its clients started (%s): there is nothing to run again", dir, e.Message)
	}
	if r.Followed, err = faults.ReadFollowed(dir); err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, faults.ErrOldSchedule) {
			return r, fmt.Errorf("%s: its %s is missing or older than replays: run it again (%s) and replay that run", dir, faults.FollowedFile, r.Results.Command)
		}
		return r, err
	}
	return r, nil
}

// Kinds are the anomalies the run found, in checker.AnomalyNames order.
func (r Recorded) Kinds() []string { return kindsOf(r.Results) }

func kindsOf(res reports.Results) []string {
	var kinds []string
	for _, name := range checker.AnomalyNames {
		if res.Anomalies[name] > 0 {
			kinds = append(kinds, name)
		}
	}
	return kinds
}

// Found says what a run found, as replay and shrink print it: "valid",
// or the verdict and the anomalies it counted.
func Found(res reports.Results) string {
	var parts []string
	for _, name := range kindsOf(res) {
		parts = append(parts, fmt.Sprintf("%s %d", name, res.Anomalies[name]))
	}
	if len(parts) == 0 {
		return res.Valid.String()
	}
	return res.Valid.String() + ": " + strings.Join(parts, ", ")
}

// Reproduces reports whether a run found again what kinds name: every one
// of them, or, with none, a valid verdict again.
func Reproduces(res reports.Results, kinds []string) bool {
	if res.Error != nil || res.Interrupted {
		return false
	}
	if len(kinds) == 0 {
		return res.Valid == checker.Valid
	}
	for _, k := range kinds {
		if res.Anomalies[k] == 0 {
			return false
		}
	}
	return true
}

// ReplaySpec is the recorded run's spec, seed included, set to follow the
// schedule the run followed: each fault on its target (the one it drew;
// one it found by waiting, the holder, it finds again the same way), for
// as long, at the same time from the start of the schedule or as long
// after a grant. Its runs are named NAME-replay.
func (r Recorded) ReplaySpec() (scenario.Spec, error) {
	s := r.Spec
	steps, err := scenario.StepsOf(r.Followed)
	if err != nil {
		return s, fmt.Errorf("%s: %w", filepath.Join(r.Dir, faults.FollowedFile), err)
	}
	s.Schedule = steps
	if len(steps) == 0 {
		s.Nemesis = faults.None // it followed none: draw none either
	}
	s.Name = replayName(s.Name)
	return s, nil
}

// ReplaySuffix ends the names of replayed runs.
const ReplaySuffix = "-replay"

func replayName(name string) string {
	if strings.HasSuffix(name, ReplaySuffix) {
		return name
	}
	return name + ReplaySuffix
}
