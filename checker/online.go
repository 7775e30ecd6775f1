package checker

import (
	"fmt"
	"strings"

	"github.com/lockharness/lockharness/history"
)

// OnlineAnomalies are the anomalies an audit of a history still being
// recorded can be certain of: what the rest of the run records cannot undo
// them. A lost update can (the counter's last write decides), a stuck lock
// is judged after the run, and a refused write rests on no other grant
// being live, which an acquire or extend still outstanding may yet undo,
// so none of them is among them.
var OnlineAnomalies = []string{DoubleGrant, StaleWrite, ForeignRelease, ExpiredWrite, PhantomGrant}

// ParseAnomalies reads a list of online anomalies, comma-separated, or
// "any" for all of them.
func ParseAnomalies(s string) ([]string, error) {
	if s == "any" {
		return OnlineAnomalies, nil
	}
	var out []string
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		ok := false
		for _, a := range OnlineAnomalies {
			ok = ok || a == name
		}
		if !ok {
			why := "is not an anomaly"
			for _, a := range AnomalyNames {
				if a == name {
					why = "cannot be certain before the run ends"
				}
			}
			return nil, fmt.Errorf("%q %s; valid: %s, any", name, why, strings.Join(OnlineAnomalies, ", "))
		}
		out = append(out, name)
	}
	return out, nil
}

// Certain is an anomaly an online audit is certain of.
type Certain struct {
	Anomaly   string
	Narrative string
}

// AuditPrefix audits the history recorded up to now (the recorder's time
// when the events were taken; an event stamped before it must be among
// them) for the anomalies wanted, and returns the first certain one, if
// any. Everything the rest of the run may record is assumed against the
// finding: an operation still outstanding counts as of unknown outcome,
// and a lease not yet released may be released the instant after now. So
// whatever it returns, Check on the whole history finds too. Porcupine,
// the counter and liveness are not run.
func AuditPrefix(events []history.Event, now int64, wanted []string, opts Options) (Certain, bool) {
	b := history.BuildOps(events)
	if b.Err() != nil {
		return Certain{}, false // Check will refuse it; nothing is certain
	}
	c := newChecker(b, opts)
	c.horizon = now
	c.auditLeases()
	c.auditPhantoms()
	if !opts.Database {
		c.auditCounterWrites(c.acceptedWrites())
	}
	for _, f := range c.found {
		for _, w := range wanted {
			if f.Anomaly == w {
				return Certain{Anomaly: f.Anomaly, Narrative: f.Narrative}, true
			}
		}
	}
	return Certain{}, false
}
