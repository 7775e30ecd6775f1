package faults

import (
	"math"
	"testing"

	"github.com/lockharness/lockharness/history"
)

func TestFollowedReadsTheScheduleOutOfTheHistory(t *testing.T) {
	ms := func(v float64) int64 { return int64(v * 1e6) }
	events := []history.Event{
		{Index: 0, Time: ms(900), Type: history.Invoke, Process: 0, Client: 0, F: history.Acquire, Key: "k", Token: "a"},
		{Index: 1, Time: ms(1000), Type: history.OK, Process: 0, Client: 0, F: history.Acquire, Key: "k", Token: "a"},
		{Index: 2, Time: ms(1001), Type: history.Info, Process: history.Nemesis, F: history.GrantSeen, Phase: history.Instant, Key: "k", Token: "a", Target: "n1"},
		{Index: 3, Time: ms(1175), Type: history.Info, Process: history.Nemesis, F: "partition-primary", Phase: history.Start, Target: "n1",
			Detail: "cut from its replicas and peers and client 2 175ms after client 0 acquired the lock, for 6.854s"},
		{Index: 4, Time: ms(2000), Type: history.Info, Process: history.Nemesis, F: "pause-node", Phase: history.Start, Target: "n2", Detail: "for 1s"},
		{Index: 5, Time: ms(4300), Type: history.Info, Process: history.Nemesis, F: "switch-master", Phase: history.Instant, Target: "n2"},
		{Index: 6, Time: ms(4400), Type: history.Info, Process: history.Nemesis, F: "partition-primary", Phase: history.End, Target: "n1", Detail: "healed"},
	}
	f := FollowedOf(events, "partition-primary:at=grant,pause-node", 3)
	if f.Nemesis != "partition-primary:at=grant,pause-node" || f.Seed != 3 || len(f.Faults) != 2 || len(f.Observed) != 1 || f.Observed[0].What != "switch-master" {
		t.Fatalf("%+v", f)
	}
	p := f.Faults[0]
	if p.Fault != "partition-primary" || p.Target != "n1" || p.End == nil || *p.End != 4.4 || p.EndDetail != "healed" || *p.EndEvent != 6 {
		t.Errorf("the partition: %+v", p)
	}
	if p.After == nil || p.After.Client != 0 || p.After.Event != 1 || math.Abs(p.After.Delay-0.175) > 1e-9 {
		t.Errorf("the partition followed %+v, want client 0's grant at event 1, 175 ms before", p.After)
	}
	if n := f.Faults[1]; n.End != nil || n.EndEvent != nil || n.After != nil {
		t.Errorf("a fault never healed that waited for nothing: %+v", n)
	}
}
