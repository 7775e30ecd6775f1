package scenario

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/lockharness/lockharness/faults"
)

// PlannedFile is where a run given a schedule (Spec.Schedule) keeps it:
// the steps as they were given, which its re-run command follows.
const PlannedFile = "planned.json"

// EncodePlanned is a schedule as PlannedFile keeps it.
func EncodePlanned(steps []Step) ([]byte, error) {
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
