package faults

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockharness/lockharness/cluster"
	"github.com/lockharness/lockharness/history"
)

// probeTimeout bounds one node's answer to a grant probe: a paused or
// killed node answers nothing, and that is what the probe records.
const probeTimeout = 150 * time.Millisecond

// probeWorkers is how many grants are probed at once.
const probeWorkers = 4

// probeQueue is how many grants may wait for their probe; past it, grants
// go unprobed (a pipeline-rate run grants thousands a second), and the log
// says how many.
const probeQueue = 64

// WatchGrants records, for each grant the history records, where the
// harness finds it just after: what every data node holds under the
// lock's key (storeKey of the grant's key), as a GrantSeen event, so that a
// report can say which node granted a lease and whether it had replicated
// when a replica was promoted. Probes go over the harness's own path,
// never the clients' faulted links. A topology of one node has nothing to
// tell apart and is not probed, nor is one of servers the probes cannot ask
// (etcd: what a member holds is Raft's to agree on). stop returns once nothing more will be
// recorded: a run stops it before it reads its history.
func WatchGrants(cl *cluster.Cluster, rec *history.Recorder, storeKey func(string) string, log func(string, ...any)) (stop func()) {
	if len(cl.Nodes) < 2 || !cl.SpeaksRedis() {
		return func() {}
	}
	grants := make(chan history.Event, probeQueue)
	// The watch runs under the recorder's lock, and unwatch takes it: once
	// unwatch returns, nothing sends on grants or counts dropped.
	dropped := 0
	unwatch := rec.Watch(func(e history.Event) {
		if e.F != history.Acquire || e.Type != history.OK || e.Token == "" {
			return
		}
		select {
		case grants <- e:
		default:
			dropped++
		}
	})
	// A few probes at once, so that one paused node, which costs each
	// probe its whole timeout, does not leave the rest far behind their
	// grants (the reports judge how late each probe came).
	var probers sync.WaitGroup
	for range probeWorkers {
		probers.Add(1)
		go func() {
			defer probers.Done()
			for g := range grants {
				facts := history.Facts{Grant: &history.ProbedGrant{Client: g.Client, Event: g.Index}, Copies: probeGrant(cl, storeKey(g.Key), g.Token)}
				rec.Record(history.Event{Type: history.Info, Process: history.Nemesis, F: history.GrantSeen,
					Phase: history.Instant, Key: g.Key, Token: g.Token, Target: strings.Join(facts.Holders(), ","),
					Detail: fmt.Sprintf("client %d's grant (event %d): %s", g.Client, g.Index, facts.AnswerWords()), Facts: &facts})
			}
		}()
	}
	return func() {
		unwatch()
		close(grants)
		probers.Wait()
		if dropped > 0 {
			log("%d grants came faster than they could be probed and were not: their reports name no node", dropped)
		}
	}
}

// isTimeout reports whether err is a network timeout.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// probeGrant asks every data node, at once, for key and for its role, and
// returns what each answered (history.Copy), in the topology's order.
func probeGrant(cl *cluster.Cluster, key, token string) []history.Copy {
	copies := make([]history.Copy, len(cl.Nodes))
	var wg sync.WaitGroup
	for i, n := range cl.Nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
			defer cancel()
			// READONLY lets a cluster replica answer for its shard (and is
			// refused, harmlessly, by a node outside a cluster).
			vals, errs := cl.DoAll(ctx, n, []any{"READONLY"}, []any{"GET", key}, []any{"ROLE"})
			v, err := vals[1], errs[1]
			s, _ := v.(string)
			c := history.Copy{Node: n.Name()}
			if parts, ok := vals[2].([]any); ok && errs[2] == nil && len(parts) > 0 {
				if name, ok := parts[0].(string); ok {
					c.Role = strings.NewReplacer("master", "primary", "slave", "replica").Replace(name)
				}
			}
			switch {
			case errors.Is(err, redis.Nil):
				c.Holds = history.HoldsAbsent
			case err != nil && strings.HasPrefix(err.Error(), "MOVED"):
				c.Holds = history.HoldsUnowned
			case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
				c.Holds = history.HoldsSilent
			case err != nil:
				c.Holds, c.Answer = history.HoldsError, strings.SplitN(err.Error(), "\n", 2)[0]
			case s == token || strings.Contains(s, token):
				c.Holds = history.HoldsToken
			default:
				c.Holds = history.HoldsOther
			}
			copies[i] = c
		}()
	}
	wg.Wait()
	return copies
}
