package mcpserver

import (
	"encoding/json"
	"testing"

	"github.com/mcp-elicit/elicit/internal/mcptest"
	"github.com/mcp-elicit/elicit/mcp"
)

func TestAddExtensionInDiscover(t *testing.T) {
	s := New(mcp.Implementation{Name: "x", Version: "1"}, nil)
	c := rpc{s, ""}
	discover := `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{` + mcptest.Meta(`{}`) + `}}`
	before, err := c.call(t, discover)
	if err != nil {
		t.Fatal(err)
	}
	if caps := before["capabilities"].(map[string]any); caps["extensions"] != nil {
		t.Fatalf("extensions advertised before any was added: %v", caps)
	}
	s.AddExtension("com.example/audit", json.RawMessage(`{"level":"full"}`))
	s.AddExtension("com.example/plain", nil)
	after, err := c.call(t, discover)
	if err != nil {
		t.Fatal(err)
	}
	ext, _ := after["capabilities"].(map[string]any)["extensions"].(map[string]any)
	if got, _ := json.Marshal(ext); string(got) != `{"com.example/audit":{"level":"full"},"com.example/plain":{}}` {
		t.Fatalf("extensions = %s", got)
	}
	if caps := s.Capabilities(); !caps.HasExtension("com.example/audit") || caps.HasExtension(mcp.ExtensionTasks) {
		t.Fatalf("Capabilities() = %+v", caps)
	}
}

func TestAddExtensionRefusesBadInput(t *testing.T) {
	tests := []struct {
		name, id string
		settings json.RawMessage
	}{
		{"no prefix", "tasks", nil},
		{"settings not an object", "com.example/x", json.RawMessage(`[1]`)},
		{"settings null", "com.example/x", json.RawMessage(`null`)},
		{"settings not JSON", "com.example/x", json.RawMessage(`{`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(mcp.Implementation{Name: "x", Version: "1"}, nil)
			defer func() {
				if recover() == nil {
					t.Fatal("no panic")
				}
				if s.Capabilities().Extensions != nil {
					t.Fatal("a refused extension was advertised")
				}
			}()
			s.AddExtension(tt.id, tt.settings)
		})
	}
}

// TestRequireExtension: an extension in need counts only when this
// request's _meta declares it; the -32021 data names what is missing.
func TestRequireExtension(t *testing.T) {
	need := mcp.ClientCapabilities{Extensions: map[string]json.RawMessage{mcp.ExtensionTasks: json.RawMessage(`{}`)}}
	tests := []struct {
		name, caps string
		wantErr    bool
	}{
		{"declared", `{"extensions":{"io.modelcontextprotocol/tasks":{}}}`, false},
		{"not declared", `{"elicitation":{}}`, true},
		{"another extension", `{"extensions":{"com.example/x":{}}}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var caps mcp.ClientCapabilities
			if err := json.Unmarshal([]byte(tt.caps), &caps); err != nil {
				t.Fatal(err)
			}
			r := &Request{Meta: &mcp.RequestMeta{ClientCapabilities: caps}}
			err := r.Require(need)
			if (err != nil) != tt.wantErr {
				t.Fatalf("Require = %v", err)
			}
			if err == nil {
				return
			}
			b, _ := json.Marshal(err)
			if want := `{"code":-32021,"message":"Missing required client capability","data":{"requiredCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}}`; string(b) != want {
				t.Fatalf("error = %s\nwant    %s", b, want)
			}
		})
	}
}
