package mcpclient

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// sseEvent is one dispatched server-sent event.
type sseEvent struct {
	// Type is the "event" field, "message" when absent.
	Type string
	// Data is the "data" lines joined with "\n".
	Data []byte
}

// sseReader reads a text/event-stream body as the HTML standard's event
// stream interpretation says (WHATWG HTML §9.2.6): lines end in CRLF, LF or
// CR; a leading BOM is skipped; ":" lines are comments (keep-alives,
// HTTP-C-06); "data" lines accumulate; a blank line dispatches; "id" and
// "retry" are ignored (no resumption in 2026-07-28); an event cut off by
// the end of the stream is discarded. No event may exceed max bytes.
type sseReader struct {
	sc    *bufio.Scanner
	max   int
	first bool
	typ   string
	data  bytes.Buffer
	has   bool // a data field was seen since the last dispatch
	// comment, when set, is called for each comment line (a keep-alive).
	comment func()
}

// errEventTooLarge is returned when one event's data exceeds the limit.
var errEventTooLarge = errors.New("mcpclient: SSE event too large")

func newSSEReader(r io.Reader, max int) *sseReader {
	sc := bufio.NewScanner(r)
	// A line holds at most one event's data plus its field name.
	sc.Buffer(make([]byte, 0, 4096), max+64)
	sc.Split(splitSSELines)
	return &sseReader{sc: sc, max: max, first: true}
}

// Next returns the next event, io.EOF at the end of the stream, or an
// error for an unreadable stream or an oversized event.
func (r *sseReader) Next() (sseEvent, error) {
	for r.sc.Scan() {
		line := r.sc.Bytes()
		if r.first {
			r.first = false
			line = bytes.TrimPrefix(line, []byte("\xef\xbb\xbf"))
		}
		if len(line) == 0 {
			if !r.has {
				r.typ = ""
				continue
			}
			ev := sseEvent{Type: r.typ, Data: bytes.Clone(bytes.TrimSuffix(r.data.Bytes(), []byte("\n")))}
			if ev.Type == "" {
				ev.Type = "message"
			}
			r.typ, r.has = "", false
			r.data.Reset()
			return ev, nil
		}
		if line[0] == ':' {
			if r.comment != nil {
				r.comment()
			}
			continue // comment
		}
		field, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], line[i+1:]
			value = bytes.TrimPrefix(value, []byte(" "))
		}
		switch string(field) {
		case "event":
			r.typ = string(value)
		case "data":
			if r.data.Len()+len(value)+1 > r.max {
				return sseEvent{}, errEventTooLarge
			}
			r.data.Write(value)
			r.data.WriteByte('\n')
			r.has = true
		}
	}
	if err := r.sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return sseEvent{}, errEventTooLarge
		}
		return sseEvent{}, fmt.Errorf("mcpclient: reading SSE stream: %w", err)
	}
	return sseEvent{}, io.EOF
}

// splitSSELines is a bufio.SplitFunc for SSE lines: CRLF, LF or a lone CR
// ends a line. A final line with no line ending is dropped, as the event it
// belongs to could never be dispatched.
func splitSSELines(data []byte, atEOF bool) (int, []byte, error) {
	i := bytes.IndexAny(data, "\r\n")
	if i < 0 {
		if atEOF {
			return len(data), nil, nil
		}
		return 0, nil, nil
	}
	if data[i] == '\n' {
		return i + 1, data[:i], nil
	}
	// A CR: swallow a following LF, which may not have arrived yet.
	if i+1 < len(data) {
		if data[i+1] == '\n' {
			return i + 2, data[:i], nil
		}
		return i + 1, data[:i], nil
	}
	if atEOF {
		return i + 1, data[:i], nil
	}
	return 0, nil, nil
}
