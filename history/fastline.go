package history

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// lineParser decodes one history line of the shape MarshalLine writes (a
// flat object of known keys whose values are integers, strings, booleans
// or null) several times faster than encoding/json, which a soak's
// millions of lines need. It gives up, and the caller decodes the line
// with encoding/json, on anything else (an unknown key, a float, nesting),
// so errors and corner cases stay encoding/json's. Strings are kept in a
// small cache of recent ones: the few values of type, f, key and reason
// repeat on every line, a token on its operation's completion, an error
// ("lock busy") on most failures, and a cached string costs no allocation.
type lineParser struct {
	b      []byte
	i      int
	recent [1024]string
}

func newLineParser() *lineParser { return &lineParser{} }

// parse decodes b into e (which it zeroes first); false: decode b with
// encoding/json instead.
func (p *lineParser) parse(b []byte, e *Event) bool {
	*e = Event{}
	p.b, p.i = b, 0
	if !p.byte('{') {
		return false
	}
	if p.peek() == '}' {
		p.i++
		return p.end()
	}
	for {
		key, ok := p.plainString()
		if !ok || !p.byte(':') {
			return false
		}
		p.space()
		if !p.field(key, e) {
			return false
		}
		switch {
		case p.byte(','):
			continue
		case p.byte('}'):
			return p.end()
		}
		return false
	}
}

func (p *lineParser) field(key []byte, e *Event) bool {
	var ok bool
	switch string(key) {
	case "index":
		var n int64
		n, ok = p.int()
		e.Index = int(n)
	case "time":
		e.Time, ok = p.int()
	case "type":
		e.Type, ok = p.str()
	case "process":
		if p.peek() == '"' {
			start := p.i
			if _, ok = p.str(); ok {
				ok = e.Process.UnmarshalJSON(p.b[start:p.i]) == nil
			}
			break
		}
		var n int64
		n, ok = p.int()
		ok = ok && n >= 0
		e.Process = Process(n)
	case "client":
		var n int64
		n, ok = p.int()
		e.Client = int(n)
	case "f":
		e.F, ok = p.str()
	case "key":
		e.Key, ok = p.str()
	case "token":
		e.Token, ok = p.str()
	case "fence":
		e.Fence, ok = p.int()
	case "ttl_ms":
		e.TTLMs, ok = p.int()
	case "valid_ms":
		e.ValidMs, ok = p.int()
	case "value":
		if p.literal("null") {
			e.Value, ok = nil, true
			break
		}
		var n int64
		if n, ok = p.int(); ok {
			e.Value = &n
		}
	case "error":
		e.Error, ok = p.str()
	case "reason":
		e.Reason, ok = p.str()
	case "final":
		e.Final, ok = p.bool()
	case "background":
		e.Background, ok = p.bool()
	case "fence_checked":
		e.FenceChecked, ok = p.bool()
	case "unseen_renewals":
		e.UnseenRenewals, ok = p.bool()
	case "phase":
		e.Phase, ok = p.str()
	case "target":
		e.Target, ok = p.str()
	case "detail":
		e.Detail, ok = p.str()
	case "options":
		e.Options, ok = p.str()
	}
	return ok
}

func (p *lineParser) space() {
	// One comparison for the usual case: MarshalLine writes no spaces.
	for p.i < len(p.b) && p.b[p.i] <= ' ' {
		if c := p.b[p.i]; c != ' ' && c != '\t' && c != '\r' && c != '\n' {
			return
		}
		p.i++
	}
}

func (p *lineParser) peek() byte {
	p.space()
	if p.i < len(p.b) {
		return p.b[p.i]
	}
	return 0
}

// byte consumes c, after any space.
func (p *lineParser) byte(c byte) bool {
	if p.peek() == c {
		p.i++
		return true
	}
	return false
}

func (p *lineParser) end() bool {
	p.space()
	return p.i == len(p.b)
}

func (p *lineParser) literal(word string) bool {
	if len(p.b)-p.i >= len(word) && string(p.b[p.i:p.i+len(word)]) == word {
		p.i += len(word)
		return true
	}
	return false
}

func (p *lineParser) bool() (bool, bool) {
	switch {
	case p.literal("true"):
		return true, true
	case p.literal("false"):
		return false, true
	}
	return false, false
}

// int reads an integer; a fraction, an exponent or an overflow is left to
// encoding/json.
func (p *lineParser) int() (int64, bool) {
	start := p.i
	if p.i < len(p.b) && p.b[p.i] == '-' {
		p.i++
	}
	digits := p.i
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		p.i++
	}
	if p.i == digits || p.i < len(p.b) && (p.b[p.i] == '.' || p.b[p.i] == 'e' || p.b[p.i] == 'E') {
		return 0, false
	}
	if p.b[digits] == '0' && p.i-digits > 1 { // JSON has no leading zeros
		return 0, false
	}
	if p.i-digits > 18 { // may overflow: let strconv say
		n, err := strconv.ParseInt(string(p.b[start:p.i]), 10, 64)
		return n, err == nil
	}
	var n int64
	for _, c := range p.b[digits:p.i] {
		n = n*10 + int64(c-'0')
	}
	if digits > start {
		n = -n
	}
	return n, true
}

// plainASCII marks the bytes a string may hold as they are: ASCII other
// than a quote, a backslash and control characters.
var plainASCII = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// plainString reads a string without escapes and returns its bytes.
func (p *lineParser) plainString() ([]byte, bool) {
	if p.peek() != '"' {
		return nil, false
	}
	start := p.i + 1
	// Plain ASCII first, one table lookup a byte: nearly every string.
	j := start
	for j < len(p.b) && plainASCII[p.b[j]] {
		j++
	}
	if j < len(p.b) && p.b[j] == '"' {
		p.i = j + 1
		return p.b[start:j], true
	}
	ascii := true
	for ; j < len(p.b); j++ {
		switch c := p.b[j]; {
		case c == '"':
			// encoding/json replaces invalid UTF-8; let it.
			if !ascii && !utf8.Valid(p.b[start:j]) {
				return nil, false
			}
			p.i = j + 1
			return p.b[start:j], true
		case c == '\\' || c < 0x20:
			return nil, false
		case c >= 0x80:
			ascii = false
		}
	}
	return nil, false
}

// str reads a string value; one with escapes is decoded by encoding/json.
func (p *lineParser) str() (string, bool) {
	start := p.i
	raw, ok := p.plainString()
	if !ok {
		return p.escaped(start)
	}
	if len(raw) > 64 {
		return string(raw), true
	}
	// FNV-1a picks the string's slot; a slot holds the latest string.
	h := uint32(2166136261)
	for _, c := range raw {
		h = (h ^ uint32(c)) * 16777619
	}
	slot := &p.recent[h%uint32(len(p.recent))]
	if *slot != string(raw) {
		*slot = string(raw)
	}
	return *slot, true
}

// escaped decodes the quoted string at start, escapes and all.
func (p *lineParser) escaped(start int) (string, bool) {
	if start >= len(p.b) || p.b[start] != '"' {
		return "", false
	}
	for j := start + 1; j < len(p.b); j++ {
		switch p.b[j] {
		case '\\':
			j++
		case '"':
			var s string
			if json.Unmarshal(p.b[start:j+1], &s) != nil {
				return "", false
			}
			p.i = j + 1
			return s, true
		}
	}
	return "", false
}
