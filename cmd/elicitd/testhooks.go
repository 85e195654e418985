//go:build elicitd_testhooks

package main

import (
	"context"
	"io"
	"os"

	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpserver"
)

// In test builds (go build -tags elicitd_testhooks) elicitd also serves
// test_block, a tool that opens the named pipe $ELICIT_TEST_BLOCK_FIFO and
// answers only once the test has written to it and closed it: a request
// that stays in flight exactly as long as the test wants, no sleeps.
func init() {
	registerTestTools = func(s *mcpserver.Server) {
		s.AddTool(&mcp.Tool{Name: "test_block", Description: "Test build only: blocks until the test releases it."},
			func(ctx context.Context, r *mcpserver.Request) (mcpserver.Reply, error) {
				f, err := os.Open(os.Getenv("ELICIT_TEST_BLOCK_FIFO"))
				if err != nil {
					return nil, err
				}
				defer f.Close()
				b, err := io.ReadAll(f)
				if err != nil {
					return nil, err
				}
				return mcpserver.Text("released: " + string(b)), nil
			})
	}
}
