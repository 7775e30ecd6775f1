package checker

import (
	"fmt"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/models"
)

// maxVisualOps bounds the operations of one key that linear.html shows
// whole; a longer key shows only its segments that are not linearizable
// (or, if none, its first segments), each checked on its own.
var maxVisualOps = 20_000

// Annotation tags and colours in linear.html.
const (
	nemesisTag     = "nemesis"
	faultColor     = "#fde68a"
	anomalyColor   = "#dc2626"
	anomalyTextCol = "#ffffff"
)

// WriteLinearHTML writes porcupine's visualization of the lease-lock check
// of events to path: one lane per process, the linearization porcupine
// found (or the longest partial ones and where they fail), and annotations
// for every fault window (tag "nemesis": the fault, its target and detail)
// and every finding of res (a red box per anomaly, spanning its events,
// tagged with the anomaly's name). It checks the lock operations again,
// key by key and without segments, within res's options (slack, timeout);
// a check that runs out of time still draws what it found. Operations of
// unknown outcome that the model lets land later are drawn at their invoke.
// The operations are res's: events need hold only the nemesis's and the
// findings' (a soak's pages keep no more), unless res came without its
// operations, when they are paired from events.
func WriteLinearHTML(path string, events []history.Event, res Result) error {
	all := res.ops
	if all == nil {
		paired, err := history.Ops(events)
		if err != nil {
			return err
		}
		all = paired
	}
	var end int64
	for i := range events {
		end = max(end, events[i].Time)
	}
	var keyNames []string
	tokens := 0
	for i := range all {
		o := &all[i]
		end = max(end, o.InvT, o.DoneT)
		tokens = max(tokens, int(o.TokenID)+1)
		if int(o.KeyID) >= len(keyNames) {
			keyNames = append(keyNames, make([]string, int(o.KeyID)+1-len(keyNames))...)
		}
		keyNames[o.KeyID] = o.Key
	}
	keys, _ := lockOpsByKey(all, keyNames, tokens)
	timeout := res.opts.timeout()
	deadline := time.Now().Add(timeout)
	model := models.LeaseLockOutliving(res.opts.Slack, res.opts.Outlive, models.Partitioning{Whole: true})
	segmented := models.LeaseLockCheckOutliving(res.opts.Slack, res.opts.Outlive)
	// Each key stays in the models' own form until the part drawn is
	// known: porcupine's boxes every operation, and a soak's key has
	// a hundred thousand.
	var parts [][]porcupine.Operation
	for _, k := range keys {
		if k.len() <= maxVisualOps {
			parts = append(parts, model.Partition(models.Box(k.lockOps(nil, end)))...)
			continue
		}
		parts = append(parts, visualSegments(segmented, k, end, deadline)...)
	}
	model.Partition = func([]porcupine.Operation) [][]porcupine.Operation { return parts }
	// porcupine reads the history only through Partition.
	_, info := porcupine.CheckOperationsVerbose(model, nil, max(time.Until(deadline), time.Millisecond))
	info.AddAnnotations(annotations(events, end, res))
	return porcupine.VisualizePath(model, info, path)
}

// visualSegments picks the segments of a long key worth drawing: those
// that are not linearizable, or else the first ones, no more than
// maxVisualOps operations of either. Past the deadline every segment left
// is one porcupine did not finish, and counts as not linearizable.
func visualSegments(m models.Check, k keyOps, end int64, deadline time.Time) [][]porcupine.Operation {
	var bad, first pick
	m.EachSegment(models.NewKey(k.len(), k.op), end, nil, func(seg models.Segment) bool {
		s := newSearch(m, deadline)
		s.add(seg)
		if s.done() != porcupine.Ok {
			bad.keep(seg)
		} else if len(bad.segs) == 0 {
			first.keep(seg)
		}
		return !bad.full
	})
	if len(bad.segs) == 0 {
		bad = first
	}
	_, parts := models.Boxed(bad.segs)
	return parts
}

// pick keeps copies of the first segments it is given, as many as
// maxVisualOps operations hold, and at least one.
type pick struct {
	segs []models.Segment
	n    int
	full bool
}

func (p *pick) keep(seg models.Segment) {
	if p.full {
		return
	}
	if p.n > 0 && p.n+seg.Len() > maxVisualOps {
		p.full = true
		return
	}
	p.segs = append(p.segs, seg.Flat())
	p.n += seg.Len()
	p.full = p.n >= maxVisualOps
}

// annotations marks the fault windows and the findings on the timeline;
// end is the time of the history's last event.
func annotations(events []history.Event, end int64, res Result) []porcupine.Annotation {
	times := make(map[int]int64, len(events))
	for _, e := range events {
		times[e.Index] = e.Time
	}
	end++ // where operations of unknown outcome end, as models.Operations has it

	var as []porcupine.Annotation
	for _, f := range faultWindows(events) {
		stop := f.end
		if stop == history.Forever {
			stop = end
		}
		details := strings.TrimSpace(f.target + " " + f.detail)
		if f.end == history.Forever {
			details += " (not healed)"
		}
		as = append(as, porcupine.Annotation{
			Tag:             nemesisTag,
			Start:           f.start,
			End:             stop,
			Description:     f.name,
			Details:         strings.TrimSpace(details),
			BackgroundColor: faultColor,
		})
	}
	// Things the harness observed rather than caused, such as a sentinel
	// switching the primary, are instants on the same lane.
	for _, e := range events {
		if e.IsNemesis() && e.Phase == history.Instant && e.F != history.GrantSeen {
			as = append(as, porcupine.Annotation{
				Tag:             nemesisTag,
				Start:           e.Time,
				End:             e.Time,
				Description:     e.F,
				Details:         strings.TrimSpace(e.Target + " " + e.Detail),
				BackgroundColor: faultColor,
			})
		}
	}
	for _, f := range res.Findings {
		start, stop, found := int64(0), int64(0), false
		for _, i := range f.Events {
			t, ok := times[i]
			if !ok {
				continue
			}
			if !found || t < start {
				start = t
			}
			stop = max(stop, t)
			found = true
		}
		if !found {
			continue
		}
		desc := f.Anomaly
		if f.Key != "" {
			desc += " " + f.Key
		}
		as = append(as, porcupine.Annotation{
			Tag:             f.Anomaly,
			Start:           start,
			End:             stop,
			Description:     desc,
			Details:         fmt.Sprintf("%s (events %v)", f.Narrative, f.Events),
			TextColor:       anomalyTextCol,
			BackgroundColor: anomalyColor,
		})
	}
	return as
}
