package mcpclient

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/mcp-elicit/elicit/mcp"
)

// Sentinel errors, matched with errors.Is.
var (
	// ErrRoundLimit: the server still answered input_required after
	// Options.MaxRounds retries of one call. The call is abandoned (a
	// server must not count on retries, MRTR-S-09).
	ErrRoundLimit = errors.New("mcpclient: too many input rounds")
	// ErrStateOnlyLimit: the server answered more than MaxStateOnlyRounds
	// state-only interim results in a row ("come back later", MRTR-C-02).
	ErrStateOnlyLimit = errors.New("mcpclient: server kept asking to come back later")
	// ErrStreamEnded: an SSE response ended before the response to the
	// request. The request is lost (there is no resumption in 2026-07-28);
	// calling again sends it as a new request with a new id (HTTP-C-07).
	ErrStreamEnded = errors.New("mcpclient: response stream ended before the response")
	// ErrToolDropped: CallTool named a tool whose x-mcp-header annotations
	// break the rules, so it was dropped from the tool list (HTTP-C-12).
	ErrToolDropped = errors.New("mcpclient: tool has invalid x-mcp-header annotations")
)

// RPCError is a JSON-RPC error response from the server (docs/protocol.md §Error codes).
// Message and Data are the server's, untrusted text: show them, but decide
// nothing on them beyond Code.
type RPCError struct {
	// Method is the request's method.
	Method string
	// HTTPStatus is the status the error came with (400 for -32020 to
	// -32022, 404 for -32601, 200 when it came on an SSE stream).
	HTTPStatus int
	// Code is the JSON-RPC error code.
	Code int
	// Message is the server's message.
	Message string
	// Data is the raw "data" member, nil when absent.
	Data json.RawMessage
	// RetryAfter is the answer's Retry-After header (delay-seconds or an
	// HTTP date, RFC 9110 §10.2.3), 0 when absent or unreadable; a
	// server sends it with a retryable error (HTTP 503).
	RetryAfter time.Duration
}

func (e *RPCError) Error() string {
	return fmt.Sprintf("mcpclient: %s: server error %d: %s", e.Method, e.Code, clip(e.Message, 300))
}

// MissingCapabilityError is a -32021 MissingRequiredClientCapability error
// (CAP-S-03): the request needs a client capability this client did not
// declare, i.e. a Handlers member that is nil. errors.As also finds the
// underlying *RPCError.
type MissingCapabilityError struct {
	// RequiredCapabilities names what is missing, in the spec's object
	// form, e.g. {"elicitation":{"url":{}}}.
	RequiredCapabilities mcp.ClientCapabilities
	// RPC is the error response as received.
	RPC *RPCError
}

func (e *MissingCapabilityError) Error() string {
	b, _ := json.Marshal(e.RequiredCapabilities)
	return fmt.Sprintf("mcpclient: %s: the server needs client capabilities %s that this client does not declare", e.RPC.Method, b)
}

// Unwrap returns the *RPCError.
func (e *MissingCapabilityError) Unwrap() error { return e.RPC }

// UnsupportedVersionError is a -32022 UnsupportedProtocolVersion error for
// which no version in Supported is one this client speaks (VER-C-02).
// errors.As also finds the underlying *RPCError.
type UnsupportedVersionError struct {
	// Supported lists what the server serves; Requested is what was sent.
	Supported []string
	Requested string
	RPC       *RPCError
}

func (e *UnsupportedVersionError) Error() string {
	return fmt.Sprintf("mcpclient: the server does not serve protocol version %q (it serves %s)", e.Requested, strings.Join(e.Supported, ", "))
}

// Unwrap returns the *RPCError.
func (e *UnsupportedVersionError) Unwrap() error { return e.RPC }

// ConnectionError means no HTTP exchange happened: connection refused, DNS
// failure, TLS failure, or the connection broke before a response. Err is
// the transport's error (errors.Is(err, syscall.ECONNREFUSED) works).
type ConnectionError struct {
	Endpoint string
	Err      error
}

func (e *ConnectionError) Error() string {
	return fmt.Sprintf("mcpclient: cannot reach the MCP server at %s: %v", e.Endpoint, e.Err)
}

// Unwrap returns the transport's error.
func (e *ConnectionError) Unwrap() error { return e.Err }

// AuthError is an HTTP 401 or 403 answer with a JSON body or a Bearer
// challenge: the server wants (other) credentials. A 401 or 403 with
// neither (an HTML refusal page) is a NotMCPError. WWWAuthenticate is the
// challenge, if any (several header lines joined with ", "); RPC the
// JSON-RPC error in the body, if any. With an Options.Authorizer, Err says
// why the refusal stands: the Authorizer's error (a sign-in that failed or
// was declined), or ErrAuthorizeLimit; StatusCode is 0 when the
// Authorizer failed to give a token before any request (Err then).
type AuthError struct {
	StatusCode      int
	WWWAuthenticate string
	RPC             *RPCError
	Err             error
}

func (e *AuthError) Error() string {
	var s string
	switch e.StatusCode {
	case 0:
		s = "mcpclient: no access token"
	case http.StatusForbidden:
		s = "mcpclient: the server refused the request (HTTP 403 Forbidden)"
	default:
		s = "mcpclient: the server requires authorization (HTTP 401 Unauthorized)"
	}
	if e.Err != nil {
		s += ": " + strings.TrimPrefix(e.Err.Error(), "mcpclient: ")
	}
	return s
}

// Unwrap returns Err.
func (e *AuthError) Unwrap() error { return e.Err }

// NotMCPError means the endpoint answered, but not as an MCP server: an
// unexpected status or content type, or a body that is not a JSON-RPC
// response. Snippet is the start of the body (at most 200 bytes, control
// characters replaced), for the user.
type NotMCPError struct {
	Endpoint    string
	StatusCode  int
	ContentType string
	Reason      string
	Snippet     string
	// RetryAfter is the answer's Retry-After header, as in RPCError (a
	// proxy's 503 page may carry one).
	RetryAfter time.Duration
}

func (e *NotMCPError) Error() string {
	s := fmt.Sprintf("mcpclient: %s did not answer as an MCP server (HTTP %d", e.Endpoint, e.StatusCode)
	if e.ContentType != "" {
		s += ", " + e.ContentType
	}
	s += "): " + e.Reason
	if e.Snippet != "" {
		s += ": " + strconv.Quote(e.Snippet)
	}
	return s
}

// ProtocolError means the server answered with something MCP 2026-07-28
// forbids: an unknown resultType (MRTR-C-08), an interim result for a method
// that cannot have one (MRTR-S-04), an input request the client did not
// declare (CAP-S-01, MRTR-S-08), a malformed message. Rule is the spec
// requirement id when there is one.
type ProtocolError struct {
	Method string
	Rule   string
	Reason string
}

func (e *ProtocolError) Error() string {
	s := "mcpclient: " + e.Method + ": the server broke the protocol: " + e.Reason
	if e.Rule != "" {
		s += " (" + e.Rule + ")"
	}
	return s
}

// TaskError: the client stopped following the task a tool call became
// without learning how it ended, so the task may still be running on the
// server, and will end by itself (its work, or its ttlMs). It comes from
// CallTool and CallToolOnce when a tasks/get or tasks/update of the task
// failed for good: a non-retryable error at once, a transient one
// (retryable, HTTP 503, unreachable server) once TaskRetryWindow has
// passed (SEP-2663 §Task Polling). Calling again starts a new task, so a
// host shows TaskID rather than inviting a retry. errors.As finds it, and
// through Unwrap the failure (an *RPCError, a *ConnectionError, …).
type TaskError struct {
	// Tool is the tool whose call became the task; TaskID the server's
	// taskId (untrusted text: clean it before printing it).
	Tool   string
	TaskID string
	// Err is the last failure of the request that gave up.
	Err error
}

func (e *TaskError) Error() string {
	return fmt.Sprintf("mcpclient: stopped following task %s (tool %s): %s; the task may still be running on the server",
		clip(e.TaskID, 64), clip(e.Tool, 100), strings.TrimPrefix(e.Err.Error(), "mcpclient: "))
}

// Unwrap returns Err.
func (e *TaskError) Unwrap() error { return e.Err }

// retryAfter reads a Retry-After header: delay-seconds or an HTTP date
// (RFC 9110 §10.2.3); 0 when absent, unreadable or past.
func retryAfter(h http.Header, now time.Time) time.Duration {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if n, err := strconv.Atoi(v); err == nil {
		return time.Duration(max(n, 0)) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// clip makes untrusted text from the server safe for an error message:
// at most n bytes, and no control or bidi-override characters that could
// move a terminal's cursor or reorder the text around it.
func clip(s string, n int) string {
	if len(s) > n {
		s = strings.ToValidUTF8(s[:n], "") + "…"
	}
	return strings.Map(func(r rune) rune {
		// Controls, format characters (bidi, zero-width, BOM) and separators
		// could redraw or reorder what the user reads.
		if r != ' ' && !unicode.IsGraphic(r) {
			return '\uFFFD'
		}
		return r
	}, s)
}
