package history

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
)

// ReadFile reads a history.jsonl file.
func ReadFile(path string) ([]Event, error) {
	f, err := os.Open(path)
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
// the next line. An error from each stops the stream and is returned.
func Stream(r io.Reader, each func(e *Event) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 256*1024), 16*1024*1024)
	v := NewValidator()
	fast := newLineParser()
	var e Event
	n := 0
	for line := 1; sc.Scan(); line++ {
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		if !fast.parse(b, &e) {
			e = Event{}
			dec := json.NewDecoder(bytes.NewReader(b))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&e); err != nil {
				return fmt.Errorf("line %d: %v", line, err)
			}
		}
		if err := v.next(&e); err != nil {
			return fmt.Errorf("line %d: %v", line, err)
		}
		if err := each(&e); err != nil {
			return err
		}
		n++
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("after line %d: %v", n, err)
	}
	return nil
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
