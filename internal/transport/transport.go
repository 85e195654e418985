// Package transport is the seam between mcpserver and the packages that
// carry its messages (streamhttp, legacy, and any other transport of this
// module): what a transport needs from the server, kept out of the API a
// handler author sees.
//
// A transport decodes a JSON-RPC request (jsonrpc.DecodeRequest), turns it
// into an Incoming call with Parse (the params and _meta checks every
// transport shares), runs its own checks, then asks the server through
// Of(srv):
//
//	in, jerr := transport.Parse(req)        // -32602 on bad params or _meta
//	srv := transport.Of(s)                  // s is an *mcpserver.Server
//	jerr = srv.CheckVersion(version)        // -32022
//	ok := srv.Known(req.Method)             // else -32601
//	resp := srv.Serve(ctx, in, principal, notify)
//
// Serve never panics and always returns a response for in.ID; the
// transport writes it. Notifier carries the handler's progress and log
// notifications on the response stream of the request being served.
package transport

import (
	"context"
	"encoding/json"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/mcp-elicit/elicit/internal/jsonerr"
	"github.com/mcp-elicit/elicit/jsonrpc"
	"github.com/mcp-elicit/elicit/mcp"
)

// RetryData is the data of a retryable -32603 (mcpserver.ErrUnavailable):
// the request did nothing and may be sent again (with a new id) after
// RetryAfterMs milliseconds. Streamable HTTP answers it with 503 and
// Retry-After.
type RetryData struct {
	Retryable    bool `json:"retryable"`
	RetryAfterMs int  `json:"retryAfterMs"`
	// Reason, when set, says why: mcpserver.ReasonStorageFull for an
	// error whose UnavailableReason method says so (store.ErrStorageFull).
	Reason string `json:"reason,omitempty"`
}

// Server is what a transport needs from an *mcpserver.Server. Get it with Of.
type Server interface {
	// Serve answers one parsed call whose transport-level checks passed.
	// It never panics (a handler panic becomes -32603) and the response
	// carries in.ID. principal is the authenticated user's id ("" for
	// none); notify may be nil, which drops notifications.
	Serve(ctx context.Context, in *Incoming, principal string, notify Notifier) *jsonrpc.Response
	// CheckVersion returns nil when the server serves protocol version v,
	// else -32022 with data {supported, requested} (VER-S-02).
	CheckVersion(v string) *jsonrpc.Error
	// Known reports whether method is served (else the transport answers
	// -32601 before anything else runs).
	Known(method string) bool
	// ToolHeaderParams returns a tool's x-mcp-header parameters, for the
	// HTTP binding's Mcp-Param-* checks, and whether the tool exists.
	ToolHeaderParams(name string) ([]mcp.HeaderParam, bool)
	// AlsoServed records versions another handler serves on the same
	// endpoint (legacy's initialize bridge), for server/discover and the
	// data of -32022. Call it before serving.
	AlsoServed(versions ...string)
	// ValidInputResponse reports whether raw is a valid result of an
	// input request of method (elicitation/create, sampling/createMessage,
	// roots/list), as the server checks inputResponses: for a bridge that
	// sends input requests itself and words the refusal for its client.
	ValidInputResponse(method string, raw json.RawMessage) bool
	// ReportFault reports to the server's Observer a round that ended with
	// the JSON-RPC error code outside Serve (a bridge's client answered an
	// input request with an error, or the bridge gave up after too many
	// rounds), so it is audited and counted like the rounds Serve reports.
	// in is the call the bridge would have served next; its requestState,
	// when it opens, gives the operation id and round.
	ReportFault(ctx context.Context, in *Incoming, principal string, code int)
}

// Notifier sends one notification on the response stream of the request
// being served. A transport that cannot deliver it returns an error; the
// handler's Progress or Log call returns that error. A nil
// *jsonrpc.Notification asks only to keep the stream open
// (mcpserver.Request.KeepAlive): an SSE comment on Streamable HTTP; a
// transport without one ignores it.
type Notifier func(n *jsonrpc.Notification) error

var view func(any) Server

// Register is called once, by mcpserver's init, with the function that
// gives an *mcpserver.Server's transport view. It exists because this
// package cannot import mcpserver (mcpserver imports it).
func Register(f func(any) Server) { view = f }

// Of returns the transport view of s, which must be an *mcpserver.Server;
// anything else is a programming error and panics.
func Of(s any) Server { return view(s) }

// Incoming is a parsed call, ready for the transport's checks and for
// Server.Serve.
type Incoming struct {
	ID     jsonrpc.ID
	Method string
	Meta   *mcp.RequestMeta
	// Name is params.name (tools/call, prompts/get), params.uri
	// (resources/read) or params.taskId (tasks/get, tasks/update,
	// tasks/cancel); "" for other methods.
	Name           string
	Arguments      json.RawMessage
	InputResponses map[string]json.RawMessage
	// RequestState is nil when absent.
	RequestState *string
	// Params holds every params member the server reads, as decoded.
	Params *Params
}

// Params are the members of params a 2026-07-28 request may carry.
type Params struct {
	Meta           *rawMeta                   `json:"_meta"`
	Name           *string                    `json:"name"`
	URI            *string                    `json:"uri"`
	Arguments      json.RawMessage            `json:"arguments"`
	InputResponses map[string]json.RawMessage `json:"inputResponses"`
	RequestState   *string                    `json:"requestState"`
	TaskID         *string                    `json:"taskId"`
	Cursor         *string                    `json:"cursor"`
	Ref            json.RawMessage            `json:"ref"`
	Argument       *struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	} `json:"argument"`
}

type rawMeta struct {
	ProtocolVersion    *string                 `json:"io.modelcontextprotocol/protocolVersion"`
	ClientCapabilities *mcp.ClientCapabilities `json:"io.modelcontextprotocol/clientCapabilities"`
	ClientInfo         *mcp.Implementation     `json:"io.modelcontextprotocol/clientInfo"`
	LogLevel           string                  `json:"io.modelcontextprotocol/logLevel"`
	ProgressToken      json.RawMessage         `json:"progressToken"`
}

// Parse decodes the params of req in one pass. It fails with -32602 (HTTP
// 400) when _meta or one of its required keys is missing or malformed
// (META-S-01), or when the params do not fit the method (missing name/uri,
// arguments not an object, inputResponses on a method that takes none).
// On failure the returned Incoming still carries ID and Method, and Meta
// once _meta was read.
func Parse(req *jsonrpc.Request) (*Incoming, *jsonrpc.Error) {
	in := &Incoming{ID: req.ID, Method: req.Method}
	var p Params
	if len(req.Params) > 0 {
		if err := jsonv2.Unmarshal(req.Params, &p); err != nil {
			return in, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "Invalid params: %s", jsonerr.Problem(err))
		}
	}
	meta, jerr := requestMeta(p.Meta)
	if jerr != nil {
		return in, jerr
	}
	in.Meta, in.Params = meta, &p
	if in.Name, jerr = target(req.Method, &p); jerr != nil {
		return in, jerr
	}
	if a := p.Arguments; len(a) > 0 && string(a) != "null" && a[0] != '{' {
		return in, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "Invalid params: arguments must be an object")
	}
	in.Arguments = p.Arguments
	in.InputResponses = p.InputResponses
	in.RequestState = p.RequestState
	return in, nil
}

// requestMeta checks the required members of _meta (META-S-01) and a
// progressToken's type.
func requestMeta(m *rawMeta) (*mcp.RequestMeta, *jsonrpc.Error) {
	switch {
	case m == nil:
		return nil, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "Invalid params: _meta is required")
	case m.ProtocolVersion == nil:
		return nil, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "Invalid params: _meta is missing %s", mcp.MetaProtocolVersion)
	case m.ClientCapabilities == nil:
		return nil, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "Invalid params: _meta is missing %s (an object)", mcp.MetaClientCapabilities)
	}
	meta := &mcp.RequestMeta{ProtocolVersion: *m.ProtocolVersion, ClientCapabilities: *m.ClientCapabilities, ClientInfo: m.ClientInfo, LogLevel: m.LogLevel}
	if t := m.ProgressToken; len(t) > 0 && string(t) != "null" {
		if t[0] != '"' && (t[0] < '0' || t[0] > '9') && t[0] != '-' {
			return nil, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "Invalid params: progressToken must be a string or number")
		}
		meta.ProgressToken = t
	}
	return meta, nil
}

// target returns what the method acts on (params.name or params.uri) and
// refuses MRTR members on a method that takes none.
func target(method string, p *Params) (string, *jsonrpc.Error) {
	switch method {
	case mcp.MethodToolsCall, mcp.MethodPromptsGet:
		if p.Name == nil || *p.Name == "" {
			return "", jsonrpc.NewError(jsonrpc.CodeInvalidParams, "Invalid params: name is required")
		}
		return *p.Name, nil
	case mcp.MethodResourcesRead:
		if p.URI == nil || *p.URI == "" {
			return "", jsonrpc.NewError(jsonrpc.CodeInvalidParams, "Invalid params: uri is required")
		}
		return *p.URI, nil
	case mcp.MethodTasksGet, mcp.MethodTasksUpdate, mcp.MethodTasksCancel:
		if p.TaskID == nil || *p.TaskID == "" {
			return "", jsonrpc.NewError(jsonrpc.CodeInvalidParams, "Invalid params: taskId is required")
		}
		if p.RequestState != nil || (p.InputResponses != nil && method != mcp.MethodTasksUpdate) {
			return "", jsonrpc.NewError(jsonrpc.CodeInvalidParams, "Invalid params: %s does not take inputResponses or requestState", method)
		}
		return *p.TaskID, nil
	}
	if p.InputResponses != nil || p.RequestState != nil {
		return "", jsonrpc.NewError(jsonrpc.CodeInvalidParams, "Invalid params: %s does not take inputResponses or requestState", method)
	}
	return "", nil
}
