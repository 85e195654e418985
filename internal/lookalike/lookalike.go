// Package lookalike maps letters of other scripts to the Latin letters
// they are easily mistaken for: a small subset of Unicode's
// confusables.txt, the lower-case Cyrillic, Greek and Armenian letters
// that survive IDNA mapping. Package consent uses it to show what a
// homograph host imitates, package elicit to read "pаsswоrd" (with
// Cyrillic а and о) as "password".
package lookalike

import "strings"

var latin = map[rune]rune{
	// Cyrillic
	'а': 'a', 'е': 'e', 'о': 'o', 'р': 'p', 'с': 'c', 'у': 'y', 'х': 'x', 'ѕ': 's', 'і': 'i', 'ј': 'j',
	'ԁ': 'd', 'һ': 'h', 'ӏ': 'l', 'ԛ': 'q', 'ԝ': 'w', 'ү': 'y',
	// Greek
	'α': 'a', 'ο': 'o', 'ν': 'v', 'ι': 'i', 'ρ': 'p', 'υ': 'u', 'χ': 'x', 'ϲ': 'c', 'ϳ': 'j', 'γ': 'y',
	'η': 'n', 'ω': 'w',
	// Armenian
	'օ': 'o', 'ս': 'u', 'ց': 'g', 'զ': 'q', 'հ': 'h', 'ո': 'n', 'ռ': 'n', 'ա': 'w',
}

// Latin returns the Latin letter r is easily mistaken for, and whether
// there is one. r is expected in lower case.
func Latin(r rune) (rune, bool) {
	l, ok := latin[r]
	return l, ok
}

// Skeleton replaces every look-alike letter of s by the Latin letter it
// imitates; other characters are kept.
func Skeleton(s string) string {
	return strings.Map(func(c rune) rune {
		if l, ok := latin[c]; ok {
			return l
		}
		return c
	}, s)
}
