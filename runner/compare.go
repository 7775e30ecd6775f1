package runner

import (
	"fmt"
	"strings"
	"time"

	"github.com/lockharness/lockharness/cluster"
	"github.com/lockharness/lockharness/faults"
	"github.com/lockharness/lockharness/locks"
	"github.com/lockharness/lockharness/reports"
	"github.com/lockharness/lockharness/scenario"
)

// ComparePlan lists a comparison's runs: every lock under every nemesis,
// and under every ttl when more than one is given, for seeds 1 to seeds,
// each on the lock's own topology (its first) unless base names another.
// Rows are "lock × nemesis[ · ttl D]" (reports.CompareSep), so that
// reports.CompareOf lays them out as a matrix. A lock's runs without
// faults measure what it costs, so nemesis none is added when missing.
// base gives every other setting. A lock the registry lacks, a nemesis
// that does not parse, or one the lock's topology cannot run is refused,
// naming it.
func ComparePlan(lockNames, nemeses []string, ttls []time.Duration, seeds int, base scenario.Spec, topologyGiven bool) ([]Planned, error) {
	if len(lockNames) == 0 || len(nemeses) == 0 {
		return nil, fmt.Errorf("compare needs at least one lock and one nemesis, got locks %q and nemeses %q", lockNames, nemeses)
	}
	for _, list := range []struct {
		flag   string
		values []string
	}{{"--locks", lockNames}, {"--nemesis", nemeses}} {
		seen := map[string]bool{}
		for _, v := range list.values {
			if seen[v] {
				return nil, fmt.Errorf("%s names %s twice: each is a row or column of its own", list.flag, v)
			}
			seen[v] = true
		}
	}
	if seeds < 1 {
		return nil, fmt.Errorf("--seeds must be at least 1, got %d", seeds)
	}
	hasNone := false
	for _, n := range nemeses {
		hasNone = hasNone || n == faults.None
	}
	if !hasNone {
		nemeses = append([]string{faults.None}, nemeses...)
	}
	if len(ttls) == 0 {
		ttls = []time.Duration{base.TTL.D()}
	}
	var out []Planned
	for _, lock := range lockNames {
		recipe, _, _ := strings.Cut(lock, ":")
		r, err := locks.Lookup(recipe)
		if err != nil && lock != scenario.ExecLock {
			return nil, fmt.Errorf("--locks %q: %w", lock, err)
		}
		topology := base.Topology
		if home := cluster.Offering(r.Needs, r.Prefers); !topologyGiven && err == nil && len(home) > 0 {
			topology = home[0]
		}
		cl, err := cluster.Describe(topology)
		if err != nil {
			return nil, fmt.Errorf("--locks %s: %w", lock, err)
		}
		for _, nemesis := range nemeses {
			nm, err := faults.Parse(nemesis)
			if err != nil {
				return nil, fmt.Errorf("--nemesis %q: %w", nemesis, err)
			}
			if err := nm.Available(cl); err != nil {
				return nil, fmt.Errorf("--nemesis %s with --locks %s (on %s): %w", nemesis, lock, topology, err)
			}
			for _, ttl := range ttls {
				s := base
				s.Topology, s.Lock, s.Nemesis, s.TTL = topology, lock, nemesis, scenario.Duration(ttl)
				row := lock + reports.CompareSep + nemesis
				name := "compare-" + dirSafe(lock+"-"+nemesis)
				if len(ttls) > 1 {
					row += " · ttl " + ttl.String()
					name += "-ttl" + ttl.String()
				}
				s.Name = name
				for seed := 1; seed <= seeds; seed++ {
					s.Seed = int64(seed)
					if err := s.Validate(); err != nil {
						return nil, fmt.Errorf("%s seed %d: %w", row, seed, err)
					}
					// Without faults a run measures the lock's cost.
					out = append(out, Planned{Row: row, Spec: s, Alone: nemesis == faults.None})
				}
			}
		}
	}
	numberRows(out)
	return out, nil
}

// dirSafe spells a lock or nemesis as it is given (redsync:tries=1,
// partition+kill-node) in characters a run directory's name takes.
func dirSafe(s string) string {
	return strings.NewReplacer(":", "-", "=", "-", "+", "-", ",", "-").Replace(s)
}
