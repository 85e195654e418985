package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mcp-elicit/elicit/mcp"
)

// RawRequest is one request sent as given, for tools that test servers
// (such as elicit check) and so must send what a well-behaved client never
// would: other capabilities than its Handlers declare, answers made by
// hand, a requestState that was never received or was altered. It is not
// for hosts: CallTool and CallToolOnce keep the MRTR echo rules, SendRaw
// does not.
type RawRequest struct {
	// Method is the JSON-RPC method, e.g. "tools/call".
	Method string
	// Name, when set, is params.name and the Mcp-Name header (tools/call,
	// prompts/get).
	Name string
	// Arguments is params.arguments, sent as is when set.
	Arguments json.RawMessage
	// InputResponses is params.inputResponses, each answer sent as is;
	// nil or empty leaves the member out.
	InputResponses map[string]json.RawMessage
	// RequestState, when non-nil, is sent as params.requestState (a JSON
	// string of these characters), whatever the server sent before.
	RequestState *string
	// Capabilities, when non-nil, replaces the client's capabilities in
	// this request's _meta.
	Capabilities *mcp.ClientCapabilities
	// URI, when set, is params.uri and the Mcp-Name header
	// (resources/read).
	URI string
	// Cursor, when set, is params.cursor (a list method's next page).
	Cursor string
	// Ref and Argument, when set, are params.ref and params.argument
	// (completion/complete), sent as given.
	Ref, Argument json.RawMessage
	// Meta holds further _meta members, each sent as given (a
	// progressToken, a logLevel, an id of the caller's own); the
	// protocol version, capabilities and clientInfo the client sends win
	// over members of the same name.
	Meta map[string]json.RawMessage
	// HeaderParams, when non-nil, are the tool's x-mcp-header parameters
	// (mcp.ToolHeaderParams of its inputSchema) to mirror into
	// Mcp-Param-* headers, in place of what a ListTools of this client
	// learnt: for a caller that lists the tools itself.
	HeaderParams []mcp.HeaderParam
	// OnMessage, when set, receives in order what arrives on an SSE
	// answer before the response, on the calling goroutine: each
	// notification's method and raw params (progress, log messages), and
	// each keep-alive comment as method "" with nil params. A gateway
	// relays them to its own client.
	OnMessage func(method string, params json.RawMessage)
}

// SendRaw sends r as one request with a fresh id and _meta (protocol
// version, the capabilities, clientInfo) and the standard headers, and
// returns the raw result object, complete or input_required, unclassified.
// For tools/call, x-mcp-header arguments are mirrored into Mcp-Param-*
// headers when the tool is known from a ListTools of this client. Errors are
// those of CallTool: *RPCError (with the HTTP status) for a JSON-RPC error,
// *MissingCapabilityError for -32021, *AuthError, *ConnectionError, …
func (c *Client) SendRaw(ctx context.Context, r *RawRequest) (json.RawMessage, error) {
	if r == nil || r.Method == "" {
		return nil, errors.New("mcpclient: SendRaw needs a method")
	}
	out := outgoing{method: r.Method, caps: r.Capabilities, target: r.Name, meta: r.Meta, onMessage: r.OnMessage}
	if r.Name != "" {
		n := r.Name
		out.name, out.hasName, out.params.Name = n, true, &n
	}
	if r.URI != "" {
		u := r.URI
		out.name, out.hasName, out.target, out.params.URI = u, true, u, &u
	}
	out.params.Cursor, out.params.Ref, out.params.Argument = r.Cursor, r.Ref, r.Argument
	out.params.Arguments = r.Arguments
	out.params.InputResponses = r.InputResponses
	if r.RequestState != nil {
		b, err := marshal(*r.RequestState)
		if err != nil {
			return nil, err
		}
		out.params.RequestState = b
	}
	if r.Method == mcp.MethodToolsCall && r.Name != "" && len(r.Arguments) > 0 {
		params := r.HeaderParams
		if params == nil {
			c.mu.Lock()
			params = c.tools[r.Name].params
			c.mu.Unlock()
		}
		hdr, err := paramHeaders(params, r.Arguments)
		if err != nil && r.HeaderParams != nil {
			return nil, fmt.Errorf("mcpclient: tool %q: %w", r.Name, err)
		}
		out.headers = hdr
	}
	return c.send(ctx, &out)
}
