package reports

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/history"
)

// StoryLine is one event in an anomaly's story.
type StoryLine struct {
	At time.Duration
	// Who is "client 2 (process 4)"; empty for a fault.
	Who  string
	Text string
	// Event is the history index.
	Event int
	// Fault marks a nemesis event, which the story adds as context: the
	// finding itself lists only client events.
	Fault bool
}

// String is the line as the page prints it: "12.301 s client 2 (process 4)
// acquired lock:orders (fence 17) …".
func (s StoryLine) String() string {
	if s.Who == "" {
		return secs(s.At) + " " + s.Text
	}
	return secs(s.At) + " " + s.Who + " " + s.Text
}

// Story tells a finding's events in order with their times, and the start
// and end of every fault whose window overlaps them.
func Story(events []history.Event, f checker.Finding) []StoryLine {
	return analyse(events).story(f)
}

func (a *analysis) story(f checker.Finding) []StoryLine {
	from, to, ok := a.span(f)
	if !ok {
		return nil
	}
	var lines []StoryLine
	seen := map[int]bool{}
	stale := -1
	if f.Anomaly == checker.StaleWrite {
		stale = a.latest(a.findingOps(f), history.Write)
	}
	for _, idx := range f.Events {
		p, found := a.at[idx]
		if !found || seen[p] {
			continue
		}
		seen[p] = true
		lines = append(lines, a.line(p, stale))
	}
	for _, b := range a.bands {
		if b.Start > to || b.End < from {
			continue
		}
		for _, idx := range []int{b.StartEvent, b.EndEvent} {
			if p, found := a.at[idx]; found && !seen[p] {
				seen[p] = true
				lines = append(lines, a.line(p, stale))
			}
		}
	}
	sort.SliceStable(lines, func(i, j int) bool {
		if lines[i].At != lines[j].At {
			return lines[i].At < lines[j].At
		}
		return lines[i].Event < lines[j].Event
	})
	return lines
}

// line tells the event at position p. stale is the op of the stale write,
// or -1.
func (a *analysis) line(p, stale int) StoryLine {
	e := a.events[p]
	l := StoryLine{At: e.At(), Event: e.Index}
	if e.IsNemesis() {
		l.Fault = true
		verb := "starts"
		if e.Phase == history.End {
			verb = "ends"
		}
		l.Text = strings.TrimSpace(e.F+" "+e.Target) + " " + verb
		if e.Detail != "" {
			l.Text += " (" + e.Detail + ")"
		}
		return l
	}
	oi, ok := a.opAt[p]
	if !ok {
		l.Who = fmt.Sprintf("client %d (process %s)", e.Client, e.Process)
		l.Text = fmt.Sprintf("%s %s (unpaired event)", e.Type, e.F)
		return l
	}
	o := a.ops[oi]
	l.Who = fmt.Sprintf("client %d (process %s)", o.client, o.process)
	if o.final {
		l.Who += " in the final check"
	}
	if p == o.inv {
		l.Text = a.invoked(o)
	} else {
		l.Text = a.completed(oi, o, oi == stale)
	}
	return l
}

func (a *analysis) invoked(o opInfo) string {
	switch o.kind {
	case history.Acquire:
		// The fence comes with the grant, not the request.
		s := "asks for " + o.key + " (" + tokenText(opInfo{token: o.token})
		if o.ttlMs > 0 {
			s += fmt.Sprintf(", ttl %d ms", o.ttlMs)
		}
		return s + ")"
	case history.Write:
		s := "writes to the resource under " + tokenText(o)
		if o.read != nil {
			s += fmt.Sprintf(", having read %d", *o.read)
		}
		return s
	case history.Read:
		return "reads the resource"
	}
	return fmt.Sprintf("asks to %s %s (%s)", o.kind, o.key, tokenText(o))
}

func (a *analysis) completed(oi int, o opInfo, stale bool) string {
	why := ""
	if o.errText != "" {
		why = " (" + o.errText + ")"
	}
	switch o.outcome {
	case history.OK:
		switch o.kind {
		case history.Acquire:
			s := "acquired " + o.key + " (" + tokenText(o) + ")"
			if v := validity(o); v > 0 {
				s += ", lease valid to " + secs(v)
			}
			return s + a.conflict(oi, o)
		case history.Write:
			s := "wrote: the resource accepted it (stored " + valueText(o.stored) + ")"
			if stale {
				s += ", a stale write"
			}
			return s
		case history.Extend:
			return fmt.Sprintf("extended %s (%s), valid to %s", o.key, tokenText(o), secs(validity(o)))
		case history.Release:
			return "released " + o.key + " (" + tokenText(o) + ")"
		}
		return o.kind + " ok"
	case history.Fail:
		switch o.kind {
		case history.Acquire:
			return "was refused " + o.key + why
		case history.Write:
			return "wrote: the resource rejected it" + why
		}
		return fmt.Sprintf("failed to %s %s%s", o.kind, o.key, why)
	}
	return fmt.Sprintf("%s of %s has an unknown outcome%s; its process is retired", o.kind, o.key, why)
}

// conflict says whose lease another client still believed in when this
// acquire was granted, or "" if nobody's.
func (a *analysis) conflict(oi int, o opInfo) string {
	var parts []string
	for _, l := range a.leases {
		if l.op == oi || l.Key != o.key || l.Client == o.client || l.Start >= o.doneT || l.End <= o.doneT {
			continue
		}
		fence := ""
		if l.Fence != 0 {
			fence = fmt.Sprintf(" (fence %d)", l.Fence)
		}
		switch {
		case l.ValidUntil == 0:
			parts = append(parts, fmt.Sprintf("client %d holds its lease%s, which has no expiry", l.Client, fence))
		case o.doneT < l.ValidUntil:
			parts = append(parts, fmt.Sprintf("client %d's lease%s runs to %s", l.Client, fence, secs(l.ValidUntil)))
		default:
			parts = append(parts, fmt.Sprintf("client %d still believes it holds its lease%s, which ran out at %s",
				l.Client, fence, secs(l.ValidUntil)))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " while " + strings.Join(parts, " and ")
}

func tokenText(o opInfo) string {
	s := "token " + o.token
	if o.token == "" {
		s = "no token"
	}
	if o.fence != 0 {
		s = fmt.Sprintf("fence %d, %s", o.fence, s)
	}
	return s
}

func valueText(v *int64) string {
	if v == nil {
		return "?"
	}
	return fmt.Sprint(*v)
}

// secs formats a time as the checker's narratives do, so the page's two
// accounts of an anomaly read alike.
func secs(d time.Duration) string {
	return fmt.Sprintf("%.3f s", d.Seconds())
}
