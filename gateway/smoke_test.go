package gateway

import (
	"context"
	"testing"

	"github.com/mcp-elicit/elicit/elicit"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpserver"
)

type who struct {
	Name string `json:"name" title:"Your name"`
}

func greeter(s *mcpserver.Server) {
	mcpserver.AddTool(s, &mcp.Tool{Name: "greet"}, func(ctx context.Context, req *mcpserver.Request, _ struct{}) (mcpserver.Reply, any, error) {
		switch a := elicit.Decode[who](req.Elicitation("who")); a.Outcome {
		case elicit.Accepted:
			return mcpserver.Text("Hello, " + a.Value.Name + " from " + req.Principal), nil, nil
		case elicit.Declined, elicit.Cancelled:
			return mcpserver.ToolError("no name"), nil, nil
		}
		return mcpserver.Ask().ElicitFormSchema("who", "What is your name?", elicit.MustFormFor[who]()), nil, nil
	})
}

func TestSmoke(t *testing.T) {
	up := serveElicit(t, greeter)
	for _, rev := range []string{Revision2026, Revision2025} {
		t.Run(rev, func(t *testing.T) {
			_, gw := startGateway(t, Options{Upstreams: []Upstream{{Name: "a", URL: up, Credentials: demoTokens("alice"), Revision: rev}}})
			c := formClient(gw, "alice", func(*mcp.ElicitRequestParams) *mcp.ElicitResult {
				return &mcp.ElicitResult{Action: mcp.ActionAccept, Content: map[string]any{"name": "Ada"}}
			})
			res, err := c.CallTool(context.Background(), "greet", nil)
			if err != nil {
				t.Fatal(err)
			}
			if res.IsError || res.Content[0].Text != "Hello, Ada from alice" {
				t.Fatalf("%+v", res)
			}
		})
	}
}
