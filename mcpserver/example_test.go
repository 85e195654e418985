package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mcp-elicit/elicit/elicit"
	"github.com/mcp-elicit/elicit/jsonrpc"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpserver"
)

// A tool that asks the user a question in form mode, and reads the answer
// on the retry. The library seals the state, binds it to the user and the
// request, refuses clients that did not declare form mode, and validates
// the answer against the schema it asked.
func Example() {
	s := mcpserver.New(mcp.Implementation{Name: "greeter", Version: "1.0.0"}, nil)
	s.AddTool(&mcp.Tool{Name: "greet", Description: "Greets the user by name."},
		func(ctx context.Context, req *mcpserver.Request) (mcpserver.Reply, error) {
			switch a := req.Elicitation("who"); a.Outcome {
			case elicit.Accepted:
				return mcpserver.Text(fmt.Sprintf("Hello, %s!", a.Content["name"])), nil
			case elicit.Declined, elicit.Cancelled:
				return mcpserver.ToolError("No name, no greeting."), nil
			}
			return mcpserver.Ask().ElicitForm("who", "What is your name?",
				json.RawMessage(`{"type":"object","properties":{"name":{"type":"string","minLength":1}},"required":["name"]}`)), nil
		})

	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}`
	call := func(body string) map[string]any {
		req, _ := jsonrpc.DecodeRequest([]byte(body))
		in, _ := mcpserver.Parse(req)
		resp := s.Serve(context.Background(), in, "alice", nil)
		b, _ := json.Marshal(resp.Result)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		return m
	}
	first := call(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"greet",` + meta + `}}`)
	fmt.Println(first["resultType"])
	state, _ := json.Marshal(first["requestState"])
	second := call(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"greet","requestState":` + string(state) +
		`,"inputResponses":{"who":{"action":"accept","content":{"name":"Ada"}}},` + meta + `}}`)
	fmt.Println(second["resultType"], second["content"].([]any)[0].(map[string]any)["text"])
	// Output:
	// input_required
	// complete Hello, Ada!
}
