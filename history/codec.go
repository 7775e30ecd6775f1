package history

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
)

// File is a run directory's history, by name; a history compressed to keep
// (gzip, history.jsonl.gz) is read as well.
const File = "history.jsonl"

// InDir is the history of a run directory: history.jsonl, or its gzipped
// history.jsonl.gz when only that is there.
func InDir(dir string) string {
	plain := filepath.Join(dir, File)
	if _, err := os.Stat(plain); err != nil {
		if _, gzErr := os.Stat(plain + ".gz"); gzErr == nil {
			return plain + ".gz"
		}
	}
	return plain
}

// Open opens a history file for reading, gunzipping it when it starts with
// gzip's magic bytes, whatever its name.
func Open(path string) (io.ReadCloser, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	br := bufio.NewReaderSize(f, 1<<20)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return readCloser{zr, func() error { zr.Close(); return f.Close() }}, nil
	}
	return readCloser{br, f.Close}, nil
}

type readCloser struct {
	io.Reader
	close func() error
}

func (r readCloser) Close() error { return r.close() }

// Size is how many bytes of history the file at path holds: its size, or
// for a gzipped one the size its trailer records (modulo 4 GiB, as gzip
// keeps it; never less than the compressed size).
func Size(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	size := st.Size()
	f, err := os.Open(path)
	if err != nil {
		return size
	}
	defer f.Close()
	magic := make([]byte, 2)
	if _, err := io.ReadFull(f, magic); err != nil || magic[0] != 0x1f || magic[1] != 0x8b || size < 18 {
		return size
	}
	trailer := make([]byte, 4)
	if _, err := f.ReadAt(trailer, size-4); err != nil {
		return size
	}
	isize := int64(binary.LittleEndian.Uint32(trailer))
	return max(size, isize)
}

// ReadFile reads a history file (Open).
func ReadFile(path string) ([]Event, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	events, err := Decode(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return events, nil
}

// Decode parses a JSONL history and checks it as a Validator does. An error
// names the line (from 1) and what was wrong with it; the events before that
// line are returned with it. Blank lines are skipped.
func Decode(r io.Reader) ([]Event, error) {
	var events []Event
	err := Stream(r, func(e *Event) error {
		events = append(events, *e)
		return nil
	})
	return events, err
}

// Stream parses a JSONL history as Decode does, handing each event to each
// as it is read instead of keeping them, so that a history of any length
// can be read in the memory its consumer keeps. The *Event is reused for
// later lines once each returns. An error from each stops the stream and is returned.
func Stream(r io.Reader, each func(e *Event) error) error {
	v := NewValidator()
	return stream(r, v.next, each)
}

// StreamOps reads a history into b as Stream would hand it each event,
// checking it as a Validator does with b's own pairing of invokes and
// completions instead of a second one: what a soak's check needs.
func StreamOps(r io.Reader, b *OpsBuilder) error {
	return stream(r, b.addChecked, nil)
}

// stream parses r, checks each event with check (its error names the
// line) and hands it to each, if any (its error is returned as it is).
func stream(r io.Reader, check func(e *Event) error, each func(e *Event) error) error {
	// Blocks of whole lines are parsed on every core while each takes the
	// events of earlier blocks in order: decoding is most of what reading a
	// soak's history costs.
	quit := make(chan struct{})
	blocks, read := readBlocks(r, quit)
	defer func() {
		close(quit)
		<-read // r is not read after the stream returns
	}()
	line, n := 0, 0
	for blk := range blocks {
		<-blk.parsed
		for i := range blk.events {
			e := &blk.events[i]
			upgrade(e)
			if err := check(e); err != nil {
				return fmt.Errorf("line %d: %v", line+blk.lineOf[i], err)
			}
			if each != nil {
				if err := each(e); err != nil {
					return err
				}
			}
			n++
		}
		if blk.err != nil {
			return fmt.Errorf("line %d: %v", line+blk.errLine, blk.err)
		}
		line += blk.lines
		if blk.readErr != nil {
			return fmt.Errorf("after line %d: %v", n, blk.readErr)
		}
		blk.recycle()
	}
	return nil
}

// maxLine is the longest line a history may have.
const maxLine = 16 << 20

// blockSize is how much of a history one parser takes at a time.
const blockSize = 256 << 10

// block is a run of whole lines and, once parsed is closed, their events.
type block struct {
	data   []byte
	parsed chan struct{}
	events []Event
	// lineOf is each event's line within the block, from 1; lines counts
	// the block's lines, blank ones included.
	lineOf []int
	lines  int
	// err is the first line that did not decode, at errLine; the events
	// before it are kept. readErr ends the stream after this block.
	err     error
	errLine int
	readErr error
}

// readBlocks cuts r into blocks of whole lines, hands each to a parser and
// sends it, in order, on the channel it returns, which it closes at the
// end of r. It stops early once quit is closed, and closes read once it
// reads r no more.
func readBlocks(r io.Reader, quit <-chan struct{}) (<-chan *block, <-chan struct{}) {
	parsers := max(1, runtime.NumCPU())
	out := make(chan *block, 2*parsers)
	work := make(chan *block, 2*parsers)
	read := make(chan struct{})
	for range parsers {
		go func() {
			p := newLineParser()
			for blk := range work {
				blk.parse(p)
				if cap(blk.data) == blockSize {
					// The events own copies of their strings.
					b := blk.data[:0]
					blockBuffers.Put(&b)
				}
				blk.data = nil
				close(blk.parsed)
			}
		}()
	}
	go func() {
		defer close(read)
		defer close(out)
		defer close(work)
		var carry []byte
		for {
			select {
			case <-quit:
				return // read no more of r once the stream has returned
			default:
			}
			var buf []byte
			if b, ok := blockBuffers.Get().(*[]byte); ok && len(carry) <= blockSize/2 {
				buf = append((*b)[:0], carry...)
			} else {
				buf = make([]byte, len(carry), max(blockSize, 2*len(carry)))
				copy(buf, carry)
			}
			k, err := io.ReadAtLeast(r, buf[len(buf):cap(buf)], 1)
			buf = buf[:len(buf)+k]
			cut := bytes.LastIndexByte(buf, '\n') + 1
			blk := &block{parsed: make(chan struct{})}
			switch {
			case err != nil:
				// The end (or a failed read): whatever is left is the
				// last line.
				blk.data = buf
				// ReadAtLeast(.., 1) never makes ErrUnexpectedEOF
				// itself: one from r is a cut-off stream (a truncated
				// gzip), not an end.
				if err != io.EOF {
					blk.readErr = err
				}
			case cut == 0 && len(buf) > maxLine:
				blk.readErr = bufio.ErrTooLong
			case cut == 0:
				carry = slices.Clone(buf)
				continue
			default:
				// The carry is copied out: buf is recycled once parsed.
				blk.data, carry = buf[:cut], append(carry[:0:0], buf[cut:]...)
			}
			select {
			case work <- blk:
			case <-quit:
				return
			}
			select {
			case out <- blk:
			case <-quit:
				return
			}
			if err != nil || blk.readErr != nil {
				return
			}
		}
	}()
	return out, read
}

// blockBuffers recycles the blocks' bytes once parsed.
var blockBuffers sync.Pool

// parsedLines recycles blocks' events and line numbers: a soak's history
// would otherwise make gigabytes of them for the collector.
var parsedLines sync.Pool

type lines struct {
	events []Event
	lineOf []int
}

func (blk *block) recycle() {
	clear(blk.events)
	parsedLines.Put(&lines{blk.events[:0], blk.lineOf[:0]})
	blk.events, blk.lineOf = nil, nil
}

// parse decodes the block's lines.
func (blk *block) parse(p *lineParser) {
	data := blk.data
	if l, ok := parsedLines.Get().(*lines); ok {
		blk.events, blk.lineOf = l.events, l.lineOf
	} else {
		blk.events = make([]Event, 0, len(data)/128+1)
		blk.lineOf = make([]int, 0, cap(blk.events))
	}
	for len(data) > 0 {
		blk.lines++
		raw := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			raw, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		if len(raw) > maxLine {
			// As when the reader meets it without its newline.
			blk.readErr = bufio.ErrTooLong
			return
		}
		b := bytes.TrimSpace(raw)
		if len(b) == 0 {
			continue
		}
		blk.events = append(blk.events, Event{})
		e := &blk.events[len(blk.events)-1]
		if !p.parse(b, e) {
			*e = Event{}
			dec := json.NewDecoder(bytes.NewReader(b))
			dec.DisallowUnknownFields()
			if err := dec.Decode(e); err != nil {
				blk.events = blk.events[:len(blk.events)-1]
				blk.err, blk.errLine = err, blk.lines
				return
			}
		}
		blk.lineOf = append(blk.lineOf, blk.lines)
	}
}

// Encode writes events as JSON lines.
func Encode(w io.Writer, events []Event) error {
	bw := bufio.NewWriter(w)
	for _, e := range events {
		line, err := e.MarshalLine()
		if err != nil {
			return err
		}
		bw.Write(line)
		bw.WriteByte('\n')
	}
	return bw.Flush()
}
