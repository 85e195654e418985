// Package textclass is the one definition of the characters that act on
// text instead of being part of it. The server's check of free-text form
// answers (elicit), the client's terminal escaping (internal/termtext),
// the URL consent screen (consent) and the reference tools' quoting share
// it, so what a server accepts as plain text is exactly what a client
// shows as it is (minus the joiners, see Joiner).
package textclass

import "unicode"

// Hidden reports whether r renders as nothing or changes how the text
// around it shows, so it can hide or fake content wherever the text is
// printed:
//
//   - C0 controls, DEL and C1 controls (ESC starts terminal sequences, CR
//     overwrites a line, NUL cuts text short), tab and line feed included;
//   - format characters (category Cf): bidi embeddings, overrides and
//     isolates, the direction marks, zero-width spaces and joiners, the
//     byte-order mark, the soft hyphen, tag characters;
//   - the line and paragraph separators U+2028 and U+2029;
//   - the other default-ignorable code points (Unicode property
//     Other_Default_Ignorable_Code_Point), which render as nothing though
//     they are letters or marks: the Hangul fillers U+115F, U+1160, U+3164
//     and U+FFA0, the combining grapheme joiner U+034F, the Khmer inherent
//     vowels U+17B4 and U+17B5, U+FFF0–U+FFF8 and reserved ranges;
//   - the supplementary variation selectors U+E0100–U+E01EF, which can
//     carry data in plain sight;
//   - the blank Braille pattern U+2800, a symbol that looks like a space
//     but is not one, so it passes as "not blank".
//
// Ordinary spaces (U+0020, U+00A0, U+3000 and the other Zs) and the emoji
// variation selectors U+FE00–U+FE0F are not Hidden.
func Hidden(r rune) bool {
	switch {
	case r < 0x20 || (r >= 0x7f && r < 0xa0):
		return true
	case r < 0x7f:
		return false
	case r == 0x2800 || (r >= 0xe0100 && r <= 0xe01ef):
		return true
	}
	return unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp, unicode.Other_Default_Ignorable_Code_Point)
}

// Joiner reports the zero-width non-joiner U+200C and joiner U+200D:
// Hidden, but needed inside words of several scripts (Persian, the Indic
// scripts) and in emoji sequences, so a free-text answer may hold them; a
// terminal still shows them as escapes.
func Joiner(r rune) bool { return r == 0x200c || r == 0x200d }

// Escaped reports whether a printer must write r as an escape: Hidden, or
// not graphic at all (private-use, surrogate and unassigned code points,
// which a later Unicode version may make format characters).
func Escaped(r rune) bool { return Hidden(r) || !unicode.IsGraphic(r) }
