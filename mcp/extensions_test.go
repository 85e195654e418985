package mcp

import (
	"encoding/json"
	"testing"
)

func TestValidExtensionID(t *testing.T) {
	tests := []struct {
		id   string
		want bool
	}{
		{"io.modelcontextprotocol/tasks", true},
		{"com.example/my-ext_v2.1", true},
		{"example/x", true},
		{"tasks", false},  // no prefix
		{"/tasks", false}, // empty prefix
		{"io.modelcontextprotocol/", false},
		{"io..x/tasks", false},     // empty label
		{"-io.x/tasks", false},     // label starts with a hyphen
		{"io.x-/tasks", false},     // label ends with a hyphen
		{"io.x/_tasks", false},     // name starts with an underscore
		{"io.x/tasks.", false},     // name ends with a dot
		{"io.x/ta sks", false},     // space
		{"io.x/a/b", false},        // second slash in the name
		{"io.x/t\u00e4sks", false}, // not ASCII
	}
	for _, tt := range tests {
		if got := ValidExtensionID(tt.id); got != tt.want {
			t.Errorf("ValidExtensionID(%q) = %v, want %v", tt.id, got, tt.want)
		}
	}
}

func TestHasExtension(t *testing.T) {
	tests := []struct {
		name, caps string
		want       bool
	}{
		{"declared", `{"extensions":{"io.modelcontextprotocol/tasks":{}}}`, true},
		{"declared with settings", `{"extensions":{"io.modelcontextprotocol/tasks":{ "a":1}}}`, true},
		{"another extension", `{"extensions":{"com.example/x":{}}}`, false},
		{"no extensions", `{"elicitation":{}}`, false},
		{"not an object", `{"extensions":{"io.modelcontextprotocol/tasks":true}}`, false},
		{"null", `{"extensions":{"io.modelcontextprotocol/tasks":null}}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c ClientCapabilities
			if err := json.Unmarshal([]byte(tt.caps), &c); err != nil {
				t.Fatal(err)
			}
			if got := c.HasExtension(ExtensionTasks); got != tt.want {
				t.Errorf("client: got %v, want %v", got, tt.want)
			}
			var s ServerCapabilities
			if err := json.Unmarshal([]byte(tt.caps), &s); err != nil {
				t.Fatal(err)
			}
			if got := s.HasExtension(ExtensionTasks); got != tt.want {
				t.Errorf("server: got %v, want %v", got, tt.want)
			}
		})
	}
	var nilCaps *ClientCapabilities
	if nilCaps.HasExtension(ExtensionTasks) {
		t.Error("nil capabilities declare nothing")
	}
}

func TestCheckExtension(t *testing.T) {
	tests := []struct {
		id, settings, want string // want "" means an error
	}{
		{"io.modelcontextprotocol/tasks", "", `{}`},
		{"io.modelcontextprotocol/tasks", `{"a":[1]}`, `{"a":[1]}`},
		{"tasks", `{}`, ""},
		{"com.example/x", `[]`, ""},
		{"com.example/x", `null`, ""},
		{"com.example/x", `{`, ""},
	}
	for _, tt := range tests {
		var in json.RawMessage
		if tt.settings != "" {
			in = json.RawMessage(tt.settings)
		}
		got, err := CheckExtension(tt.id, in)
		if (err == nil) != (tt.want != "") || string(got) != tt.want {
			t.Errorf("CheckExtension(%q, %s) = %s, %v", tt.id, tt.settings, got, err)
		}
		if err == nil && len(in) > 0 && &got[0] == &in[0] {
			t.Errorf("CheckExtension(%q) returned the caller's bytes, not a copy", tt.id)
		}
	}
}
