package mcpclient_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"

	"github.com/mcp-elicit/elicit/elicit"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpclient"
	"github.com/mcp-elicit/elicit/mcpserver"
	"github.com/mcp-elicit/elicit/streamhttp"
)

// greeter serves a tool that asks the user's name in form mode.
func greeter() *httptest.Server {
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
				json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`)), nil
		})
	return httptest.NewServer(streamhttp.NewHandler(s, nil))
}

// CallTool answers the server's questions through Handlers and retries
// until the result is complete. The client declares form-mode elicitation
// because ElicitForm is set.
func Example() {
	srv := greeter()
	defer srv.Close()

	c := mcpclient.New(srv.URL, &mcpclient.Options{
		ClientInfo: mcp.Implementation{Name: "example-host", Version: "1.0.0"},
		Handlers: &mcpclient.Handlers{
			ElicitForm: func(ctx context.Context, who mcpclient.Asker, key string, p *mcp.ElicitRequestParams) (*mcp.ElicitResult, error) {
				// A real host shows who is asking and lets the user review,
				// decline or cancel (package consent).
				fmt.Printf("%s asks: %s\n", who.Server.Name, p.Message)
				return &mcp.ElicitResult{Action: mcp.ActionAccept, Content: map[string]any{"name": "Ada"}}, nil
			},
		},
	})
	res, err := c.CallTool(context.Background(), "greet", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Content[0].Text)
	// Output:
	// greeter asks: What is your name?
	// Hello, Ada!
}

// CallToolOnce drives the rounds by hand: look at the interim result,
// answer it (here through Handlers with Answer), and send the retry built
// from it, which echoes its requestState.
func ExampleClient_CallToolOnce() {
	srv := greeter()
	defer srv.Close()

	c := mcpclient.New(srv.URL, &mcpclient.Options{Handlers: &mcpclient.Handlers{
		ElicitForm: func(ctx context.Context, who mcpclient.Asker, key string, p *mcp.ElicitRequestParams) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: mcp.ActionDecline}, nil
		},
	}})
	ctx := context.Background()
	_, ir, err := c.CallToolOnce(ctx, "greet", nil, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("asks:", ir.Keys(), "state:", ir.HasRequestState())
	answers, err := c.Answer(ctx, ir)
	if err != nil {
		fmt.Println(err)
		return
	}
	res, _, err := c.CallToolOnce(ctx, "greet", nil, ir.Retry(answers))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.IsError, res.Content[0].Text)
	// Output:
	// asks: [who] state: true
	// true No name, no greeting.
}

// SendRaw sends what a well-behaved client never would, for testing a
// server: here a retry whose requestState was altered. The greeter's
// state is sealed, so the server refuses it.
func ExampleClient_SendRaw() {
	srv := greeter()
	defer srv.Close()
	c := mcpclient.New(srv.URL, nil)
	form := mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{}}
	ctx := context.Background()

	raw, err := c.SendRaw(ctx, &mcpclient.RawRequest{Method: mcp.MethodToolsCall, Name: "greet", Capabilities: &form})
	if err != nil {
		fmt.Println(err)
		return
	}
	var first mcp.InputRequiredResult
	_ = json.Unmarshal(raw, &first)
	fmt.Println(first.ResultType, len(first.RequestState) > 0)

	altered := first.RequestState[:len(first.RequestState)-1]
	_, err = c.SendRaw(ctx, &mcpclient.RawRequest{Method: mcp.MethodToolsCall, Name: "greet", Capabilities: &form,
		InputResponses: map[string]json.RawMessage{"who": json.RawMessage(`{"action":"accept","content":{"name":"Eve"}}`)},
		RequestState:   &altered})
	var rpc *mcpclient.RPCError
	if errors.As(err, &rpc) {
		fmt.Println(rpc.Code, rpc.Message)
	}
	// Output:
	// input_required true
	// -32602 invalid or expired requestState
}
