package faults

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"time"

	"github.com/lockharness/lockharness/history"
)

// FollowedFile is where a run keeps the schedule it followed.
const FollowedFile = "schedule.json"

// Followed is the fault schedule a run actually followed, as its history
// recorded it: every fault window, with its target and its times relative
// to the run, and for a fault that waited for a grant (just after a grant,
// at=grant) the grant it followed and how long after it the fault began;
// then what the harness observed (promotions). It is the record of the
// schedule a replay sets out to repeat.
type Followed struct {
	Nemesis  string          `json:"nemesis"`
	Seed     int64           `json:"seed"`
	Faults   []FollowedFault `json:"faults"`
	Observed []Observed      `json:"observed,omitempty"`
}

// FollowedFault is one fault window. End is nil for one never healed.
type FollowedFault struct {
	Fault      string   `json:"fault"`
	Target     string   `json:"target,omitempty"`
	Start      float64  `json:"start_s"`
	End        *float64 `json:"end_s"`
	Detail     string   `json:"detail,omitempty"`
	EndDetail  string   `json:"end_detail,omitempty"`
	StartEvent int      `json:"start_event"`
	EndEvent   *int     `json:"end_event"`
	After      *Grant   `json:"after,omitempty"`
}

// Grant is the grant a fault waited for: whose, its completion event and
// time, and how long after it the fault began.
type Grant struct {
	Client int     `json:"client"`
	Event  int     `json:"event"`
	At     float64 `json:"at_s"`
	Delay  float64 `json:"delay_s"`
}

// Observed is something the harness saw happen rather than caused.
type Observed struct {
	What   string  `json:"f"`
	Target string  `json:"target,omitempty"`
	At     float64 `json:"at_s"`
	Event  int     `json:"event"`
}

// waitedFor finds the client whose grant a fault's detail says it
// followed ("client 2 just acquired", "175ms after client 0 acquired the
// lock").
var waitedFor = regexp.MustCompile(`client (\d+)(?: just)? acquired`)

// FollowedOf reads the schedule a run followed out of its history.
func FollowedOf(events []history.Event, nemesis string, seed int64) Followed {
	f := Followed{Nemesis: nemesis, Seed: seed, Faults: []FollowedFault{}}
	for _, w := range history.FaultWindows(events) {
		e := &events[w.Start]
		ff := FollowedFault{Fault: e.F, Target: e.Target, Start: secs(e.Time), Detail: e.Detail, StartEvent: e.Index}
		if w.End >= 0 {
			end := &events[w.End]
			at, idx := secs(end.Time), end.Index
			ff.End, ff.EndEvent, ff.EndDetail = &at, &idx, end.Detail
		}
		if m := waitedFor.FindStringSubmatch(e.Detail); m != nil {
			client, _ := strconv.Atoi(m[1])
			ff.After = lastGrant(events[:w.Start], client, e.Time)
		}
		f.Faults = append(f.Faults, ff)
	}
	for i := range events {
		if e := &events[i]; e.IsNemesis() && e.Phase == history.Instant && e.F != history.GrantSeen {
			f.Observed = append(f.Observed, Observed{What: e.F, Target: e.Target, At: secs(e.Time), Event: e.Index})
		}
	}
	return f
}

// secs is a history time in seconds, to the microsecond.
func secs(t int64) float64 { return math.Round(time.Duration(t).Seconds()*1e6) / 1e6 }

// lastGrant is client's last granted acquire among events, before at.
func lastGrant(events []history.Event, client int, at int64) *Grant {
	for i := len(events) - 1; i >= 0; i-- {
		e := &events[i]
		if !e.IsNemesis() && e.Client == client && e.F == history.Acquire && e.Type == history.OK {
			return &Grant{Client: client, Event: e.Index, At: secs(e.Time), Delay: secs(at - e.Time)}
		}
	}
	return nil
}

// WriteFollowed writes the schedule into a run directory.
func WriteFollowed(dir string, f Followed) error {
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, FollowedFile), append(b, '\n'), 0o644)
}
