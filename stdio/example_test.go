package stdio_test

import (
	"bufio"
	"context"
	"fmt"
	"io"

	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpserver"
	"github.com/mcp-elicit/elicit/stdio"
)

// A server on a pair of pipes, as a client that launched it would see it:
// one request line in, one response line out. A real server calls
// ServeProcess instead, on its own standard streams.
func ExampleServe() {
	s := mcpserver.New(mcp.Implementation{Name: "hello", Version: "1.0.0"}, nil)
	s.AddTool(&mcp.Tool{Name: "whoami"}, func(_ context.Context, req *mcpserver.Request) (mcpserver.Reply, error) {
		return mcpserver.Text("You are " + req.Principal + "."), nil
	})
	clientOut, serverIn := io.Pipe()
	serverOut, clientIn := io.Pipe()
	done := make(chan error)
	go func() {
		done <- stdio.Serve(context.Background(), s, clientOut, clientIn, &stdio.Options{Principal: "alice", Logger: quiet})
	}()

	fmt.Fprintln(serverIn, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"whoami",`+
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`)
	line, _ := bufio.NewReader(serverOut).ReadString('\n')
	fmt.Print(line)
	serverIn.Close() // end of input: the server stops
	fmt.Println(<-done)
	// Output:
	// {"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","content":[{"type":"text","text":"You are alice."}],"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"hello","version":"1.0.0"}}}}
	// <nil>
}
