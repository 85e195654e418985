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

// A form built with elicit.FormSchema. An invalid answer is asked again
// with what was wrong (at most MaxReasks times); the handler just asks.
func ExampleInputRequired_ElicitFormSchema() {
	form, err := elicit.FormSchema(
		elicit.TitledEnum("detail",
			elicit.Choice{Value: "summary", Title: "Summary"},
			elicit.Choice{Value: "detailed", Title: "Detailed"}).Title("Detail level").Required(),
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	s := mcpserver.New(mcp.Implementation{Name: "reports", Version: "1.0.0"}, nil)
	s.AddToolWith(&mcp.Tool{Name: "export_report"},
		func(ctx context.Context, req *mcpserver.Request) (mcpserver.Reply, error) {
			switch a := req.Elicitation("options"); a.Outcome {
			case elicit.Accepted:
				return mcpserver.Text("Prepared a " + a.Content["detail"].(string) + " draft."), nil
			case elicit.Declined, elicit.Cancelled:
				return mcpserver.ToolError("No draft was prepared."), nil
			}
			return mcpserver.Ask().ElicitFormSchema("options", "Choose the detail level.", form), nil
		}, &mcpserver.HandlerOptions{RestartStale: true})

	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}`
	call := func(id int, extra string) map[string]any {
		req, _ := jsonrpc.DecodeRequest([]byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"export_report",%s%s}}`, id, extra, meta)))
		in, _ := mcpserver.Parse(req)
		b, _ := json.Marshal(s.Serve(context.Background(), in, "alice", nil).Result)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		return m
	}
	answer := func(state any, content string) string {
		st, _ := json.Marshal(state)
		return `"requestState":` + string(st) + `,"inputResponses":{"options":{"action":"accept","content":` + content + `}},`
	}
	r := call(1, "")
	r = call(2, answer(r["requestState"], `{"detail":"everything"}`))
	fmt.Println(r["inputRequests"].(map[string]any)["options"].(map[string]any)["params"].(map[string]any)["message"])
	r = call(3, answer(r["requestState"], `{"detail":"detailed","extra":"dropped"}`))
	fmt.Println(r["content"].([]any)[0].(map[string]any)["text"])
	// Output:
	// Choose the detail level.
	//
	// Your previous answer was not accepted: Detail level: must be one of the choices. Please correct it.
	// Prepared a detailed draft.
}

// An Observer turns each round into an audit line: the category says what
// happened (here the user declined), never what was typed.
func ExampleObserver() {
	audit := func(_ context.Context, r *mcpserver.Round) {
		fmt.Printf("%s %s round=%d outcome=%s code=%d\n", r.Method, r.Name, r.Round, r.Outcome, r.Code)
	}
	s := mcpserver.New(mcp.Implementation{Name: "greeter", Version: "1.0.0"}, &mcpserver.Options{Observer: audit})
	s.AddTool(&mcp.Tool{Name: "greet"}, func(ctx context.Context, req *mcpserver.Request) (mcpserver.Reply, error) {
		if req.Elicitation("who").Outcome == elicit.Declined {
			return mcpserver.ToolError("No name, no greeting."), nil
		}
		return mcpserver.Ask().ElicitForm("who", "What is your name?", json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}}}`)), nil
	})
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}`
	call := func(extra string) map[string]any {
		req, _ := jsonrpc.DecodeRequest([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"greet",` + extra + meta + `}}`))
		in, _ := mcpserver.Parse(req)
		b, _ := json.Marshal(s.Serve(context.Background(), in, "alice", nil).Result)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		return m
	}
	first := call("")
	state, _ := json.Marshal(first["requestState"])
	call(`"requestState":` + string(state) + `,"inputResponses":{"who":{"action":"decline"}},`)
	// Output:
	// tools/call greet round=0 outcome=input_required code=0
	// tools/call greet round=1 outcome=declined code=0
}
