// Command quickstart serves one MCP tool that asks the user a question.
package main

import (
	"cmp"
	"context"
	"log"
	"net"
	"net/http"
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
	case elicit.Declined, elicit.Cancelled:
		return mcpserver.ToolError("No name, no greeting."), nil, nil
	}
	return mcpserver.Ask().ElicitFormSchema("who", "What is your name?", elicit.MustFormFor[Who]()), nil, nil
}

func main() {
	s := mcpserver.New(mcp.Implementation{Name: "greeter", Version: "1.0.0"}, nil)
	mcpserver.AddTool(s, &mcp.Tool{Name: "greet", Description: "Greets the user by name."}, greet)
	ln, err := net.Listen("tcp", cmp.Or(os.Getenv("ADDR"), "127.0.0.1:8080"))
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("MCP endpoint: http://%s/mcp", ln.Addr())
	log.Fatal(http.Serve(ln, streamhttp.NewHandler(s, nil)))
}
