package textclass

import (
	"testing"
	"unicode"
)

func TestHidden(t *testing.T) {
	for _, tt := range []struct {
		r      rune
		hidden bool
		why    string
	}{
		{'\x00', true, "NUL"},
		{'\t', true, "tab (text answers allow it; printers decide)"},
		{'\n', true, "line feed"},
		{'\r', true, "carriage return"},
		{'\x1b', true, "ESC"},
		{0x7f, true, "DEL"},
		{0x9b, true, "C1 CSI"},
		{0x00ad, true, "soft hyphen"},
		{0x034f, true, "combining grapheme joiner"},
		{0x061c, true, "Arabic letter mark"},
		{0x115f, true, "Hangul choseong filler"},
		{0x1160, true, "Hangul jungseong filler"},
		{0x17b4, true, "Khmer vowel inherent AQ"},
		{0x17b5, true, "Khmer vowel inherent AA"},
		{0x180e, true, "Mongolian vowel separator"},
		{0x200b, true, "zero-width space"},
		{0x200c, true, "zero-width non-joiner"},
		{0x200d, true, "zero-width joiner"},
		{0x200e, true, "left-to-right mark"},
		{0x2028, true, "line separator"},
		{0x2029, true, "paragraph separator"},
		{0x202e, true, "right-to-left override"},
		{0x2066, true, "left-to-right isolate"},
		{0x2800, true, "Braille pattern blank"},
		{0x3164, true, "Hangul filler"},
		{0xfeff, true, "byte-order mark"},
		{0xffa0, true, "halfwidth Hangul filler"},
		{0xfff0, true, "reserved default-ignorable"},
		{0xe0001, true, "language tag"},
		{0xe0100, true, "variation selector 17"},
		{0xe01ef, true, "variation selector 256"},
		{'a', false, "letter"},
		{' ', false, "space"},
		{0x00a0, false, "no-break space"},
		{0x3000, false, "ideographic space"},
		{0x00e9, false, "é"},
		{0x0301, false, "combining acute accent"},
		{0x1100, false, "Hangul choseong kiyeok (not a filler)"},
		{0x2801, false, "Braille pattern dots-1"},
		{0xfe0f, false, "emoji variation selector"},
		{0x1f600, false, "emoji"},
		{0xe000, false, "private use (Escaped, not Hidden)"},
	} {
		if got := Hidden(tt.r); got != tt.hidden {
			t.Errorf("Hidden(%U %s) = %v, want %v", tt.r, tt.why, got, tt.hidden)
		}
	}
}

func TestJoiner(t *testing.T) {
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if want := r == 0x200c || r == 0x200d; Joiner(r) != want {
			t.Fatalf("Joiner(%U) = %v", r, !want)
		}
		if Joiner(r) && !Hidden(r) {
			t.Fatalf("%U is a joiner but not Hidden", r)
		}
	}
}

// Escaped is Hidden plus what is not graphic at all: private use,
// surrogates, unassigned code points.
func TestEscaped(t *testing.T) {
	for _, r := range []rune{0x2800, 0x3164, 0x202e, 0x1b} {
		if !Escaped(r) {
			t.Errorf("Escaped(%U) = false", r)
		}
	}
	for _, r := range []rune{'a', ' ', 0x00a0, 0xfe0f, 0x1f600} {
		if Escaped(r) {
			t.Errorf("Escaped(%U) = true", r)
		}
	}
	for _, r := range []rune{0xe000, 0xf8ff, 0x10fffd, 0xd800, 0x0378} {
		if !Escaped(r) || Hidden(r) {
			t.Errorf("%U: Escaped %v Hidden %v, want true false", r, Escaped(r), Hidden(r))
		}
	}
}
