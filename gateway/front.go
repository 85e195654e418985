package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"

	"github.com/mcp-elicit/elicit/auth"
	"github.com/mcp-elicit/elicit/internal/delegate"
	"github.com/mcp-elicit/elicit/internal/transport"
	"github.com/mcp-elicit/elicit/jsonrpc"
	"github.com/mcp-elicit/elicit/legacy"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpserver"
	"github.com/mcp-elicit/elicit/streamhttp"
)

// HandlerOptions configure the gateway's MCP endpoint. A nil
// *HandlerOptions means the defaults.
type HandlerOptions struct {
	// Auth authenticates each client; nil means auth.Anonymous{}. Its
	// principal's ID is the user every upstream credential and session
	// belongs to. The client's token goes no further than Auth.
	Auth auth.Authenticator
	// AllowedHosts, MaxBodyBytes and Logger are streamhttp.Options'.
	AllowedHosts []string
	MaxBodyBytes int64
	Logger       *slog.Logger
	// Legacy configures the 2025-11-25 side (package legacy); nil means
	// its defaults.
	Legacy *legacy.Options
}

// Handler returns the gateway's MCP endpoint, to mount at /mcp: 2026-07-28
// clients over stateless Streamable HTTP (package streamhttp: the Host
// and Origin check, authentication, the standard headers, JSON or SSE)
// and 2025-11-25 clients with initialize and a session (package legacy,
// which asks them the upstreams' questions over their session), on the
// same URL. Call it once, after Start: a 2025 session sees the catalog
// of that moment. Close the handler at shutdown (its 2025 sessions end).
func (g *Gateway) Handler(o *HandlerOptions) *legacy.Handler {
	var opts HandlerOptions
	if o != nil {
		opts = *o
	}
	authn := opts.Auth
	if authn == nil {
		authn = auth.Anonymous{}
	}
	srv := mcpserver.New(g.info, &mcpserver.Options{Logger: opts.Logger, Sealer: g.sealer})
	delegate.Install(srv, frontCore{g})
	g.legacyVersions = legacy.Versions
	var a auth.Authenticator = authn
	if len(g.opts.PeerSecret) > 0 {
		a = peerAuth{p: g.peers, next: authn}
	}
	modern := streamhttp.NewHandler(srv, &streamhttp.Options{Auth: a, AllowedHosts: opts.AllowedHosts, MaxBodyBytes: opts.MaxBodyBytes, Logger: opts.Logger})
	return legacy.NewHandler(srv, modern, opts.Legacy)
}

// frontCore is the gateway as the transports see it (delegate.Core).
type frontCore struct{ g *Gateway }

func (f frontCore) Known(method string) bool { return f.g.known(method) }

func (f frontCore) ToolHeaderParams(name string) ([]mcp.HeaderParam, bool) {
	return f.g.toolHeaders(name)
}

func (f frontCore) Capabilities() mcp.ServerCapabilities { return f.g.current().caps }

func (f frontCore) Serve(ctx context.Context, c *transport.Incoming, principal string, notify transport.Notifier) (resp *jsonrpc.Response) {
	resp = &jsonrpc.Response{ID: c.ID}
	defer func() {
		if p := recover(); p != nil {
			f.g.log.Error("gateway: panic serving a request", "method", c.Method, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			resp.Result, resp.Error = nil, jsonrpc.NewError(jsonrpc.CodeInternalError, "Internal error")
		}
	}()
	r := &request{method: c.Method, name: c.Name, args: c.Arguments, responses: c.InputResponses, state: c.RequestState,
		meta: c.Meta, principal: principal, revision: mcp.ProtocolVersion, notify: notify}
	if p := c.Params; p != nil {
		if p.Cursor != nil {
			r.cursor = *p.Cursor
		}
		r.ref = p.Ref
		if p.Argument != nil {
			r.argument, _ = json.Marshal(p.Argument) // two strings: never fails
		}
	}
	if v, ok := legacy.ClientVersion(ctx); ok {
		r.revision = v
	}
	res, jerr := f.g.serve(ctx, r)
	if jerr != nil {
		resp.Error = jerr
		return resp
	}
	resp.Result = res
	return resp
}

var _ http.Handler = (*legacy.Handler)(nil)
