// Package ndjson frames JSON-RPC messages as the stdio binding does
// (basic/transports/stdio.mdx): one message per line, lines ended by "\n",
// no newline inside a message. The server (package stdio) and the client
// (package mcpclient) share it.
//
// Reader bounds the memory one line may take: a longer line is skipped to
// its end and reported, so a peer cannot make the reader buffer 100 MB,
// and the stream stays in step. Writer is the only path to the stream:
// each Write is one whole line, written under a lock, so concurrent
// senders never interleave.
package ndjson

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"sync"
)

// ErrTooLong is returned by Reader.Next for a line longer than the limit;
// the line was consumed, so the next call reads the line after it.
var ErrTooLong = errors.New("ndjson: line longer than the limit")

// Reader reads lines of at most a fixed number of bytes.
type Reader struct {
	br  *bufio.Reader
	max int
	buf []byte
}

// NewReader returns a Reader of r whose lines hold at most max bytes
// (without the "\n" and an optional "\r" before it); max must be > 0.
func NewReader(r io.Reader, max int) *Reader {
	size := 64 << 10
	if max+2 < size {
		size = max + 2
	}
	if size < 16 {
		size = 16 // bufio's minimum
	}
	return &Reader{br: bufio.NewReaderSize(r, size), max: max}
}

// Next returns the next line without its "\n" (and a "\r" before it). The
// slice is valid until the next call. A last line without "\n" is returned
// before io.EOF. A line longer than the limit gives ErrTooLong, having been
// read to its end without being kept. Other errors are the reader's.
func (r *Reader) Next() ([]byte, error) {
	r.buf = r.buf[:0]
	tooLong := false
	for {
		chunk, err := r.br.ReadSlice('\n')
		if !tooLong {
			if len(r.buf)+len(chunk) > r.max+2 { // room for "\r\n"
				tooLong = true
				r.buf = r.buf[:0]
			} else {
				r.buf = append(r.buf, chunk...)
			}
		}
		switch {
		case err == nil:
			if tooLong {
				return nil, ErrTooLong
			}
			return r.trim(), r.checkLen()
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			if tooLong {
				return nil, ErrTooLong
			}
			if len(r.buf) == 0 {
				return nil, io.EOF
			}
			return r.trim(), r.checkLen()
		default:
			return nil, err
		}
	}
}

// trim drops the line end.
func (r *Reader) trim() []byte {
	b := bytes.TrimSuffix(r.buf, []byte("\n"))
	return bytes.TrimSuffix(b, []byte("\r"))
}

// checkLen refuses a line that fitted only thanks to the room kept for
// its end: max bytes of content is the limit.
func (r *Reader) checkLen() error {
	if len(r.trim()) > r.max {
		return ErrTooLong
	}
	return nil
}

// Writer writes one message per line to an underlying writer.
type Writer struct {
	mu  sync.Mutex
	w   io.Writer
	err error
}

// NewWriter returns a Writer to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write encodes v as JSON and writes it, with "\n", in one call to the
// underlying writer. Once a write has failed, every later one returns that
// error. A value whose encoding would hold a newline (a json.RawMessage
// given as is) is compacted first.
func (w *Writer) Write(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return w.WriteLine(b)
}

// WriteLine writes one already encoded message. It must be a JSON value;
// white space in it, newlines included, is compacted away.
func (w *Writer) WriteLine(b []byte) error {
	if bytes.ContainsAny(b, "\r\n") {
		var c bytes.Buffer
		if err := json.Compact(&c, b); err != nil {
			return err
		}
		b = c.Bytes()
	}
	line := make([]byte, 0, len(b)+1)
	line = append(append(line, b...), '\n')
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	if _, err := w.w.Write(line); err != nil {
		w.err = err
		return err
	}
	return nil
}

// Err returns the first write error, or nil.
func (w *Writer) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}
