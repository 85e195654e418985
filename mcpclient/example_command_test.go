package mcpclient_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"

	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpclient"
)

// A local server launched as a command and spoken to over its standard
// streams: 2026-07-28 if it answers server/discover, else 2025-11-25. The
// same Handlers answer its questions either way; Close stops it.
func ExampleNewCommand() {
	cmd := exec.Command("elicitd", "--stdio")
	cmd.Stderr = os.Stderr // the server's log
	c, err := mcpclient.NewCommand(context.Background(), cmd, &mcpclient.Options{Handlers: &mcpclient.Handlers{
		ElicitForm: func(_ context.Context, who mcpclient.Asker, _ string, p *mcp.ElicitRequestParams) (*mcp.ElicitResult, error) {
			fmt.Printf("%s asks: %s\n", who.Command, p.Message)
			return &mcp.ElicitResult{Action: mcp.ActionDecline}, nil
		},
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	fmt.Println("speaking", c.Version())
	res, err := c.CallTool(context.Background(), "export_report", map[string]any{"period": "2026-Q2", "dataset": "sales"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Content[0].Text)
}
