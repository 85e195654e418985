package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"

	"github.com/mcp-elicit/elicit/elicit"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpclient"
	"github.com/mcp-elicit/elicit/mcpserver"
	"github.com/mcp-elicit/elicit/streamhttp"
)

// A tool that runs as a task of the tasks extension and asks the user
// halfway; mcpclient, declaring the extension, follows the task and
// answers the question through its Handlers, as it does for MRTR.
func ExampleServer_EnableTasks() {
	s := mcpserver.New(mcp.Implementation{Name: "exporter", Version: "1.0.0"}, nil)
	s.EnableTasks(nil) // tasks in memory; store/sqlite or store/postgres for several instances
	s.AddToolWith(&mcp.Tool{Name: "export", Description: "Exports the report, then asks who gets it."},
		func(ctx context.Context, req *mcpserver.Request) (mcpserver.Reply, error) {
			if req.TaskAllowed() {
				return mcpserver.RunAsTask(), nil // the client gets a task id at once
			}
			// In the task (req.TaskID is set), or in the call for a client
			// without the extension.
			switch to := req.Elicitation("to"); to.Outcome {
			case elicit.Accepted:
				return mcpserver.Text(fmt.Sprintf("Export sent to %v.", to.Content["email"])), nil
			case elicit.Declined, elicit.Cancelled:
				return mcpserver.ToolError("Export not sent."), nil
			}
			return mcpserver.Ask().ElicitForm("to", "Who gets the export?",
				json.RawMessage(`{"type":"object","properties":{"email":{"type":"string","format":"email"}},"required":["email"]}`)), nil
		}, &mcpserver.HandlerOptions{Tasks: mcpserver.TaskOptional})
	srv := httptest.NewServer(streamhttp.NewHandler(s, nil))
	defer srv.Close()

	c := mcpclient.New(srv.URL, &mcpclient.Options{
		Extensions: map[string]json.RawMessage{mcp.ExtensionTasks: nil},
		Handlers: &mcpclient.Handlers{
			ElicitForm: func(ctx context.Context, who mcpclient.Asker, key string, p *mcp.ElicitRequestParams) (*mcp.ElicitResult, error) {
				fmt.Println("asked:", p.Message)
				return &mcp.ElicitResult{Action: mcp.ActionAccept, Content: map[string]any{"email": "ada@example.com"}}, nil
			},
		},
	})
	r, err := c.CallTool(context.Background(), "export", nil)
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	fmt.Println(r.Content[0].Text)
	// Output:
	// asked: Who gets the export?
	// Export sent to ada@example.com.
}
