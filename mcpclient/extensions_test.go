package mcpclient_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpclient"
)

// TestExtensionsDeclaredPerRequest: Options.Extensions go into every
// request's _meta clientCapabilities, next to the handlers' capabilities.
func TestExtensionsDeclaredPerRequest(t *testing.T) {
	hs, rec := newServer(t, nil)
	c := mcpclient.New(hs.URL, &mcpclient.Options{Token: "alice", Handlers: formHandlers(),
		Extensions: map[string]json.RawMessage{mcp.ExtensionTasks: nil, "com.example/x": json.RawMessage(`{"v":2}`)}})
	if caps := c.Capabilities(); !caps.HasExtension(mcp.ExtensionTasks) {
		t.Fatalf("Capabilities() = %+v", c.Capabilities())
	}
	ctx := context.Background()
	if _, err := c.Discover(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ListTools(ctx); err != nil {
		t.Fatal(err)
	}
	all := rec.all()
	if len(all) != 2 {
		t.Fatalf("%d requests", len(all))
	}
	for _, s := range all {
		got := string(s.Msg.Params.Meta[mcp.MetaClientCapabilities])
		if want := `{"elicitation":{"form":{},"url":{}},"extensions":{"com.example/x":{"v":2},"io.modelcontextprotocol/tasks":{}}}`; got != want {
			t.Errorf("%s: clientCapabilities %s\nwant %s", s.Msg.Method, got, want)
		}
	}
}

func TestExtensionsRefusesBadInput(t *testing.T) {
	tests := map[string]map[string]json.RawMessage{
		"not an identifier":      {"tasks": nil},
		"settings not an object": {mcp.ExtensionTasks: json.RawMessage(`"yes"`)},
	}
	for name, ext := range tests {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("no panic")
				}
			}()
			mcpclient.New("http://127.0.0.1:1/mcp", &mcpclient.Options{Extensions: ext})
		})
	}
}
