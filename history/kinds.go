package history

import "unsafe"

// kindTable keeps one copy of each OpKind. A history has few: its
// functions, outcomes, reasons and errors are a handful of strings, its
// keys and clients a few dozen. It looks a kind up by the numbers of its
// strings, not their text, so that taking one costs a lookup of a few
// integers for each of a soak's millions of events.
type kindTable struct {
	kinds map[kindKey]*OpKind
	names stringNumbers
}

// kindKey is an OpKind with its strings numbered (stringNumbers).
type kindKey struct {
	f, key, typ, reason, err int32
	flags                    uint8
	client                   int
}

func newKindTable() kindTable {
	return kindTable{kinds: make(map[kindKey]*OpKind), names: stringNumbers{numbers: make(map[string]int32)}}
}

// of is the table's copy of k, which it makes if it has none.
func (t *kindTable) of(k *OpKind) *OpKind {
	var flags uint8
	for i, set := range [...]bool{k.Final, k.FenceChecked, k.Background, k.UnseenRenewals} {
		if set {
			flags |= 1 << i
		}
	}
	n := &t.names
	key := kindKey{f: n.of(k.F), key: n.of(k.Key), typ: n.of(k.Type), reason: n.of(k.Reason), err: n.of(k.Error),
		flags: flags, client: k.Client}
	if p := t.kinds[key]; p != nil {
		return p
	}
	p := new(OpKind)
	*p = *k
	t.kinds[key] = p
	return p
}

// stringNumbers numbers strings by their text, from 1 (0 is ""). The
// history's reader hands the same few strings over and over (it keeps
// recent ones: lineParser), so the last string seen at each of a few
// slots, known by where its bytes are, is numbered without hashing its
// text. A slot holds the bytes it points to, which therefore cannot be
// reused for another string while it does.
type stringNumbers struct {
	numbers map[string]int32
	recent  [256]struct {
		data *byte
		len  int
		n    int32
	}
}

func (s *stringNumbers) of(v string) int32 {
	if v == "" {
		return 0
	}
	data := unsafe.StringData(v)
	slot := &s.recent[(uintptr(unsafe.Pointer(data))>>3^uintptr(len(v)))%uintptr(len(s.recent))]
	if slot.data == data && slot.len == len(v) {
		return slot.n
	}
	n, ok := s.numbers[v]
	if !ok {
		n = int32(len(s.numbers) + 1)
		s.numbers[v] = n
	}
	slot.data, slot.len, slot.n = data, len(v), n
	return n
}
