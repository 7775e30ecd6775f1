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
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	var events []Event
	v := NewValidator()
	for line := 1; sc.Scan(); line++ {
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var e Event
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&e); err != nil {
			return events, fmt.Errorf("line %d: %v", line, err)
		}
		if err := v.Next(e); err != nil {
			return events, fmt.Errorf("line %d: %v", line, err)
		}
		events = append(events, e)
	}
	if err := sc.Err(); err != nil {
		return events, fmt.Errorf("after line %d: %v", len(events), err)
	}
	return events, nil
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
