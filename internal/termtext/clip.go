package termtext

import "strings"

// Clip is Line for server text quoted in an error message as it is made:
// at most n bytes of s (cut on a rune boundary, "…" added when cut), so a
// hostile server cannot stuff a screenful into one error, and escaped as
// Line does, so the error is safe even where it is printed raw.
func Clip(s string, n int) string {
	if len(s) > n {
		s = strings.ToValidUTF8(s[:n], "") + "…"
	}
	return Line(s)
}
