// Package delegate lets another part of this module answer an
// mcpserver.Server's requests in its place: the gateway, whose tools,
// prompts and resources are its upstreams', installs itself in a Server
// that has nothing registered, and the transports (streamhttp, legacy)
// then serve it through the internal/transport seam as they serve any
// Server, with the same admission, version and header checks and the
// same error answers. It is not part of the public API: a handler author
// registers tools.
package delegate

import (
	"context"

	"github.com/mcp-elicit/elicit/internal/transport"
	"github.com/mcp-elicit/elicit/jsonrpc"
	"github.com/mcp-elicit/elicit/mcp"
)

// Core answers in a Server's place. Its methods mean what the
// transport.Server methods of the same names mean; the Server keeps
// CheckVersion, AlsoServed, ValidInputResponse and ReportFault.
type Core interface {
	// Serve answers in, parsed and past the transport's checks, for
	// principal; notify carries notifications on the response stream
	// (nil notification: a keep-alive). It never panics.
	Serve(ctx context.Context, in *transport.Incoming, principal string, notify transport.Notifier) *jsonrpc.Response
	// Known reports whether method is served.
	Known(method string) bool
	// ToolHeaderParams returns a tool's x-mcp-header parameters and
	// whether the tool exists.
	ToolHeaderParams(name string) ([]mcp.HeaderParam, bool)
	// Capabilities is what server/discover advertises.
	Capabilities() mcp.ServerCapabilities
}

var install func(srv any, c Core)

// Register is called once, by mcpserver's init, with the function that
// installs a Core in an *mcpserver.Server (this package cannot import
// mcpserver, which imports it).
func Register(f func(srv any, c Core)) { install = f }

// Install makes srv, an *mcpserver.Server with nothing registered, answer
// every request through c; it panics on a Server with something
// registered. Call it before serving.
func Install(srv any, c Core) { install(srv, c) }
