package termtext

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestLineAndBlock(t *testing.T) {
	for _, tc := range []struct {
		name, in, line, block string
	}{
		{"plain", "hello, world", "hello, world", "hello, world"},
		{"non-Latin kept", "Numéro de carte — 日本語 パスワード ❤️", "Numéro de carte — 日本語 パスワード ❤️", "Numéro de carte — 日本語 パスワード ❤️"},
		{"spaces kept", "a\u00a0b\u3000c\u202fd", "a\u00a0b\u3000c\u202fd", "a\u00a0b\u3000c\u202fd"},
		{"screen clear", "a\x1b[2Jb", `a\x1b[2Jb`, `a\x1b[2Jb`},
		{"OSC title", "\x1b]0;pwned\x07", `\x1b]0;pwned\a`, `\x1b]0;pwned\a`},
		{"OSC 8 link", "\x1b]8;;https://evil.example/\x1b\\click\x1b]8;;\x1b\\", `\x1b]8;;https://evil.example/\x1b\click\x1b]8;;\x1b\`, `\x1b]8;;https://evil.example/\x1b\click\x1b]8;;\x1b\`},
		{"C1 CSI", "a\u009b31mb", `a\u009b31mb`, `a\u009b31mb`},
		{"raw byte 0x9b", "a\x9b31m", `a\x9b31m`, `a\x9b31m`},
		{"NUL BEL BS DEL", "a\x00b\x07c\x08d\x7f", `a\x00b\ac\bd\x7f`, `a\x00b\ac\bd\x7f`},
		{"CR", "safe\revil", `safe\revil`, `safe\revil`},
		{"newline and tab", "a\nb\tc", `a\nb\tc`, "a\nb\tc"},
		{"bidi", "a\u202ecba\u202c \u2066x\u2069 \u200e\u200f\u061c", `a\u202ecba\u202c \u2066x\u2069 \u200e\u200f\u061c`, `a\u202ecba\u202c \u2066x\u2069 \u200e\u200f\u061c`},
		{"zero width and BOM", "a\u200bb\ufeffc\u00add", `a\u200bb\ufeffc\u00add`, `a\u200bb\ufeffc\u00add`},
		{"separators", "a\u2028b\u2029c", `a\u2028b\u2029c`, `a\u2028b\u2029c`},
		{"Hangul filler", "a\u3164b\u115fc", `a\u3164b\u115fc`, `a\u3164b\u115fc`},
		{"Braille blank and other fillers", "a\u2800b\u1160c\uffa0d\u034fe\u17b4f", `a\u2800b\u1160c\uffa0d\u034fe\u17b4f`, `a\u2800b\u1160c\uffa0d\u034fe\u17b4f`},
		{"tags and supplementary selectors", "a\U000e0041b\U000e0100c", `a\U000e0041b\U000e0100c`, `a\U000e0041b\U000e0100c`},
		{"private use and unassigned", "a\ue000b\U0010ffffc", `a\ue000b\U0010ffffc`, `a\ue000b\U0010ffffc`},
		{"replacement character kept", "a\ufffdb", "a\ufffdb", "a\ufffdb"},
		{"truncated UTF-8", "ab\xe2\x80", `ab\xe2\x80`, `ab\xe2\x80`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Line(tc.in); got != tc.line {
				t.Errorf("Line(%q) = %q, want %q", tc.in, got, tc.line)
			}
			if got := Block(tc.in); got != tc.block {
				t.Errorf("Block(%q) = %q, want %q", tc.in, got, tc.block)
			}
		})
	}
}

func TestJSON(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want string // the encoded string, quotes included
	}{
		{"plain", "hello", `"hello"`},
		{"non-Latin kept", "Numéro 日本語 ❤️", `"Numéro 日本語 ❤️"`},
		{"ESC already escaped by encoding/json", "\x1b[2J", `"\u001b[2J"`},
		{"DEL", "a\x7fb", `"a\u007fb"`},
		{"C1", "a\u009bb", `"a\u009bb"`},
		{"bidi", "\u202eabc\u2066\u200f\u061c", `"\u202eabc\u2066\u200f\u061c"`},
		{"tag character", "a\U000e0041", `"a\udb40\udc41"`},
		{"escaped quote then bidi", "\"\u202e\\", `"\"\u202e\\"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(map[string]string{"k": tc.in})
			if err != nil {
				t.Fatal(err)
			}
			got := string(JSON(b))
			if want := `{"k":` + tc.want + `}`; got != want {
				t.Errorf("JSON = %s, want %s", got, want)
			}
			var back map[string]string
			if err := json.Unmarshal([]byte(got), &back); err != nil || back["k"] != tc.in {
				t.Errorf("decodes to %q (%v), want %q", back["k"], err, tc.in)
			}
		})
	}
	// Structure outside strings is left alone; bytes that are not UTF-8 in
	// a string (from a json.RawMessage) become U+FFFD.
	in := []byte("{\n  \"a\": [1, true],\n\t\"b\": \"x\xffy\"\n}")
	if got, want := string(JSON(in)), "{\n  \"a\": [1, true],\n\t\"b\": \"x\\ufffdy\"\n}"; got != want {
		t.Errorf("JSON(%q) = %q, want %q", in, got, want)
	}
}

func TestWriteJSON(t *testing.T) {
	var b bytes.Buffer
	if err := WriteJSON(&b, struct {
		Name string `json:"name"`
	}{"a\u202eb"}); err != nil {
		t.Fatal(err)
	}
	if got, want := b.String(), "{\n  \"name\": \"a\\u202eb\"\n}\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if err := WriteJSON(&b, func() {}); err == nil {
		t.Error("a value JSON cannot encode gave no error")
	}
}

func TestWriter(t *testing.T) {
	var b bytes.Buffer
	w := Writer(&b)
	n, err := w.Write([]byte("level=WARN msg=\x1b[2J\n"))
	if err != nil || n != len("level=WARN msg=\x1b[2J\n") {
		t.Fatalf("Write = %d, %v", n, err)
	}
	if got, want := b.String(), "level=WARN msg=\\x1b[2J\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// rawUnsafe reports the first character of out that a terminal must not
// get raw (newline and tab aside), or "".
func rawUnsafe(out string) string {
	for i, r := range out {
		if r == utf8.RuneError && !strings.HasPrefix(out[i:], "\ufffd") {
			return "byte " + out[i:i+1]
		}
		if r != '\n' && r != '\t' && Escaped(r) {
			return string(r)
		}
	}
	return ""
}

func FuzzSanitize(f *testing.F) {
	for _, s := range []string{"", "plain", "\x1b]0;t\x07", "a\u202eb", "\x9b", "\xe2\x80", "\U000e0041", "\"\\\u2028"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		line, block := Line(s), Block(s)
		if !utf8.ValidString(line) || !utf8.ValidString(block) {
			t.Fatalf("not UTF-8: %q %q", line, block)
		}
		if bad := rawUnsafe(line); bad != "" || strings.ContainsAny(line, "\n\t") {
			t.Fatalf("Line(%q) = %q keeps %q", s, line, bad)
		}
		if bad := rawUnsafe(block); bad != "" {
			t.Fatalf("Block(%q) = %q keeps %q", s, block, bad)
		}
		if firstUnsafe(s, false) < 0 && line != s {
			t.Fatalf("Line changed safe text %q to %q", s, line)
		}
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		j := JSON(b)
		if bad := rawUnsafe(string(j)); bad != "" {
			t.Fatalf("JSON(%s) = %s keeps %q", b, j, bad)
		}
		var back string
		if err := json.Unmarshal(j, &back); err != nil {
			t.Fatalf("JSON(%s) = %s does not decode: %v", b, j, err)
		}
		if utf8.ValidString(s) && back != s {
			t.Fatalf("JSON(%s) decodes to %q, want %q", b, back, s)
		}
	})
}

func TestClip(t *testing.T) {
	for in, want := range map[string]string{
		"short":           "short",
		"0123456789abc":   "0123456789…",
		"\x1b[2Jcleared":  `\x1b[2Jcleare…`,
		"ééééééé":         "ééééé…",
		"ok\u202egnp.exe": `ok\u202egnp.e…`,
	} {
		if got := Clip(in, 10); got != want {
			t.Errorf("Clip(%q, 10) = %q, want %q", in, got, want)
		}
	}
}
