package mcp

import "testing"

func TestValidHeaderName(t *testing.T) {
	for name, want := range map[string]bool{
		"Region": true, "X-Trace_id.v2": true, "a!#$%&'*+-.^_`|~z": true,
		"": false, "My Field": false, "a:b": false, "Région": false, "tab\there": false, "new\nline": false,
	} {
		if got := ValidHeaderName(name); got != want {
			t.Errorf("ValidHeaderName(%q) = %v, want %v", name, got, want)
		}
	}
}
