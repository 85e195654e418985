// Package termtext is the one sanitizer for text that came from an MCP
// server, a web page or a TLS certificate on its way to a terminal or to
// --json output. Every print path of the elicit command, elicit check and
// package consent goes through it; a new print path must too:
//
//   - Line(s) for text on one line (names, titles, URLs, error messages);
//   - Block(s) for text that may span lines (descriptions, messages,
//     results): newlines and tabs are kept;
//   - WriteJSON(w, v) / JSON(b) for JSON output, which then reads on a
//     terminal as it is;
//   - Writer(w) wraps an io.Writer whose every write is passed through
//     Block, for output made by code that does not know about this package
//     (an error printed with %v, a log handler).
//
// Errors are cleaned where they are printed, not where they are made: an
// error chain may carry server text from anywhere (a JSON-RPC message, a
// -32022 data.supported list, the DNS names of a certificate in an x509
// error, an HTTP body).
//
// What is escaped (Escaped reports it for one rune):
//
//   - C0 controls, DEL and C1 controls (ESC starts every ANSI sequence:
//     screen clears, OSC title changes and OSC 8 hyperlinks; U+009B is a
//     one-character CSI; BEL, BS and CR rewrite what is already shown);
//   - format characters (category Cf): bidi embeddings, overrides and
//     isolates (U+202A–U+202E, U+2066–U+2069), the marks U+200E, U+200F and
//     U+061C, zero-width characters, the byte-order mark, tag characters;
//   - line and paragraph separators (U+2028, U+2029);
//   - the other default-ignorable code points that render as nothing
//     (Hangul fillers U+115F, U+1160, U+3164, U+FFA0, the combining
//     grapheme joiner, the Khmer inherent vowels U+17B4 and U+17B5,
//     U+FFF0–U+FFF8), the blank Braille pattern U+2800 and the
//     supplementary variation selectors U+E0100–U+E01EF, which can hide
//     data in plain sight (internal/textclass.Hidden, the one definition
//     the server's check of free-text answers uses too);
//   - private-use and unassigned code points (a later Unicode version may
//     make them format characters);
//   - bytes that are not UTF-8, one by one (a lone 0x9B is CSI to a
//     terminal that reads Latin-1).
//
// In text the escapes are Go's (\n, \t, \x1b, \u202e, \U000e0001; \xNN
// for a byte that is not UTF-8), so what was hidden is shown; they are for
// reading, not for decoding (a backslash the server sent is left as it
// is). In JSON they are \uXXXX escapes (surrogate pairs above U+FFFF), so
// the document decodes to the same strings; bytes that are not UTF-8
// become U+FFFD, as encoding/json does.
//
// Kept as they are: letters, marks, digits, punctuation, symbols and
// spaces of every script (non-ASCII spaces such as U+00A0 and U+3000
// included: they are blank but move nothing), and the variation selectors
// U+FE00–U+FE0F that pick emoji presentation. Combining marks are not
// limited in number.
package termtext

import (
	"bytes"
	"encoding/json"
	"io"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/mcp-elicit/elicit/internal/textclass"
)

// Escaped reports whether r is written as an escape (see the package
// doc): textclass.Escaped, the definition the server's check of free-text
// answers shares.
func Escaped(r rune) bool { return textclass.Escaped(r) }

// Line returns s with every character Escaped reports, newlines and tabs
// included, written as an escape: server text on one line of output.
func Line(s string) string { return escape(s, false) }

// Block returns s as Line does, but keeps newlines and tabs: multi-line
// server text (a description, a message, a tool result). A carriage
// return is escaped: it would move the cursor back over what was printed.
func Block(s string) string { return escape(s, true) }

func escape(s string, multiline bool) string {
	i := firstUnsafe(s, multiline)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	b.WriteString(s[:i])
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteString(`\x`)
			b.WriteString(strconv.FormatUint(uint64(s[i])>>4, 16))
			b.WriteString(strconv.FormatUint(uint64(s[i])&0xf, 16))
		case multiline && (r == '\n' || r == '\t'):
			b.WriteRune(r)
		case Escaped(r):
			q := strconv.QuoteRuneToASCII(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// firstUnsafe returns the index of the first byte of s that escape would
// change, or -1.
func firstUnsafe(s string, multiline bool) int {
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c < 0x7f {
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || (Escaped(r) && !(multiline && (r == '\n' || r == '\t'))) {
			return i
		}
		i += size
	}
	return -1
}

// JSON returns the JSON text b with every character of its strings that
// Escaped reports written as a \uXXXX escape, so the document decodes to
// the same values but cannot drive or reorder a terminal. Outside strings
// b is copied as it is. b is expected to come from encoding/json (which
// already escapes the C0 controls); bytes that are not UTF-8 inside a
// string become \ufffd.
func JSON(b []byte) []byte {
	var out bytes.Buffer
	out.Grow(len(b))
	inString, backslash := false, false
	for i := 0; i < len(b); {
		c := b[i]
		if !inString || (c >= 0x20 && c < 0x7f) {
			switch {
			case !inString:
				inString = c == '"'
			case backslash:
				backslash = false
			case c == '\\':
				backslash = true
			case c == '"':
				inString = false
			}
			out.WriteByte(c)
			i++
			continue
		}
		backslash = false
		r, size := utf8.DecodeRune(b[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			out.WriteString(`\ufffd`)
		case Escaped(r):
			writeU(&out, r)
		default:
			out.Write(b[i : i+size])
		}
		i += size
	}
	return out.Bytes()
}

// writeU writes r as one \uXXXX escape, or two (a surrogate pair).
func writeU(out *bytes.Buffer, r rune) {
	if r > 0xffff {
		r1, r2 := utf16.EncodeRune(r)
		writeU(out, r1)
		writeU(out, r2)
		return
	}
	const hex = "0123456789abcdef"
	out.WriteString(`\u`)
	out.WriteByte(hex[r>>12&0xf])
	out.WriteByte(hex[r>>8&0xf])
	out.WriteByte(hex[r>>4&0xf])
	out.WriteByte(hex[r&0xf])
}

// WriteJSON writes v as indented JSON (two spaces) and a newline, with
// its strings made safe by JSON. Text stays text: &, < and > are not
// HTML-escaped (R&D, not R\u0026D), since the output is read, not put in
// a page. It returns the encoding or write error.
func WriteJSON(w io.Writer, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(JSON(buf.Bytes())) // Encode ends it with a newline
	return err
}

// Writer returns a writer that passes every write through Block before
// writing it to w. A write is cleaned on its own: a UTF-8 character split
// across two writes is escaped as bytes. It reports len(p) written when w
// took the whole cleaned text.
func Writer(w io.Writer) io.Writer { return &writer{w: w} }

type writer struct{ w io.Writer }

func (t *writer) Write(p []byte) (int, error) {
	if _, err := io.WriteString(t.w, Block(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}
