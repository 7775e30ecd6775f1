package faults

import (
	"context"
	"errors"
	"fmt"
	"image/color"
	"math/rand"
	"time"

	"github.com/lockharness/lockharness/cluster"
	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/internal/options"
)

// The primary-side faults of a topology with failover. Each acts on
// whichever node is primary when it starts, holds long enough for the
// topology to fail over (for sentinel: down-after 1 s plus the election),
// heals, and waits for the topology to settle before the next fault.

var (
	withFailover    = []cluster.Capability{cluster.Failover}
	withReplication = []cluster.Capability{cluster.Replication}
	// withFailoverOf: a failover that promotes a replica fed through links
	// the network can cut.
	withFailoverOf = []cluster.Capability{cluster.Replication, cluster.Failover}
)

// failoverFor is the for option of the primary faults.
var failoverFor = forOpt("5-7 s, long enough for a failover")

// failoverHold is long enough for the topology to notice and promote.
func failoverHold(opts options.Values, rng *rand.Rand) time.Duration {
	return hold(opts, rng, 5*time.Second, 7*time.Second)
}

// settle waits, outside the fault window, until the topology has a
// primary for every key again (Cluster.Settle), so the next fault starts
// from a working topology. An ending run does not wait: it settles once
// more before its final check.
func settle(ctx context.Context, env *Env) {
	if err := env.Cluster.Settle(ctx, 30*time.Second); err != nil && ctx.Err() == nil {
		env.Log("warning: the topology did not settle after the fault: %v", err)
	}
}

// primary is the node that takes the lock key's writes now.
func primary(ctx context.Context, env *Env) (cluster.Node, error) {
	p, err := env.Cluster.Primary(ctx, env.Key)
	if err != nil {
		return nil, fmt.Errorf("finding the primary: %w", err)
	}
	return p, nil
}

// primaryTarget names the primary a fault hits for the history: on a
// cluster with the shard it serves, the lock key's.
func primaryTarget(env *Env, p cluster.Node) history.Facts {
	f := history.Facts{Nodes: []string{p.Name()}}
	if shard := env.Cluster.ShardOf(env.Key); shard != "" {
		f.Key, f.Shard = env.Key, shard
	}
	return f
}

// partitionPrimary cuts the primary's internal links, so the replicas and
// the sentinels (a cluster's peers, both ways) lose it, and the links to it
// of some clients; the other clients still reach it and keep being granted
// locks that never replicate while the topology promotes a replica.
var partitionPrimary = Fault{
	Name:            "partition-primary",
	CutsClientLinks: true,
	Drawing:         history.Drawing{Colour: color.NRGBA{R: 110, G: 40, B: 80, A: 70}, Legend: "primary cut off"},
	Scored:          []Scorecard{ScoreCluster},
	Summary:         "cut the lock's primary off from its replicas, its monitors (sentinels; a cluster's bus) and some clients for 5-7 s",
	Needs:           withFailoverOf,
	Waits:           true,
	Options: []options.Spec{failoverFor, clientsOpt, {Name: optAt, Kind: options.Choice, Choices: []string{atRelease, atGrant},
		Summary: "release: shortly before the holder releases (default); grant: as soon as a client holds the lock"}},
	Run: func(ctx context.Context, env *Env, rng *rand.Rand, opts options.Values) error {
		p, err := primary(ctx, env)
		if err != nil {
			return err
		}
		internal, err := env.InternalLinks(p.Name())
		if err != nil {
			return err
		}
		hold := failoverHold(opts, rng)
		// Cut shortly before the current holder lets go (or, at=grant,
		// while it holds): its release and the next grant then happen on
		// a primary whose replication is held back, before the topology
		// promotes a replica that still carries the old holder's key until
		// it expires. The holder keeps its path to the primary so that its
		// release lands there.
		var holder int
		var after *history.AfterGrant
		if opts.Get(optAt, atRelease) == atGrant {
			holder, after = awaitHeld(ctx, env)
		} else {
			holder, after = awaitBeforeRelease(ctx, env)
		}
		if ctx.Err() != nil {
			return nil
		}
		slots := pickClientsBut(opts, rng, env.NumClients, holder)
		links := append([]*Link(nil), internal...)
		for _, slot := range slots {
			links = append(links, env.ClientLink(slot, p.Name()))
		}
		defer healAll(links)
		for _, l := range links {
			if err := l.Blackhole(); err != nil {
				return err
			}
		}
		facts := primaryTarget(env, p)
		facts.Clients, facts.After, facts.HoldNs = slots, after, int64(hold)
		end := env.Begin(facts, fmt.Sprintf("cut from its replicas and peers and %s %s, for %v", history.ClientWords(slots), afterWords(after, "(no grant seen)"), hold))
		sleep(ctx, hold)
		healAll(links)
		end("healed")
		settle(ctx, env)
		return nil
	},
}

// The at option of partition-primary: when the cut comes.
const (
	optAt     = "at"
	atRelease = "release"
	atGrant   = "grant"
)

// awaitHeld waits (at most 3 TTLs) until a client holds the lock and
// returns it (-1 if none was seen) and its grant.
func awaitHeld(ctx context.Context, env *Env) (int, *history.AfterGrant) {
	if slot, held, ok := grantWaited(ctx); ok {
		return slot, afterGrant(slot, held)
	}
	wctx, cancel := context.WithTimeout(ctx, 3*env.TTL)
	defer cancel()
	slot, held, err := env.Clients.AwaitHolder(wctx)
	if err != nil {
		return -1, nil
	}
	return slot, afterGrant(slot, held)
}

// awaitBeforeRelease waits (at most 3 TTLs) for a grant, then until shortly
// before that holder releases: a second, or, where a cut-off primary soon
// refuses writes (CutOffWrites), a third of that time, so that the next grant
// still lands on it. It returns the holder (-1 if none was seen) and says
// its grant.
func awaitBeforeRelease(ctx context.Context, env *Env) (int, *history.AfterGrant) {
	if slot, held, ok := grantWaited(ctx); ok {
		return slot, afterGrant(slot, held)
	}
	wctx, cancel := context.WithTimeout(ctx, 3*env.TTL)
	defer cancel()
	ahead := time.Second
	if serves := env.Cluster.CutOffWrites(); serves > 0 {
		ahead = min(ahead, serves/3)
	}
	// The holder of now will do if it still has that long to hold;
	// otherwise the next one.
	slot, held, err := env.Clients.AwaitHolder(wctx)
	if err == nil && held > env.Hold-ahead {
		slot, err = env.Clients.AwaitGrant(wctx)
		held = 0
	}
	if err != nil {
		return -1, nil
	}
	lead := max(env.Hold-ahead-held, 0)
	sleep(ctx, lead)
	return slot, afterGrant(slot, held+lead)
}

// splitBrain partitions the primary and some clients from the majority:
// the replicas, the sentinels and the other clients. The sentinels promote
// a replica; the minority's clients never hear of it and keep using the old
// primary, so both sides grant the lock until the partition heals and the
// old primary is demoted.
var splitBrain = Fault{
	Name:            "split-brain",
	CutsClientLinks: true,
	Drawing:         history.Drawing{Colour: color.NRGBA{R: 195, G: 65, B: 225, A: 70}, Legend: "primary's side split off"},
	Summary:         "partition the lock's primary and some clients from the replicas, monitors (sentinels; a cluster's bus) and other clients for 5-7 s",
	Needs:           withFailoverOf,
	Options:         []options.Spec{failoverFor, clientsOpt},
	Run: func(ctx context.Context, env *Env, rng *rand.Rand, opts options.Values) error {
		p, err := primary(ctx, env)
		if err != nil {
			return err
		}
		internal, err := env.InternalLinks(p.Name())
		if err != nil {
			return err
		}
		minority := pickClients(opts, rng, env.NumClients)
		inMinority := map[int]bool{}
		for _, c := range minority {
			inMinority[c] = true
		}
		hold := failoverHold(opts, rng)
		links := append([]*Link(nil), internal...)
		for slot := 0; slot < env.NumClients; slot++ {
			for _, l := range env.ClientLinks(slot) {
				toPrimary := l.Name == env.Cluster.ClientLink(slot, p.Name())
				if inMinority[slot] != toPrimary {
					links = append(links, l)
				}
			}
		}
		defer healAll(links)
		for _, l := range links {
			if err := l.Blackhole(); err != nil {
				return err
			}
		}
		facts := primaryTarget(env, p)
		facts.Clients, facts.HoldNs = minority, int64(hold)
		end := env.Begin(facts, fmt.Sprintf("with %s on the minority side, for %v", history.ClientWords(minority), hold))
		sleep(ctx, hold)
		healAll(links)
		end("healed")
		settle(ctx, env)
		return nil
	},
}

func healAll(links []*Link) error {
	var errs []error
	for _, l := range links {
		errs = append(errs, l.Heal())
	}
	return errors.Join(errs...)
}

// killPrimary crashes the primary and restarts it after the sentinels have
// had time to promote a replica; it comes back as a replica of the new one.
var killPrimary = Fault{
	Name:    "kill-primary",
	Drawing: history.Drawing{Colour: color.NRGBA{R: 195, G: 55, B: 135, A: 70}, Legend: "primary killed"},
	Summary: "SIGKILL the primary; restart it 5-7 s later",
	Scored:  []Scorecard{ScoreFailover},
	Needs:   withFailover,
	Options: []options.Spec{failoverFor},
	Run: func(ctx context.Context, env *Env, rng *rand.Rand, opts options.Values) error {
		return onPrimary(ctx, env, rng, opts, "restart in", restarted, true,
			cluster.Node.Kill, func(n cluster.Node) error { return n.Restart(context.Background()) })
	},
}

// pausePrimary freezes the primary long enough to be failed over.
var pausePrimary = Fault{
	Name:    "pause-primary",
	Drawing: history.Drawing{Colour: color.NRGBA{R: 227, G: 119, B: 194, A: 70}, Legend: "primary stopped"},
	Summary: "SIGSTOP the primary for 5-7 s, then SIGCONT",
	Needs:   withFailover,
	Options: []options.Spec{failoverFor},
	Run: func(ctx context.Context, env *Env, rng *rand.Rand, opts options.Values) error {
		return onPrimary(ctx, env, rng, opts, "for", func(*Env, cluster.Node, error) (string, history.Facts) { return "resumed", history.Facts{} }, false,
			cluster.Node.Pause, cluster.Node.Resume)
	},
}

// onPrimary injects a process fault on the current primary, holds it long
// enough for a failover, undoes it (also when the run ends) and settles.
// kills: once inject returns the node certainly serves nobody until undo
// (a kill waits for the exit; a SIGSTOP may land a moment later, so a
// pause records no outage).
func onPrimary(ctx context.Context, env *Env, rng *rand.Rand, opts options.Values, holdWord string, healed func(*Env, cluster.Node, error) (string, history.Facts), kills bool, inject, undo func(cluster.Node) error) error {
	p, err := primary(ctx, env)
	if err != nil {
		return err
	}
	hold := failoverHold(opts, rng)
	wasUp := p.Running()
	if err := inject(p); err != nil {
		return err
	}
	down := env.Rec.Now()
	facts := primaryTarget(env, p)
	facts.HoldNs = int64(hold)
	end := env.Begin(facts, holdWord+" "+hold.String())
	sleep(ctx, hold)
	if kills {
		env.DownIf(wasUp, p, down)
	}
	err = undo(p)
	end(healed(env, p, err))
	settle(ctx, env)
	return err
}

// replicationLag slows the primary's internal address, and with it
// replication, while staying below the sentinels' down-after so no failover
// follows.
var replicationLag = Fault{
	Name:    "replication-lag",
	Drawing: history.Drawing{Colour: color.NRGBA{R: 205, G: 175, B: 125, A: 80}, Legend: "replication slowed"},
	Summary: "add 50-200 ms each way on the primary's internal address for 1-2 TTLs",
	Needs:   withReplication,
	Options: []options.Spec{
		{Name: optDelay, Kind: options.Duration, Summary: "the delay each way (default 50-200ms)"},
		forOpt("1-2 TTLs"),
	},
	Run: func(ctx context.Context, env *Env, rng *rand.Rand, opts options.Values) error {
		p, err := primary(ctx, env)
		if err != nil {
			return err
		}
		delay := pinnedDuration(opts, optDelay, func() time.Duration { return between(rng, 50*time.Millisecond, 200*time.Millisecond) })
		hold := hold(opts, rng, env.TTL, 2*env.TTL)
		links, err := env.InternalLinks(p.Name())
		if err != nil {
			return err
		}
		defer healAll(links)
		for _, l := range links {
			if err := l.Delay(delay); err != nil {
				return err
			}
		}
		facts := primaryTarget(env, p)
		facts.HoldNs = int64(hold)
		end := env.Begin(facts, fmt.Sprintf("%v each way for %v", delay, hold))
		sleep(ctx, hold)
		healAll(links)
		end("healed")
		return nil
	},
}

// failover asks the sentinels to fail over at once (SENTINEL FAILOVER), the
// way an operator does before maintenance.
var failover = Fault{
	Name:    "failover",
	Drawing: history.Drawing{Colour: color.NRGBA{R: 90, G: 105, B: 30, A: 70}, Legend: "failover asked for"},
	Scored:  []Scorecard{ScoreLibraries, ScoreFailover},
	Summary: "ask the topology to fail the lock's primary over now (SENTINEL FAILOVER; on a cluster CLUSTER FAILOVER), then wait for the new primary",
	Needs:   withFailover,
	Run: func(ctx context.Context, env *Env, rng *rand.Rand, _ options.Values) error {
		p, err := primary(ctx, env)
		if err != nil {
			return err
		}
		return askFailover(ctx, env, p, "", "the topology's own failover")
	},
}

// askFailover asks the topology to fail p over in mode, then waits for a
// new primary of the lock key and for the topology to settle.
func askFailover(ctx context.Context, env *Env, p cluster.Node, mode, what string) error {
	end := env.Begin(primaryTarget(env, p), what)
	if err := env.Cluster.Failover(ctx, env.Key, mode); err != nil {
		end("refused: "+err.Error(), history.Facts{Failed: "refused: " + err.Error()})
		return nil
	}
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if q, err := env.Cluster.Primary(ctx, env.Key); err == nil && q.Name() != p.Name() {
			end("promoted " + q.Name())
			settle(ctx, env)
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	end("no new primary", history.Facts{Failed: "no new primary"})
	return nil
}

// roleFacts are a role change as its event's facts.
func roleFacts(ch cluster.RoleChange) history.Facts {
	f := history.Facts{Replaced: ch.From, Role: ch.Role, WasRole: ch.WasRole, Slots: ch.Slots, Epoch: ch.Epoch}
	if ch.To != "" {
		f.Nodes = []string{ch.To}
	}
	return f
}

// WatchRoles records every primary switch the topology shows as an instant
// nemesis event (switch-master, slot-owner, role) until stop, which returns
// once nothing more will be recorded: a run stops it before it reads its
// history. A topology without failover has none.
func WatchRoles(cl *cluster.Cluster, rec *history.Recorder, log func(string, ...any)) (stop func()) {
	if !cl.WatchesRoles() {
		return func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	changes, release, err := cl.WatchPrimary(ctx)
	if err != nil {
		cancel()
		log("warning: cannot watch role changes: %v", err)
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ch := range changes {
			facts := roleFacts(ch)
			e := rec.Record(history.Event{Type: history.Info, Process: history.Nemesis, F: ch.Event,
				Phase: history.Instant, Target: facts.Subject(), Detail: ch.Detail, Facts: &facts})
			log("%7.3fs  %-13s %s", e.At().Seconds(), ch.Event, ch.Detail)
		}
	}()
	return func() {
		cancel()
		<-done
		release()
	}
}
