package calendar

import (
	"testing"
	"time"
)

// Titles come from a third party: they are quoted, and characters that
// could reorder or hide text in the client are escaped.
func TestFormatEvents(t *testing.T) {
	at := time.Date(2026, 12, 1, 9, 30, 0, 0, time.FixedZone("CET", 3600))
	cases := []struct {
		name   string
		events []event
		want   string
	}{
		{"none", nil, TextNoEvents},
		{"one, shown in UTC", []event{{ID: "1", Title: "Dentist", Start: at}}, "Your calendar has 1 event(s):\n- 2026-12-01 08:30 UTC \"Dentist\""},
		{"quotes and newlines", []event{{Title: "a \"b\"\nc", Start: at}}, "Your calendar has 1 event(s):\n- 2026-12-01 08:30 UTC \"a \\\"b\\\"\\nc\""},
		{"bidi override", []event{{Title: "evil\u202egnp.exe", Start: at}}, "Your calendar has 1 event(s):\n- 2026-12-01 08:30 UTC \"evil\\u202egnp.exe\""},
	}
	for _, tc := range cases {
		if got := formatEvents(tc.events); got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
}
