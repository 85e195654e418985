//go:build elicitd_testhooks

package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"

	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpserver"
	"github.com/mcp-elicit/elicit/store"
)

// In test builds (go build -tags elicitd_testhooks) elicitd also serves
// test tools:
//
//   - test_block opens the named pipe $ELICIT_TEST_BLOCK_FIFO and answers
//     only once the test has written to it and closed it: a request that
//     stays in flight exactly as long as the test wants, no sleeps;
//   - test_effect writes a record in a store transaction (operation
//     "test-effect", record test/effect), says so on stderr ("EVENT
//     test_effect inside the transaction"), and then waits for its
//     context to end before it would commit: what a process stopped
//     mid-call leaves in the store;
//   - test_stray prints to standard output three ways and answers "clean":
//     with --stdio, none of it may reach the client.
func init() {
	registerTestTools = func(s *mcpserver.Server, st store.Store) {
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
		s.AddTool(&mcp.Tool{Name: "test_effect", Description: "Test build only: a store write held open until the request ends."},
			func(ctx context.Context, r *mcpserver.Request) (mcpserver.Reply, error) {
				op := &store.Operation{ID: "test-effect", Principal: r.Principal, Name: "tools/call test_effect", Outcome: "done"}
				err := st.CompleteOperation(ctx, op, func(ctx context.Context, fx store.Effects) error {
					now := time.Now()
					if err := fx.Insert(ctx, &store.Record{Kind: "test", ID: "effect", Principal: r.Principal, Status: "written", CreatedAt: now, UpdatedAt: now}); err != nil {
						return err
					}
					fmt.Fprintln(os.Stderr, "EVENT test_effect inside the transaction")
					<-ctx.Done()
					fmt.Fprintln(os.Stderr, "EVENT test_effect cancelled:", ctx.Err())
					return ctx.Err()
				})
				if err != nil {
					return nil, err
				}
				return mcpserver.Text("committed"), nil
			})
		s.AddTool(&mcp.Tool{Name: "test_stray", Description: "Test build only: prints to standard output."},
			func(context.Context, *mcpserver.Request) (mcpserver.Reply, error) {
				fmt.Println("stray fmt.Println")
				fmt.Fprintln(os.Stdout, "stray os.Stdout")
				_, _ = syscall.Write(1, []byte("stray fd 1\n"))
				return mcpserver.Text("clean"), nil
			})
	}
}
