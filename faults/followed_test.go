package faults

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockharness/lockharness/history"
)

func TestFollowedReadsTheScheduleOutOfTheHistory(t *testing.T) {
	ms := func(v float64) int64 { return int64(v * 1e6) }
	events := []history.Event{
		{Index: 0, Time: ms(900), Type: history.Invoke, Process: 0, Client: 0, F: history.Acquire, Key: "k", Token: "a"},
		{Index: 1, Time: ms(1000), Type: history.OK, Process: 0, Client: 0, F: history.Acquire, Key: "k", Token: "a"},
		{Index: 2, Time: ms(1001), Type: history.Info, Process: history.Nemesis, F: history.GrantSeen, Phase: history.Instant, Key: "k", Token: "a", Target: "n1"},
		{Index: 3, Time: ms(1175), Type: history.Info, Process: history.Nemesis, F: "partition-primary", Phase: history.Start, Target: "n1",
			Detail: "cut from its replicas and peers and client 2 175ms after client 0 acquired the lock, for 6.854s", Options: "at=grant:clients=2:for=6.854s"},
		{Index: 4, Time: ms(2000), Type: history.Info, Process: history.Nemesis, F: "pause-node", Phase: history.Start, Target: "n2", Detail: "for 1s", Options: "for=1s:node=n2"},
		{Index: 5, Time: ms(4300), Type: history.Info, Process: history.Nemesis, F: "switch-master", Phase: history.Instant, Target: "n2"},
		{Index: 6, Time: ms(4400), Type: history.Info, Process: history.Nemesis, F: "partition-primary", Phase: history.End, Target: "n1", Detail: "healed"},
	}
	history.Upgrade(events)
	f := FollowedOf(events, "partition-primary:at=grant,pause-node", 3, 500*time.Millisecond)
	if f.Nemesis != "partition-primary:at=grant,pause-node" || f.Seed != 3 || f.From != 0.5 || len(f.Faults) != 2 || len(f.Observed) != 1 || f.Observed[0].What != "switch-master" {
		t.Fatalf("%+v", f)
	}
	p := f.Faults[0]
	if p.Fault != "partition-primary" || p.Target != "n1" || p.End == nil || *p.End != 4.4 || *p.EndEvent != 6 {
		t.Errorf("the partition: %+v", p)
	}
	if p.After == nil || p.After.Client != 0 || p.After.Event != 1 || math.Abs(p.After.Delay-0.175) > 1e-9 {
		t.Errorf("the partition followed %+v, want client 0's grant at event 1, 175 ms before", p.After)
	}
	if n := f.Faults[1]; n.End != nil || n.EndEvent != nil || n.After != nil {
		t.Errorf("a fault never healed that waited for nothing: %+v", n)
	}

	steps, err := f.Steps()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"partition-primary:at=grant:clients=2:for=6.854s 175ms after a grant at 0.500s", "pause-node:for=1s:node=n2 at 1.500s"}
	if len(steps) != 2 || steps[0].String() != want[0] || steps[1].String() != want[1] {
		t.Errorf("steps %v, want %q", steps, want)
	}
	f.Faults[1].Options = "for=1s:nodes=n2"
	if _, err := f.Steps(); err == nil || !strings.Contains(err.Error(), `fault 2 of the schedule`) || !strings.Contains(err.Error(), `unknown option "nodes"`) {
		t.Errorf("an option no longer taken: %v", err)
	}
}

// A schedule.json from before schedules recorded their origin is refused,
// not followed with every time off by the topology's start.
func TestOldSchedulesAreRefused(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, FollowedFile), []byte(`{"nemesis":"kill-node","seed":1,"faults":[{"fault":"kill-node","start_s":1.5,"end_s":1.6}]}`), 0o644)
	if _, err := ReadFollowed(dir); !errors.Is(err, ErrOldSchedule) {
		t.Errorf("an old schedule: %v", err)
	}
	os.WriteFile(filepath.Join(dir, FollowedFile), []byte(`{"nemesis":"kill-node","seed":1,"from_s":0.25,"faults":[{"fault":"kill-node","start_s":1.5,"options":"delay=5ms"}]}`), 0o644)
	if f, err := ReadFollowed(dir); err != nil || f.From != 0.25 || f.Seed != 1 || len(f.Faults) != 1 || f.Faults[0].Options != "delay=5ms" {
		t.Errorf("a schedule read back: %+v %v", f, err)
	}
	f := Followed{From: 1, Faults: []FollowedFault{{Fault: "kill-node", Start: 1e300}}}
	if _, err := f.Steps(); err == nil || !strings.Contains(err.Error(), "not times of a run") {
		t.Errorf("a time past any run: %v", err)
	}
	if _, err := ParseOne("none"); err == nil || !strings.Contains(err.Error(), "want a fault, not none") {
		t.Errorf("none: %v", err)
	}
}
