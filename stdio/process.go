package stdio

import (
	"context"
	"os"

	"github.com/mcp-elicit/elicit/mcpserver"
)

// ServeProcess is Serve on the process's standard input and output, for a
// server that a client launched (cmd/elicitd --stdio). Before serving it
// takes the standard output for itself alone: the messages go to a
// private copy of the output, and both file descriptor 1 and os.Stdout
// are pointed at standard error, so a stray print anywhere in the process
// (fmt.Println, a library writing to fd 1) lands in the log instead of
// corrupting the stream (stdio.mdx: nothing but MCP messages on stdout).
// On systems without file descriptors to move, only os.Stdout is pointed
// at standard error.
//
// Stop it by cancelling ctx (on SIGINT or SIGTERM, say): the requests in
// progress are cancelled and ServeProcess returns ctx.Err(). It returns
// nil when the client closes the process's input (the spec's shutdown).
func ServeProcess(ctx context.Context, srv *mcpserver.Server, opts *Options) error {
	out, err := TakeStdout()
	if err != nil {
		return err
	}
	defer out.Close()
	return Serve(ctx, srv, os.Stdin, out, opts)
}
