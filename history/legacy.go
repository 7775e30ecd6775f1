package history

import (
	"regexp"
	"strconv"
	"strings"
	"time"
)

// legacyFacts gives a nemesis event from a schema 1 history (one written
// before nemesis events carried Facts) the facts its Target and Detail put
// in words, as the harness of that time wrote them. It is the only reader
// of those words: every other reader takes Facts. What the words do not
// say stays unset.
func legacyFacts(e *Event) {
	f := &Facts{}
	e.Facts = f
	switch e.F {
	case GrantSeen:
		legacyProbe(e.Detail, f)
		return
	case "switch-master":
		if m := oldReplaced.FindStringSubmatch(e.Detail); m != nil {
			f.Nodes, f.Replaced = []string{m[1]}, m[2]
		}
		return
	case "slot-owner":
		if m := oldSlotOwner.FindStringSubmatch(e.Detail); m != nil {
			f.Nodes, f.Slots, f.Replaced = []string{m[1]}, m[2], m[3]
			f.Epoch, _ = strconv.ParseInt(m[4], 10, 64)
		}
		return
	case "role":
		if m := oldRole.FindStringSubmatch(e.Detail); m != nil {
			f.Nodes, f.Role, f.WasRole = []string{m[1]}, m[2], m[3]
		}
		return
	}
	legacySubject(e.Target, f)
	d := e.Detail
	if e.Target == "all clients" {
		f.AllClients = true
		for _, m := range oldSees.FindAllStringSubmatch(d, -1) {
			if n, err := strconv.Atoi(m[1]); err == nil {
				f.Clients = append(f.Clients, n)
			}
		}
	}
	if e.Phase == End {
		f.CutShort = strings.HasSuffix(d, "(cut short by the time limit)")
		if m := oldFailed.FindString(d); m != "" {
			f.Failed = strings.TrimSuffix(d, " (cut short by the time limit)")
		}
		if m := oldRestarted.FindStringSubmatch(d); m != nil {
			keys, _ := strconv.ParseInt(m[1], 10, 64)
			f.Keys, f.Persistence = &keys, m[2]
		} else if m := oldRestartedWith.FindStringSubmatch(d); m != nil {
			keys, _ := strconv.ParseInt(m[1], 10, 64)
			f.Keys, f.Persistence = &keys, m[2]
		}
		return
	}
	if m := oldAfter.FindStringSubmatch(d); m != nil {
		client, _ := strconv.Atoi(m[2])
		delay, _ := time.ParseDuration(m[1])
		f.After = &AfterGrant{Client: client, DelayNs: int64(delay)}
	}
	if m := oldCutClients.FindStringSubmatch(d); m != nil && len(f.Nodes) > 0 {
		f.Clients = oldSlots(m[1])
	}
	if m := oldCutFrom.FindStringSubmatch(d); m != nil && e.F == "partition-minority" {
		f.Unreachable = strings.Split(m[1], ",")
	}
	if m := oldHold.FindAllStringSubmatch(d, -1); len(m) > 0 {
		if hold, err := time.ParseDuration(m[len(m)-1][1]); err == nil {
			f.HoldNs = int64(hold)
		}
	}
	if m := oldPaused.FindStringSubmatch(d); m != nil {
		f.Frozen, f.PausedAt = m[1] == "frozen", m[2]
	}
	switch e.F {
	case "clock-jump":
		by, _, _ := strings.Cut(d, ";")
		if jump, err := time.ParseDuration(strings.TrimPrefix(by, "+")); err == nil {
			f.Clock = &ClockMove{ByNs: int64(jump)}
		}
	case "clock-strobe":
		if m := oldStrobe.FindStringSubmatch(d); m != nil {
			hi, err1 := time.ParseDuration(strings.TrimPrefix(m[1], "+"))
			lo, err2 := time.ParseDuration(strings.TrimPrefix(m[2], "+"))
			every, err3 := time.ParseDuration(m[3])
			if err1 == nil && err2 == nil && err3 == nil {
				f.Clock = &ClockMove{ByNs: int64(hi - lo), FromNs: int64(lo), EveryNs: int64(every)}
			}
		}
	}
}

// Upgrade gives the nemesis events of a schema 1 history held in memory
// the facts their words say, as reading it would (legacyFacts).
func Upgrade(events []Event) {
	for i := range events {
		upgrade(&events[i])
	}
}

// upgrade gives e the facts of its words if it is a nemesis event of a
// schema 1 history, one without facts.
func upgrade(e *Event) {
	if e.IsNemesis() && e.Facts == nil {
		legacyFacts(e)
	}
}

// FactsFromWords are the facts a schema 1 nemesis event's words say.
func FactsFromWords(e Event) *Facts {
	legacyFacts(&e)
	return e.Facts
}

// The words of schema 1 nemesis events.
var (
	oldReplaced      = regexp.MustCompile(`^(\S+) replaced (\S+) as primary$`)
	oldSlotOwner     = regexp.MustCompile(`^(\S+) took slots (\S+) from (\S*) \(config epoch (\d+)\)$`)
	oldRole          = regexp.MustCompile(`^(\S+) is now (.+) \(was (.+)\)$`)
	oldRestarted     = regexp.MustCompile(`^restarted empty \((\d+) keys; persistence (\S+)\)`)
	oldRestartedWith = regexp.MustCompile(`^restarted with (\d+) keys \(persistence (\S+)\)`)
	oldAfter         = regexp.MustCompile(`(?:(\S+) after )?client (\d+)(?: just)? acquired`)
	oldCutClients    = regexp.MustCompile(`(?:peers and|with) clients? ([\d,]+) `)
	oldHold          = regexp.MustCompile(`\b(?:for|held up|restart in) ([0-9.]+(?:ns|µs|us|ms|s|m|h)(?:[0-9.]+(?:ns|µs|us|ms|s|m|h))*)`)
	oldSees          = regexp.MustCompile(`client (\d+) sees `)
	oldCutFrom       = regexp.MustCompile(`^cut from (\S+), for`)
	oldFailed        = regexp.MustCompile(`^(kill failed|restart failed|refused|not healed|no new primary)`)
	oldPaused        = regexp.MustCompile(`^(frozen|killed) at (\S+)`)
	oldStrobe        = regexp.MustCompile(`^between (\S+) and (\S+) every (\S+) for`)
	oldTarget        = regexp.MustCompile(`^(\S+) \((\S+), (.+)\)$`)
	oldClients       = regexp.MustCompile(`^clients? ([\d,]+)$`)
	oldProbe         = regexp.MustCompile(`^client (\d+)'s grant \(event (\d+)\): (.*)$`)
	oldRoleSuffix    = regexp.MustCompile(`^(.*) \((primary|replica)\)$`)
)

// legacySubject reads a schema 1 Target: nodes, with the key and shard on
// a cluster, or clients.
func legacySubject(target string, f *Facts) {
	switch {
	case target == "":
	case oldClients.MatchString(target):
		f.Clients = oldSlots(oldClients.FindStringSubmatch(target)[1])
	case oldTarget.MatchString(target):
		m := oldTarget.FindStringSubmatch(target)
		f.Nodes, f.Key, f.Shard = strings.Split(m[1], ","), m[2], m[3]
	case !strings.Contains(target, " "):
		f.Nodes = strings.Split(target, ",")
	}
}

func oldSlots(list string) []int {
	var out []int
	for _, s := range strings.Split(list, ",") {
		if n, err := strconv.Atoi(s); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// legacyProbe reads a schema 1 grant probe's Detail: "client 2's grant
// (event 41): on n1 (primary); absent on n2 (replica)".
func legacyProbe(detail string, f *Facts) {
	m := oldProbe.FindStringSubmatch(detail)
	if m == nil {
		return
	}
	client, _ := strconv.Atoi(m[1])
	event, _ := strconv.Atoi(m[2])
	f.Grant = &ProbedGrant{Client: client, Event: event}
	for _, answer := range strings.Split(m[3], "; ") {
		c := Copy{}
		if r := oldRoleSuffix.FindStringSubmatch(answer); r != nil {
			answer, c.Role = r[1], r[2]
		}
		switch {
		case strings.HasPrefix(answer, "on "):
			c.Node, c.Holds = strings.TrimPrefix(answer, "on "), HoldsToken
		case strings.HasPrefix(answer, "absent on "):
			c.Node, c.Holds = strings.TrimPrefix(answer, "absent on "), HoldsAbsent
		case strings.HasPrefix(answer, "another value on "):
			c.Node, c.Holds = strings.TrimPrefix(answer, "another value on "), HoldsOther
		case strings.HasSuffix(answer, " does not serve the key"):
			c.Node, c.Holds = strings.TrimSuffix(answer, " does not serve the key"), HoldsUnowned
		case strings.HasSuffix(answer, " did not answer"):
			c.Node, c.Holds = strings.TrimSuffix(answer, " did not answer"), HoldsSilent
		default:
			node, rest, _ := strings.Cut(answer, " answered ")
			c.Node, c.Holds, c.Answer = node, HoldsError, rest
		}
		f.Copies = append(f.Copies, c)
	}
}

// upgradeTables gives the tables of a run recorded before they named their
// table and audits (the inventory's and the jobs') what their workload
// declared then: like legacyFacts, the one place that reads a workload's
// name for its meaning.
func upgradeTables(t *Tables) {
	switch t.Workload {
	case "inventory":
		t.Table, t.Audits = "ledger", []string{AuditLedger}
	case "jobs":
		t.Table, t.Audits = "done", []string{AuditDuplicates}
	}
}
