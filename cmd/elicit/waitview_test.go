package main

import "testing"

// fitColumns keeps a status line within the terminal's width, so that
// rewriting it in place (carriage return, erase line) never leaves a
// wrapped remainder behind.
func TestFitColumns(t *testing.T) {
	for _, tc := range []struct {
		s    string
		n    int
		want string
	}{
		{"Task working: Exporting", 0, "Task working: Exporting"},
		{"Task working: Exporting", 23, "Task working: Exporting"},
		{"Task working: Exporting", 10, "Task work…"},
		{"日本語のテキスト", 7, "日本語…"},                  // two columns each
		{"cafe\u0301 au lait", 5, "cafe\u0301…"}, // the accent takes none
		{"ab", 1, "…"},
	} {
		if got := fitColumns(tc.s, tc.n); got != tc.want {
			t.Errorf("fitColumns(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
		if tc.n > 0 && columnsOf(fitColumns(tc.s, tc.n)) > tc.n {
			t.Errorf("fitColumns(%q, %d) is wider than %d", tc.s, tc.n, tc.n)
		}
	}
}

// Only Esc on its own cancels; a key's escape sequence (an arrow) or
// Alt with a letter does not.
func TestOnlyEsc(t *testing.T) {
	for in, want := range map[string]bool{"\x1b": true, "\x1b\x1b": true, "\x1b[A": false, "\x1bx": false, "q": false, "": false} {
		if got := onlyEsc([]byte(in)); got != want {
			t.Errorf("onlyEsc(%q) = %v, want %v", in, got, want)
		}
	}
}
