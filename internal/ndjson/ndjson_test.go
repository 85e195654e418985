package ndjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
)

// lines reads everything, "!" standing for a line that was too long.
func lines(t *testing.T, r io.Reader, max int) []string {
	t.Helper()
	rd := NewReader(r, max)
	var out []string
	for {
		b, err := rd.Next()
		switch {
		case errors.Is(err, io.EOF):
			return out
		case errors.Is(err, ErrTooLong):
			out = append(out, "!")
		case err != nil:
			t.Fatal(err)
		default:
			out = append(out, string(b))
		}
	}
}

func TestReader(t *testing.T) {
	tests := []struct {
		name, in string
		max      int
		want     []string
	}{
		{"lines", "a\nbb\n", 10, []string{"a", "bb"}},
		{"crlf", "a\r\nb\r\n", 10, []string{"a", "b"}},
		{"last without newline", "a\nb", 10, []string{"a", "b"}},
		{"empty lines kept", "\n\na\n", 10, []string{"", "", "a"}},
		{"exactly max", "abcd\nx\n", 4, []string{"abcd", "x"}},
		{"exactly max with crlf", "abcd\r\nx\n", 4, []string{"abcd", "x"}},
		{"one over", "abcde\nx\n", 4, []string{"!", "x"}},
		{"over, then more", strings.Repeat("y", 100) + "\nok\n", 4, []string{"!", "ok"}},
		{"over at eof", "ok\n" + strings.Repeat("z", 50), 4, []string{"ok", "!"}},
		{"long line beyond the buffer", strings.Repeat("q", 200<<10) + "\nend\n", 100 << 10, []string{"!", "end"}},
		{"long line within the limit", strings.Repeat("q", 200<<10) + "\n", 300 << 10, []string{strings.Repeat("q", 200<<10)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, r := range []io.Reader{strings.NewReader(tt.in), iotest.OneByteReader(strings.NewReader(tt.in))} {
				got := lines(t, r, tt.max)
				if strings.Join(got, "|") != strings.Join(tt.want, "|") || len(got) != len(tt.want) {
					t.Fatalf("got %q, want %q", clipAll(got), clipAll(tt.want))
				}
			}
		})
	}
}

func clipAll(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		if len(v) > 20 {
			v = v[:20] + "…"
		}
		out[i] = v
	}
	return out
}

// TestReaderError: a read error other than EOF is returned as is.
func TestReaderError(t *testing.T) {
	boom := errors.New("boom")
	rd := NewReader(io.MultiReader(strings.NewReader("a\nb"), iotest.ErrReader(boom)), 10)
	if b, err := rd.Next(); err != nil || string(b) != "a" {
		t.Fatalf("first: %q %v", b, err)
	}
	if _, err := rd.Next(); !errors.Is(err, boom) {
		t.Fatalf("want boom, got %v", err)
	}
}

// FuzzReader: whatever the input and limit, every line returned is within
// the limit and holds no newline, and the lines (with the too-long ones)
// are exactly the input's lines in order.
func FuzzReader(f *testing.F) {
	f.Add([]byte("{\"jsonrpc\":\"2.0\"}\n[1,2]\n\n"), uint8(8))
	f.Add([]byte("abc\r\ndef"), uint8(1))
	f.Add(bytes.Repeat([]byte("x"), 300), uint8(17))
	f.Add([]byte("\r\r\n\n\r"), uint8(0))
	f.Fuzz(func(t *testing.T, in []byte, m uint8) {
		max := int(m) + 1
		rd := NewReader(iotest.HalfReader(bytes.NewReader(in)), max)
		want := bytes.Split(in, []byte("\n"))
		if len(want[len(want)-1]) == 0 {
			want = want[:len(want)-1] // the input ended with "\n" (or was empty)
		}
		for i := 0; ; i++ {
			b, err := rd.Next()
			if errors.Is(err, io.EOF) {
				if i != len(want) {
					t.Fatalf("EOF after %d lines, want %d", i, len(want))
				}
				return
			}
			if i >= len(want) {
				t.Fatalf("line %d beyond the %d in the input", i, len(want))
			}
			exp := bytes.TrimSuffix(want[i], []byte("\r"))
			if errors.Is(err, ErrTooLong) {
				if len(exp) <= max {
					t.Fatalf("line %d (%d bytes) refused with limit %d", i, len(exp), max)
				}
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(b) > max || bytes.IndexByte(b, '\n') >= 0 || !bytes.Equal(b, exp) {
				t.Fatalf("line %d = %q, want %q (limit %d)", i, b, exp, max)
			}
		}
	})
}

// TestWriter: concurrent writes are whole lines; pretty JSON is compacted;
// the first error sticks.
func TestWriter(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			if err := w.Write(map[string]any{"n": i, "s": strings.Repeat("x", 1000)}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if err := w.WriteLine([]byte("{\n  \"a\": 1\n}")); err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(got) != 51 {
		t.Fatalf("%d lines, want 51", len(got))
	}
	for _, l := range got {
		if !json.Valid([]byte(l)) {
			t.Fatalf("not one JSON value per line: %.60q", l)
		}
	}
	if got[50] != `{"a":1}` {
		t.Fatalf("compacted line %q", got[50])
	}
	if err := w.WriteLine([]byte("{\n")); err == nil {
		t.Fatal("a broken message with a newline was written")
	}

	boom := errors.New("closed")
	fw := NewWriter(failWriter{boom})
	if err := fw.Write(1); !errors.Is(err, boom) {
		t.Fatalf("want the write error, got %v", err)
	}
	if err := fw.Write(2); !errors.Is(err, boom) || !errors.Is(fw.Err(), boom) {
		t.Fatalf("the first error does not stick: %v", err)
	}
}

type failWriter struct{ err error }

func (f failWriter) Write([]byte) (int, error) { return 0, f.err }
