// Command quickstart serves one MCP tool that asks the user a question.
package main

import (
	"cmp"
	"context"
	"log"
	"os"

	"github.com/mcp-elicit/elicit/elicit"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpserver"
	"github.com/mcp-elicit/elicit/streamhttp"
)

type Who struct {
	Name string `json:"name" title:"Your name" minLength:"1"`
}

func greet(ctx context.Context, req *mcpserver.Request, _ struct{}) (mcpserver.Reply, any, error) {
	switch a := elicit.Decode[Who](req.Elicitation("who")); a.Outcome {
	case elicit.Accepted:
		return mcpserver.Text("Hello, " + a.Value.Name + "!"), nil, nil
	case elicit.Declined: // a deliberate no: respect it
		return mcpserver.ToolError("No greeting: you chose not to give your name."), nil, nil
	case elicit.Cancelled: // dismissed: nothing was decided
		return mcpserver.ToolError("No greeting yet: the question was closed unanswered. Call greet again to answer it."), nil, nil
	}
	return mcpserver.Ask().ElicitFormSchema("who", "What is your name?", elicit.MustFormFor[Who]()), nil, nil
}

func main() {
	s := mcpserver.New(mcp.Implementation{Name: "greeter", Version: "1.0.0"}, nil)
	mcpserver.AddTool(s, &mcp.Tool{Name: "greet", Description: "Greets the user by name."}, greet)
	addr := cmp.Or(os.Getenv("ADDR"), "127.0.0.1:8080")
	log.Fatal(streamhttp.ListenAndServe(context.Background(), addr, s, nil))
}
