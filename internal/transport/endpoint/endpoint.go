// Package endpoint is the seam between streamhttp and another handler that
// shares its Streamable HTTP endpoint (package legacy's 2025-11-25
// bridge): the same admission (Host and Origin, then authentication), the
// same body limit, and the same error answers, so that both eras refuse
// alike.
package endpoint

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/mcp-elicit/elicit/auth"
	"github.com/mcp-elicit/elicit/jsonrpc"
	"github.com/mcp-elicit/elicit/mcp"
)

// Endpoint is what a handler sharing the endpoint needs from a
// *streamhttp.Handler. Get it with Of.
type Endpoint interface {
	// Admit runs the endpoint's first checks on r, in order: Host and
	// Origin (403), then authentication (401 with the challenge, or the
	// status an *auth.Error names). On failure it has written the answer
	// and ok is false.
	Admit(w http.ResponseWriter, r *http.Request) (p auth.Principal, ok bool)
	// MaxBodyBytes is the request body limit in bytes; a larger body gets 413.
	MaxBodyBytes() int64
}

var view func(any) Endpoint

// Register is called once, by streamhttp's init, with the function that
// gives a *streamhttp.Handler's Endpoint view.
func Register(f func(any) Endpoint) { view = f }

// Of returns the Endpoint view of h, which must be a *streamhttp.Handler;
// anything else is a programming error and panics.
func Of(h any) Endpoint { return view(h) }

// StatusFor returns the HTTP status of a JSON-RPC error code on Streamable
// HTTP (streamable-http.mdx; docs/protocol.md §HTTP statuses): 400 for
// -32020, -32021, -32022 and for parse, request and params errors, 404 for
// -32601, 500 for -32603 and anything else.
func StatusFor(code int) int {
	switch code {
	case mcp.CodeHeaderMismatch, mcp.CodeMissingRequiredClientCapability, mcp.CodeUnsupportedProtocolVersion,
		jsonrpc.CodeParseError, jsonrpc.CodeInvalidRequest, jsonrpc.CodeInvalidParams:
		return http.StatusBadRequest
	case jsonrpc.CodeMethodNotFound:
		return http.StatusNotFound
	}
	return http.StatusInternalServerError
}

// WriteError answers with HTTP status and a JSON-RPC error response for
// id (the zero ID when the request's id is unknown).
func WriteError(w http.ResponseWriter, status int, id jsonrpc.ID, e *jsonrpc.Error) {
	WriteJSON(w, status, &jsonrpc.Response{ID: id, Error: e})
}

// WriteJSON answers with HTTP status and resp as application/json, one
// line with its Content-Length. A response that cannot be encoded becomes
// a 500 with -32603.
func WriteJSON(w http.ResponseWriter, status int, resp *jsonrpc.Response) {
	b, err := json.Marshal(resp)
	if err != nil {
		b, _ = json.Marshal(&jsonrpc.Response{ID: resp.ID, Error: jsonrpc.NewError(jsonrpc.CodeInternalError, "Internal error")})
		status = http.StatusInternalServerError
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)+1))
	w.WriteHeader(status)
	b = append(b, '\n')
	_, _ = w.Write(b)
}
