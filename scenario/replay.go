package scenario

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/faults"
	"github.com/lockharness/lockharness/reports"
)

// Recorded is a finished run read back from its directory: its spec, seed
// included, its results and the fault schedule it followed.
type Recorded struct {
	Dir      string
	Spec     Spec
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
func (r Recorded) ReplaySpec() (Spec, error) {
	s := r.Spec
	steps, err := StepsOf(r.Followed)
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

// PlannedFile is where a run given a schedule (Spec.Schedule) keeps it:
// the steps as they were given, which its re-run command follows.
const PlannedFile = "planned.json"

// encodePlanned is a schedule as PlannedFile keeps it.
func encodePlanned(steps []Step) ([]byte, error) {
	b, err := json.MarshalIndent(steps, "", "  ")
	return append(b, '\n'), err
}

// ReadSchedule reads a schedule for `harness run --schedule`: the one a
// run followed (its schedule.json, or the run directory), or the one a
// run was given (its planned.json).
func ReadSchedule(path string) ([]Step, error) {
	dir := path
	st, err := os.Stat(path)
	switch {
	case filepath.Base(path) == PlannedFile:
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		var steps []Step
		if err := json.Unmarshal(b, &steps); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if _, _, err := scheduleSteps(steps); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return steps, nil
	case filepath.Base(path) == faults.FollowedFile:
		dir = filepath.Dir(path)
	case err == nil && !st.IsDir():
		return nil, fmt.Errorf("%s: want a run's %s or %s, or its run directory", path, faults.FollowedFile, PlannedFile)
	}
	f, err := faults.ReadFollowed(dir)
	if err != nil {
		return nil, err
	}
	steps, err := StepsOf(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(steps) == 0 {
		return nil, fmt.Errorf("%s: the run followed no faults, so there is no schedule to follow", path)
	}
	return steps, nil
}
