package mcpserver

import (
	"context"
	"testing"

	"github.com/mcp-elicit/elicit/mcp"
)

// Every -32021 the library sends has the same words: the gate before a
// question the client cannot answer, and Request.Require in a handler
// (connect.Step's check before it makes a link).
func TestMissingCapabilityOneWording(t *testing.T) {
	s := New(mcp.Implementation{Name: "test", Version: "1"}, nil)
	url := mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{URL: &mcp.Empty{}}}
	s.AddTool(&mcp.Tool{Name: "gate", Description: "asks"}, func(ctx context.Context, r *Request) (Reply, error) {
		return Ask().ElicitURL("k", "Open the page", "https://srv.example/ui/x?flow=1"), nil
	})
	s.AddTool(&mcp.Tool{Name: "require", Description: "checks first"}, func(ctx context.Context, r *Request) (Reply, error) {
		return nil, r.Require(url)
	})
	c := rpc{s, "alice"}
	for _, tool := range []string{"gate", "require"} {
		_, err := c.call(t, toolCall(tool, `{"elicitation":{"form":{}}}`, ""))
		if err == nil || err.Code != mcp.CodeMissingRequiredClientCapability || err.Message != MissingCapabilityMessage {
			t.Errorf("%s: %v, want -32021 %q", tool, err, MissingCapabilityMessage)
		}
	}
}
