package mcpserver

import (
	"context"
	"encoding/json"

	"github.com/mcp-elicit/elicit/internal/transport"
	"github.com/mcp-elicit/elicit/jsonrpc"
	"github.com/mcp-elicit/elicit/mcp"
)

// transportView is a Server as the module's transports see it
// (transport.Server): the plumbing stays off Server's method set.
type transportView Server

func init() {
	transport.Register(func(s any) transport.Server {
		srv, ok := s.(*Server)
		if !ok || srv == nil {
			panic("mcpserver: transport.Of needs a non-nil *mcpserver.Server")
		}
		return (*transportView)(srv)
	})
}

func (v *transportView) Serve(ctx context.Context, in *transport.Incoming, principal string, notify transport.Notifier) *jsonrpc.Response {
	return (*Server)(v).serve(ctx, in, principal, notify)
}

func (v *transportView) CheckVersion(ver string) *jsonrpc.Error {
	return (*Server)(v).checkVersion(ver)
}

func (v *transportView) Known(method string) bool { return (*Server)(v).known(method) }

func (v *transportView) ToolHeaderParams(name string) ([]mcp.HeaderParam, bool) {
	return (*Server)(v).toolHeaderParams(name)
}

func (v *transportView) AlsoServed(versions ...string) { (*Server)(v).alsoServed(versions...) }

func (v *transportView) ValidInputResponse(method string, raw json.RawMessage) bool {
	return validInputResponse(method, raw)
}

func (v *transportView) ReportFault(ctx context.Context, in *transport.Incoming, principal string, code int) {
	(*Server)(v).reportFault(ctx, in, principal, code)
}
