package history

import (
	"strconv"
	"strings"
	"time"
)

// Facts are what a nemesis event means, as data: what a fault acted on and
// when it struck (its start), what it left behind (its end), or what the
// harness saw (an instant). Every reader that acts on a nemesis event
// (checker, reports, causes, replay, shrink) reads these; Target and
// Detail say the same in words, for people, and nothing reads them back.
// A history written before facts (schema 1) gets them from its words as it
// is read (legacyFacts), the one place that parses them.
type Facts struct {
	// Nodes are the nodes a fault acts on, or the node an observation is
	// about (the one promoted, the one whose role changed).
	Nodes []string `json:"nodes,omitempty"`
	// Clients are the client slots a fault acts on: the ones it froze,
	// killed, cut off or slowed. A fault on a node that also cuts some
	// clients off names the node in Nodes and the clients here.
	Clients []int `json:"clients,omitempty"`
	// AllClients marks a client fault on every client there is.
	AllClients bool `json:"all_clients,omitempty"`
	// Unreachable are the nodes a client fault cut its clients off from,
	// where it cut them from some only.
	Unreachable []string `json:"unreachable,omitempty"`
	// Key and Shard are, on a cluster, the lock key a primary-side fault
	// aimed at and the shard serving it ("slot 9244 of 5461-10921").
	Key   string `json:"key,omitempty"`
	Shard string `json:"shard,omitempty"`
	// After is the grant a fault waited for before it struck.
	After *AfterGrant `json:"after,omitempty"`
	// AfterPromotion is the promotion a fault waited for before it
	// struck.
	AfterPromotion *AfterPromotion `json:"after_promotion,omitempty"`
	// HoldNs is how long the fault was meant to hold.
	HoldNs int64 `json:"hold_ns,omitempty"`
	// PausedAt is the pause point a client fault stopped its client at;
	// Frozen says the client was frozen there (resumed later) rather than
	// killed.
	PausedAt string `json:"paused_at,omitempty"`
	Frozen   bool   `json:"frozen,omitempty"`
	// Clock is what a clock fault did to a node's clock.
	Clock *ClockMove `json:"clock,omitempty"`
	// Keys is, at a node fault's end, how many keys the restarted node
	// held once it was back (nil: not counted), with the persistence it ran
	// under: none is a node that forgot every grant. DataLost says its
	// data was removed while it was down, whatever its persistence.
	Keys        *int64 `json:"keys,omitempty"`
	Persistence string `json:"persistence,omitempty"`
	DataLost    bool   `json:"data_lost,omitempty"`
	// CutShort marks an end the run's time limit brought early: the
	// window held less than the start said.
	CutShort bool `json:"cut_short,omitempty"`
	// Failed is, at an end, why the fault did not do all it set out to (a
	// kill or restart that failed, a failover refused, links not healed,
	// no new primary), in words; "" when it did.
	Failed string `json:"failed,omitempty"`

	// Replaced is, for a promotion the harness saw (a sentinel's
	// switch-master, a shard's slots taken over), the primary that Nodes[0]
	// replaced.
	Replaced string `json:"replaced,omitempty"`
	// Role and WasRole are a node's role after and before a change it
	// announced ("primary", "replica of n2").
	Role    string `json:"role,omitempty"`
	WasRole string `json:"was_role,omitempty"`
	// Slots and Epoch are the slots a shard's new owner took and its
	// config epoch.
	Slots string `json:"slots,omitempty"`
	Epoch int64  `json:"epoch,omitempty"`
	// Grant and Copies are a grant probe's (GrantSeen): the client whose
	// grant, the history index of its completion, and what every node
	// answered for it.
	Grant  *ProbedGrant `json:"grant,omitempty"`
	Copies []Copy       `json:"copies,omitempty"`
}

// AfterGrant is the grant a fault waited for: whose, and how long after it
// the fault struck.
type AfterGrant struct {
	Client  int   `json:"client"`
	DelayNs int64 `json:"delay_ns"`
}

// AfterPromotion is the promotion a fault waited for: the node promoted,
// how long after it the fault struck, and the time its step waited from
// (a replay waits from then for its own promotion, which comes when it
// comes).
type AfterPromotion struct {
	Node     string `json:"node"`
	DelayNs  int64  `json:"delay_ns"`
	WaitedNs int64  `json:"waited_ns"`
}

// ClockMove is a clock fault's move: the offset from true time it set (By,
// added to From, where the clock stood before), and for a strobe how often
// it flipped between the two (EveryNs; 0 for one jump). A drift sets no
// offset at once (By 0) but a rate: the clock gains RatePPB parts per
// billion of real time (negative: loses) until the fault ends.
type ClockMove struct {
	ByNs    int64 `json:"by_ns"`
	FromNs  int64 `json:"from_ns,omitempty"`
	EveryNs int64 `json:"every_ns,omitempty"`
	RatePPB int64 `json:"rate_ppb,omitempty"`
}

// GainedBy is how far ahead of where it stood the move has put the clock
// elapsed after it started: By, plus what a drift gained meanwhile.
func (c ClockMove) GainedBy(elapsed time.Duration) time.Duration {
	const sec = int64(time.Second)
	el := max(int64(elapsed), 0)
	return time.Duration(c.ByNs + el/sec*c.RatePPB + el%sec*c.RatePPB/sec)
}

// ProbedGrant names the grant a probe looked for.
type ProbedGrant struct {
	Client int `json:"client"`
	Event  int `json:"event"`
}

// Copy is what one node answered a grant probe: Holds is one of the
// Holds* values, Role the node's role then ("" if it did not say).
type Copy struct {
	Node  string `json:"node"`
	Role  string `json:"role,omitempty"`
	Holds string `json:"holds"`
	// Answer is the node's error, for HoldsError.
	Answer string `json:"answer,omitempty"`
}

// What a node answered a grant probe.
const (
	HoldsToken   = "token"   // it held the grant's token
	HoldsAbsent  = "absent"  // it held nothing under the key
	HoldsOther   = "other"   // it held another value
	HoldsUnowned = "unowned" // it does not serve the key (a cluster's MOVED)
	HoldsSilent  = "silent"  // it did not answer in time
	HoldsError   = "error"   // it answered an error (Answer)
)

// Lacks reports whether the node certainly did not hold the grant.
func (c Copy) Lacks() bool { return c.Holds == HoldsAbsent || c.Holds == HoldsOther }

// Words is what the node answered, as a report tells it ("on n1
// (primary)", "absent on n2 (replica)").
func (c Copy) Words() string {
	var s string
	switch c.Holds {
	case HoldsToken:
		s = "on " + c.Node
	case HoldsAbsent:
		s = "absent on " + c.Node
	case HoldsOther:
		s = "another value on " + c.Node
	case HoldsUnowned:
		s = c.Node + " does not serve the key"
	case HoldsSilent:
		s = c.Node + " did not answer"
	default:
		s = c.Node + " answered " + c.Answer
	}
	if c.Role != "" {
		s += " (" + c.Role + ")"
	}
	return s
}

// Answers are a grant probe's answers, none for other events.
func (f *Facts) Answers() []Copy {
	if f == nil {
		return nil
	}
	return f.Copies
}

// AnswerWords are the probe's answers as the history's words and the
// stories tell them: "on n1 (primary); absent on n2 (replica)".
func (f *Facts) AnswerWords() string {
	words := make([]string, len(f.Answers()))
	for i, c := range f.Answers() {
		words[i] = c.Words()
	}
	return strings.Join(words, "; ")
}

// Signed is a clock offset with its sign, as clock moves are told: +4s,
// -250ms, +0s.
func Signed(d time.Duration) string {
	if d < 0 {
		return d.String()
	}
	return "+" + d.String()
}

// Rate is a clock's drift in words: "2% fast", "0.5% slow".
func Rate(ppb int64) string {
	word := "fast"
	if ppb < 0 {
		word, ppb = "slow", -ppb
	}
	return strconv.FormatFloat(float64(ppb)/1e7, 'f', -1, 64) + "% " + word
}

// Holders are the nodes that held the grant, primaries first.
func (f *Facts) Holders() []string {
	if f == nil {
		return nil
	}
	var out []string
	for _, primary := range []bool{true, false} {
		for _, c := range f.Copies {
			if c.Holds == HoldsToken && (c.Role == "primary") == primary {
				out = append(out, c.Node)
			}
		}
	}
	return out
}

// Subject is what the event is about, as a report labels it: the nodes,
// with the key and shard on a cluster ("n2 (lock:orders, slot 9244 of
// 5461-10921)"), or else the clients ("client 1", "clients 0,3").
func (f *Facts) Subject() string {
	if f == nil {
		return ""
	}
	if len(f.Nodes) > 0 {
		s := strings.Join(f.Nodes, ",")
		if f.Key != "" && f.Shard != "" {
			s += " (" + f.Key + ", " + f.Shard + ")"
		}
		return s
	}
	if f.AllClients {
		return "all clients"
	}
	return ClientWords(f.Clients)
}

// ClientWords names client slots: "client 1", "clients 0,3", "" for none.
func ClientWords(slots []int) string {
	s := make([]string, len(slots))
	for i, c := range slots {
		s[i] = strconv.Itoa(c)
	}
	switch len(s) {
	case 0:
		return ""
	case 1:
		return "client " + s[0]
	}
	return "clients " + strings.Join(s, ",")
}

// Hold is HoldNs as a duration.
func (f *Facts) Hold() time.Duration {
	if f == nil {
		return 0
	}
	return time.Duration(f.HoldNs)
}

// Promoted is the node a promotion the harness saw made primary, if the
// event is one.
func (f *Facts) Promoted() (string, bool) {
	if f == nil || f.Replaced == "" || len(f.Nodes) == 0 {
		return "", false
	}
	return f.Nodes[0], true
}

// Kept says what a restarted node kept by: its persistence, and whether
// its data was removed while it was down.
func (f *Facts) Kept() string {
	if f.DataLost {
		return "persistence " + f.Persistence + ", its data removed"
	}
	return "persistence " + f.Persistence
}

// RestartedEmpty reports whether a node fault's end found the node back
// with no keys at all.
func (f *Facts) RestartedEmpty() bool { return f != nil && f.Keys != nil && *f.Keys == 0 }

// AfterGrant is the grant the fault waited for, nil if none.
func (f *Facts) AfterGrant() *AfterGrant {
	if f == nil {
		return nil
	}
	return f.After
}

// Subject is the nemesis event's subject (Facts.Subject).
func (e *Event) Subject() string { return e.Facts.Subject() }
