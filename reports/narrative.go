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
	// Words are a fault's own words (its Detail), told after Text in
	// parentheses: what it says, not what the story concludes.
	Words string
	// Event is the history index.
	Event int
	// Fault marks a nemesis event, which the story adds as context: the
	// finding itself lists only client events.
	Fault bool
}

// String is the line as the page prints it: "12.301 s client 2 (process 4)
// acquired lock:orders (fence 17) …".
func (s StoryLine) String() string {
	text := s.Text
	if s.Words != "" {
		text += " (" + s.Words + ")"
	}
	if s.Who == "" {
		return secs(s.At) + " " + text
	}
	return secs(s.At) + " " + s.Who + " " + text
}

// Story tells a finding's events in order with their times, and the start
// and end of every fault whose window overlaps them.
func Story(events []history.Event, f checker.Finding) []StoryLine {
	return analyse(events).story(f)
}

func (a *analysis) story(f checker.Finding) []StoryLine {
	from, to, ok := a.reach(f)
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
		p, found := a.events.position(idx)
		if !found || seen[p] || a.events.at(p) == nil {
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
			if p, found := a.events.position(idx); found && !seen[p] && a.events.at(p) != nil {
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
	e := a.events.at(p)
	l := StoryLine{At: e.At(), Event: e.Index}
	if e.IsNemesis() {
		l.Fault = true
		verb := "starts"
		switch e.Phase {
		case history.End:
			verb = "ends"
		case history.Instant:
			verb = "seen"
		}
		l.Text, l.Words = strings.TrimSpace(e.F+" "+e.Subject())+" "+verb, e.Detail
		return l
	}
	oi, ok := a.opOf(p)
	if !ok {
		l.Who = fmt.Sprintf("client %d (process %s)", e.Client, e.Process)
		l.Text = fmt.Sprintf("%s %s (unpaired event)", e.Type, e.F)
		return l
	}
	o := a.ops[oi]
	l.Who = fmt.Sprintf("client %d (process %s)", o.Client, o.Process)
	if o.Final {
		l.Who += " in the final check"
	}
	if p == int(o.Inv) {
		l.Text = a.invoked(o)
	} else {
		l.Text = a.completed(oi, o, oi == stale)
	}
	return l
}

func (a *analysis) invoked(o opInfo) string {
	switch o.F {
	case history.Acquire:
		// The fence comes with the grant, not the request.
		s := "asks for " + o.Key + " (" + tokenText(opInfo{Token: o.Token})
		if o.TTLMs > 0 {
			s += fmt.Sprintf(", ttl %d ms", o.TTLMs)
		}
		return s + ")"
	case history.Write:
		s := "writes to the resource under " + tokenText(o)
		if o.Read != nil {
			s += fmt.Sprintf(", having read %d", *o.Read)
		}
		return s
	case history.Read:
		return "reads the resource"
	}
	return fmt.Sprintf("asks to %s %s (%s)", o.F, o.Key, tokenText(o))
}

func (a *analysis) completed(oi int, o opInfo, stale bool) string {
	why := ""
	if o.Error != "" {
		why = " (" + o.Error + ")"
	}
	switch o.Type {
	case history.OK:
		switch o.F {
		case history.Acquire:
			s := "acquired " + o.Key + " (" + tokenText(o) + ")"
			if v := validity(o); v > 0 {
				s += ", lease valid to " + secs(v)
			}
			return s + a.conflict(oi, o) + a.foundOn(o)
		case history.Write:
			s := "wrote: the resource accepted it (stored " + valueText(o.Stored) + ")"
			if stale {
				s += ", a stale write"
			}
			return s
		case history.Extend:
			return fmt.Sprintf("extended %s (%s), valid to %s", o.Key, tokenText(o), secs(validity(o)))
		case history.Release:
			return "released " + o.Key + " (" + tokenText(o) + ")"
		}
		return o.F + " ok"
	case history.Fail:
		switch o.F {
		case history.Acquire:
			return "was refused " + o.Key + why
		case history.Write:
			return "wrote: the resource rejected it" + why
		}
		return fmt.Sprintf("failed to %s %s%s", o.F, o.Key, why)
	}
	return fmt.Sprintf("%s of %s has an unknown outcome%s; its process is retired", o.F, o.Key, why)
}

// foundOn says where the harness found a grant just after it, or "" if it
// did not look.
func (a *analysis) foundOn(o opInfo) string {
	seen := a.seen[grantKey{o.Key, o.Token}]
	if seen == nil || o.Token == "" {
		return ""
	}
	return "; just after, " + seen.Facts.AnswerWords()
}

// conflict says whose lease another client still believed in when this
// acquire was granted, or "" if nobody's.
func (a *analysis) conflict(oi int, o opInfo) string {
	var parts []string
	for _, l := range a.leases {
		if l.op == oi || l.Key != o.Key || l.Client == o.Client || l.Start >= o.DoneAt() || l.End <= o.DoneAt() {
			continue
		}
		fence := ""
		if l.Fence != 0 {
			fence = fmt.Sprintf(" (fence %d)", l.Fence)
		}
		switch {
		case l.ValidUntil == 0:
			parts = append(parts, fmt.Sprintf("client %d holds its lease%s, which has no expiry", l.Client, fence))
		case o.DoneAt() < l.ValidUntil:
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
	s := "token " + o.Token
	if o.Token == "" {
		s = "no token"
	}
	if o.Fence != 0 {
		s = fmt.Sprintf("fence %d, %s", o.Fence, s)
	}
	return s
}

func valueText(v *int64) string {
	if v == nil {
		return "?"
	}
	return fmt.Sprint(*v)
}

// secs formats a time as the checker's narratives do (checker.Secs), so
// the page's two accounts of an anomaly read alike.
func secs(d time.Duration) string { return checker.Secs(int64(d)) }
