package check

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// tamper is one altered requestState.
type tamper struct {
	what  string
	state string
}

// flipChar replaces the character at i by another of the same class that
// every base64 and hex alphabet has in both spellings (a↔b, c↔d, …,
// 0↔1, …), so the state stays well-formed text but its bytes change.
func flipChar(s string, i int) (string, bool) {
	c := s[i]
	var d byte
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		base := byte('a')
		if c <= 'Z' {
			base = 'A'
		}
		off := c - base
		if off == 25 {
			d = base + 24
		} else {
			d = base + (off ^ 1)
		}
	case c >= '0' && c <= '9':
		d = '0' + ((c - '0') ^ 1)
	default:
		return "", false
	}
	return s[:i] + string(d) + s[i+1:], true
}

// bitFlips alters one character at a quarter, a half and three quarters
// of the state (not at the end, where base64 padding bits may be
// ignored by a lenient decoder).
func bitFlips(s string) []tamper {
	var out []tamper
	seen := map[int]bool{}
	for _, frac := range []int{1, 2, 3} {
		for i := len(s) * frac / 4; i < len(s); i++ {
			if seen[i] {
				break
			}
			if t, ok := flipChar(s, i); ok {
				seen[i] = true
				out = append(out, tamper{what: "one character changed at offset " + itoa(i), state: t})
				break
			}
		}
	}
	return out
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

// truncations cut the state to half its length and drop its last
// character.
func truncations(s string) []tamper {
	if len(s) < 2 {
		return nil
	}
	return []tamper{
		{what: "cut to half its length", state: s[:len(s)/2]},
		{what: "last character dropped", state: s[:len(s)-1]},
	}
}

// reencodings spell the same bytes differently: base64 standard ↔ URL
// alphabet, padding added or removed. None when the state has no
// alternative spelling.
func reencodings(s string) []tamper {
	var out []tamper
	trimmed := strings.TrimRight(s, "=")
	if strings.ContainsAny(s, "+/") {
		out = append(out, tamper{what: "base64 standard alphabet respelled as URL-safe", state: strings.NewReplacer("+", "-", "/", "_").Replace(s)})
	}
	if strings.ContainsAny(s, "-_") && isBase64ish(trimmed) {
		out = append(out, tamper{what: "base64 URL-safe alphabet respelled as standard", state: strings.NewReplacer("-", "+", "_", "/").Replace(s)})
	}
	switch {
	case trimmed != s:
		out = append(out, tamper{what: "base64 padding removed", state: trimmed})
	case len(s)%4 != 0 && isBase64ish(s):
		out = append(out, tamper{what: "base64 padding added", state: s + strings.Repeat("=", 4-len(s)%4)})
	}
	return out
}

func isBase64ish(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("+/-_=", c) >= 0) {
			return false
		}
	}
	return true
}

// segmentSwaps swaps the first two distinct segments of a state made of
// separated parts (JWT-like "a.b.c", "a~b", "a:b", "a|b").
func segmentSwaps(s string) []tamper {
	for _, sep := range []string{".", "~", ":", "|"} {
		parts := strings.Split(s, sep)
		if len(parts) < 2 {
			continue
		}
		for i := 0; i+1 < len(parts); i++ {
			if parts[i] != parts[i+1] && parts[i] != "" && parts[i+1] != "" {
				p := append([]string(nil), parts...)
				p[i], p[i+1] = p[i+1], p[i]
				return []tamper{{what: "segments " + itoa(i+1) + " and " + itoa(i+2) + ` (separated by "` + sep + `") swapped`, state: strings.Join(p, sep)}}
			}
		}
	}
	return nil
}

// decodings returns every readable decoding of the state: the state
// itself, base64 in its four spellings, hex, and the same for each
// "."-separated segment (JWT-like states).
func decodings(s string) [][]byte {
	var out [][]byte
	try := func(t string) {
		out = append(out, []byte(t))
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
			if b, err := enc.DecodeString(t); err == nil {
				out = append(out, b)
			}
		}
		if b, err := hex.DecodeString(t); err == nil {
			out = append(out, b)
		}
	}
	try(s)
	if parts := strings.Split(s, "."); len(parts) > 1 {
		for _, p := range parts {
			try(p)
		}
	}
	return out
}

// decodedLen is the fewest bytes s decodes to as a whole (base64 in any
// spelling, or hex), or its length when it decodes as neither.
func decodedLen(s string) int {
	n := len(s)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil && s != "" {
			n = min(n, len(b))
		}
	}
	if b, err := hex.DecodeString(s); err == nil && s != "" {
		n = min(n, len(b))
	}
	return n
}

// readable reports whether b is a JSON object or array, or mostly
// printable text (at least 16 bytes, 90 % printable ASCII).
func readable(b []byte) (string, bool) {
	t := bytes.TrimSpace(b)
	if len(t) > 1 && (t[0] == '{' || t[0] == '[') && json.Valid(t) {
		return "JSON", true
	}
	if len(t) < 16 || !utf8.Valid(t) {
		return "", false
	}
	printable := 0
	for _, c := range t {
		if c >= 0x20 && c < 0x7f {
			printable++
		}
	}
	if printable*10 >= len(t)*9 {
		return "text", true
	}
	return "", false
}

// reencodeLike re-encodes b the way s was encoded (one of the base64
// spellings), for a state edited after decoding; "" when s is not base64.
func reencodeLike(s string, b []byte) string {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
		if _, err := enc.DecodeString(s); err == nil {
			return enc.EncodeToString(b)
		}
	}
	return ""
}

// rawText reports whether the state, as sent, reads as words rather than
// an encoding of bytes: no upper-case letter (base64 of random bytes has
// some), not hex, and a run of four letters ("round=1;name=x",
// "request_state").
func rawText(s string) bool {
	run, longest, hexOnly := 0, 0, true
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'A' && c <= 'Z':
			return false
		case c >= 'a' && c <= 'z':
			run++
			longest = max(longest, run)
			if c > 'f' {
				hexOnly = false
			}
		default:
			run = 0
			if c < '0' || c > '9' {
				hexOnly = false
			}
		}
	}
	return longest >= 4 && !hexOnly
}
