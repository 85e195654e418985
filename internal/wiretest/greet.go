package wiretest

import (
	"bytes"
	"context"
	"testing"

	"github.com/mcp-elicit/elicit/elicit"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpserver"
	"github.com/mcp-elicit/elicit/reqstate"
)

// Who is the answer to greet's form.
type Who struct {
	Name string `json:"name" title:"Your name" minLength:"1"`
}

// AddGreet registers the tool every transcript server offers: greet asks
// a form (input key "who", Who), then says "Hello, NAME!", or the tool
// error "No name, no greeting." on a decline or cancel.
func AddGreet(s *mcpserver.Server) {
	mcpserver.AddTool(s, &mcp.Tool{Name: "greet", Description: "Greets the user by name."},
		func(ctx context.Context, req *mcpserver.Request, _ struct{}) (mcpserver.Reply, any, error) {
			switch a := elicit.Decode[Who](req.Elicitation("who")); a.Outcome {
			case elicit.Accepted:
				return mcpserver.Text("Hello, " + a.Value.Name + "!"), nil, nil
			case elicit.Declined, elicit.Cancelled:
				return mcpserver.ToolError("No name, no greeting."), nil, nil
			}
			return mcpserver.Ask().ElicitFormSchema("who", "What is your name?", elicit.MustFormFor[Who]()), nil, nil
		})
}

// Sealer returns a requestState sealer with one fixed key, id "t1": the
// id shows in the transcripts' normalised states.
func Sealer(t testing.TB) *reqstate.Sealer {
	t.Helper()
	s, err := reqstate.New([]reqstate.Key{{ID: "t1", Secret: bytes.Repeat([]byte{7}, 32)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
