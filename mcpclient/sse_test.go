package mcpclient

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
)

func readAllEvents(r io.Reader, max int) ([]sseEvent, error) {
	sr := newSSEReader(r, max)
	var out []sseEvent
	for {
		ev, err := sr.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, ev)
	}
}

func TestSSEReader(t *testing.T) {
	msg := func(d string) sseEvent { return sseEvent{Type: "message", Data: []byte(d)} }
	tests := []struct {
		name string
		in   string
		want []sseEvent
	}{
		{"one event", "data: {}\n\n", []sseEvent{msg("{}")}},
		{"event type", "event: message\ndata: a\n\n", []sseEvent{msg("a")}},
		{"custom type", "event: ping\ndata: a\n\n", []sseEvent{{Type: "ping", Data: []byte("a")}}},
		{"multi-line data", "data: a\ndata: b\ndata\n\n", []sseEvent{msg("a\nb\n")}},
		{"no space after colon", "data:a\n\n", []sseEvent{msg("a")}},
		{"only one space stripped", "data:  a\n\n", []sseEvent{msg(" a")}},
		{"CRLF", "data: a\r\n\r\ndata: b\r\n\r\n", []sseEvent{msg("a"), msg("b")}},
		{"lone CR", "data: a\r\rdata: b\r\r", []sseEvent{msg("a"), msg("b")}},
		{"comments ignored (HTTP-C-06)", ": keep-alive\n\n:x\ndata: a\n: more\n\n", []sseEvent{msg("a")}},
		{"id and retry ignored", "id: 7\nretry: 100\ndata: a\n\n", []sseEvent{msg("a")}},
		{"unknown field ignored", "foo: bar\ndata: a\n\n", []sseEvent{msg("a")}},
		{"blank lines without data dispatch nothing", "\n\n\nevent: x\n\ndata: a\n\n", []sseEvent{msg("a")}},
		{"empty data is an event", "data:\n\n", []sseEvent{msg("")}},
		{"BOM skipped", "\xef\xbb\xbfdata: a\n\n", []sseEvent{msg("a")}},
		{"unterminated event discarded", "data: a\n\ndata: b\n", []sseEvent{msg("a")}},
		{"unterminated line discarded", "data: a\n\ndata: b", []sseEvent{msg("a")}},
		{"colon in value kept", "data: {\"a\":\"b:c\"}\n\n", []sseEvent{msg(`{"a":"b:c"}`)}},
		{"type resets after dispatch", "event: x\ndata: 1\n\ndata: 2\n\n", []sseEvent{{Type: "x", Data: []byte("1")}, msg("2")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, r := range []io.Reader{strings.NewReader(tt.in), iotest.OneByteReader(strings.NewReader(tt.in))} {
				got, err := readAllEvents(r, 1024)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, tt.want) {
					t.Fatalf("got %q, want %q", got, tt.want)
				}
			}
		})
	}
}

func TestSSEReaderLimits(t *testing.T) {
	for _, in := range []string{
		"data: " + strings.Repeat("x", 100) + "\n\n",                    // one long line
		strings.Repeat("data: "+strings.Repeat("x", 30)+"\n", 5) + "\n", // many lines
	} {
		_, err := readAllEvents(strings.NewReader(in), 64)
		if !errors.Is(err, errEventTooLarge) {
			t.Fatalf("err = %v, want errEventTooLarge", err)
		}
	}
	// A broken body surfaces its error.
	_, err := readAllEvents(iotest.ErrReader(io.ErrUnexpectedEOF), 64)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("err = %v", err)
	}
}

// FuzzSSEReader: no input panics or loops, no event exceeds the limit or
// holds a line break other than the data-line joins, and reading in one
// byte steps gives the same events as reading at once.
func FuzzSSEReader(f *testing.F) {
	for _, s := range []string{
		"data: {}\n\n", "event: message\r\ndata: a\r\n\r\n", ": c\r\rdata: b\r\r", "\xef\xbb\xbfdata:x\n\n",
		"data: a\ndata: b\n\n", "data: a\r", "id: 1\nretry: x\n\n", "data", "\r\n\r\n\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		const max = 64
		if len(in) > 4096 {
			return // past a few events nothing new happens; keeps minimising fast
		}
		whole, err1 := readAllEvents(bytes.NewReader(in), max)
		bytewise, err2 := readAllEvents(iotest.OneByteReader(bytes.NewReader(in)), max)
		if (err1 == nil) != (err2 == nil) || !reflect.DeepEqual(whole, bytewise) {
			t.Fatalf("chunking changed the result: %q %v vs %q %v", whole, err1, bytewise, err2)
		}
		for _, ev := range whole {
			if len(ev.Data) > max || bytes.IndexByte(ev.Data, '\r') >= 0 || ev.Type == "" {
				t.Fatalf("bad event %q", ev)
			}
		}
	})
}
