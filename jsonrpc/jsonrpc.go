// Package jsonrpc implements the JSON-RPC 2.0 envelope used by MCP: request
// and response objects, ids, error objects and a strict decoder. It knows
// nothing of MCP itself.
//
// Spec: JSON-RPC 2.0 §4–§5, as profiled by MCP 2026-07-28 basic/index.mdx
// (ids are strings or integers, never null).
//
// # Public surface
//
// DecodeRequest; Request, Response, Notification, ID (IntID, StringID),
// Error (NewError) and the Code* constants; Version.
package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"

	"github.com/go-json-experiment/json/jsontext"
)

// Version is the only value accepted in the "jsonrpc" member.
const Version = "2.0"

// Standard JSON-RPC 2.0 error codes.
const (
	CodeParseError     = -32700 // invalid JSON
	CodeInvalidRequest = -32600 // JSON is not a valid request object
	CodeMethodNotFound = -32601 // unknown method
	CodeInvalidParams  = -32602 // params do not fit the method
	CodeInternalError  = -32603 // the server failed
)

// ID is a request id: a JSON string or integer, kept as its raw JSON text so
// that a response echoes it byte for byte. The zero ID is "absent".
type ID struct{ raw []byte }

// StringID returns the id "s".
func StringID(s string) ID {
	b, _ := json.Marshal(s)
	return ID{raw: b}
}

// IntID returns the integer id n.
func IntID(n int64) ID { return ID{raw: strconv.AppendInt(nil, n, 10)} }

// IsZero reports whether the id is absent (a notification, or an unreadable id).
func (id ID) IsZero() bool { return len(id.raw) == 0 }

// Raw returns the id's JSON text, or nil when absent.
func (id ID) Raw() []byte { return id.raw }

// String returns the JSON text of the id ("" when absent).
func (id ID) String() string { return string(id.raw) }

// MarshalJSON writes the id as it was received; an absent id is null (only
// used in error responses whose id could not be read).
func (id ID) MarshalJSON() ([]byte, error) {
	if len(id.raw) == 0 {
		return []byte("null"), nil
	}
	return id.raw, nil
}

// UnmarshalJSON accepts a JSON string or an integer (no fraction, no
// exponent); null and every other type are errors.
func (id *ID) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return errors.New("jsonrpc: empty id")
	}
	switch b[0] {
	case '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return fmt.Errorf("jsonrpc: bad string id: %w", err)
		}
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		if _, err := strconv.ParseInt(string(b), 10, 64); err != nil {
			return errors.New("jsonrpc: id must be a string or an integer")
		}
	default:
		return errors.New("jsonrpc: id must be a string or an integer")
	}
	id.raw = append([]byte(nil), b...)
	return nil
}

// Request is a request or, when ID is absent, a notification.
type Request struct {
	ID     ID
	Method string
	// Params is the raw "params" member: nil when absent, otherwise a JSON object.
	Params json.RawMessage
}

// IsNotification reports whether the message has no id.
func (r *Request) IsNotification() bool { return r.ID.IsZero() }

// Error is a JSON-RPC error object. It implements error; Message is what
// the peer sees, so it must never carry a secret.
type Error struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

func (e *Error) Error() string { return fmt.Sprintf("jsonrpc error %d: %s", e.Code, e.Message) }

// NewError returns an error object with the given code and message.
func NewError(code int, format string, args ...any) *Error {
	if len(args) == 0 {
		return &Error{Code: code, Message: format}
	}
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Response is a result or an error response. Exactly one of Result and Error is set.
type Response struct {
	ID     ID
	Result any
	Error  *Error
}

type wireResponse struct {
	JSONRPC string `json:"jsonrpc"`
	ID      ID     `json:"id"`
	Result  any    `json:"result,omitempty"`
	Error   *Error `json:"error,omitempty"`
}

// MarshalJSON encodes the response on one line, as the wire wants.
func (r *Response) MarshalJSON() ([]byte, error) {
	return json.Marshal(wireResponse{JSONRPC: Version, ID: r.ID, Result: r.Result, Error: r.Error})
}

// Notification is a server-to-client notification sent on a response stream.
type Notification struct {
	Method string `json:"method"`
	Params any    `json:"params,omitempty"`
}

// MarshalJSON encodes the notification with its "jsonrpc" member.
func (n *Notification) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		JSONRPC string `json:"jsonrpc"`
		Method  string `json:"method"`
		Params  any    `json:"params,omitempty"`
	}{Version, n.Method, n.Params})
}

// DecodeRequest parses one JSON-RPC request or notification strictly: the
// body must be a single JSON object with "jsonrpc":"2.0", a string
// "method", an optional string or integer "id", an optional object
// "params", and nothing else after it. Members other than these are
// refused, as are duplicated members and invalid UTF-8.
//
// On failure it returns a *Error with CodeParseError (not JSON) or
// CodeInvalidRequest (JSON, but not a request); the returned Request holds
// the ID when it could be read, so the error response can echo it.
func DecodeRequest(data []byte) (*Request, *Error) {
	dec := decoderPool.Get().(*jsontext.Decoder)
	defer func() {
		dec.Reset(emptyReader)
		decoderPool.Put(dec)
	}()
	br := readerPool.Get().(*bytes.Reader)
	defer readerPool.Put(br)
	br.Reset(data)
	dec.Reset(br)

	tok, err := dec.ReadToken()
	if err != nil {
		return nil, parseError
	}
	if tok.Kind() != '{' {
		if !json.Valid(data) {
			return nil, parseError
		}
		return nil, NewError(CodeInvalidRequest, "Invalid request: expected one JSON-RPC object (batches are not supported)")
	}
	var r requestReader
	for dec.PeekKind() != '}' {
		name, err := dec.ReadToken()
		if err != nil {
			return syntaxError(&r.req, err)
		}
		key := name.String() // before ReadValue, which voids name
		val, err := dec.ReadValue()
		if err != nil {
			return syntaxError(&r.req, err)
		}
		r.member(key, val)
	}
	if _, err := dec.ReadToken(); err != nil { // closing brace
		return syntaxError(&r.req, err)
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		return nil, NewError(CodeParseError, "Parse error: trailing data after the JSON object")
	}
	if r.invalid == nil && (!r.haveVersion || !r.haveMethod) {
		r.invalid = NewError(CodeInvalidRequest, `Invalid request: "jsonrpc" and "method" are required`)
	}
	if r.invalid != nil {
		return &Request{ID: r.req.ID}, r.invalid
	}
	return &r.req, nil
}

// requestReader collects a request's members; invalid is the first
// reason the object is not a valid request.
type requestReader struct {
	req                     Request
	haveVersion, haveMethod bool
	invalid                 *Error
}

// member reads one member of the request object.
func (r *requestReader) member(key string, val jsontext.Value) {
	var bad *Error
	switch key {
	case "jsonrpc":
		if string(val) != `"2.0"` {
			bad = NewError(CodeInvalidRequest, `Invalid request: "jsonrpc" must be "2.0"`)
		}
		r.haveVersion = true
	case "id":
		if err := r.req.ID.UnmarshalJSON(val); err != nil {
			bad = NewError(CodeInvalidRequest, "Invalid request: id must be a string or an integer")
		}
	case "method":
		m, err := jsontext.AppendUnquote(nil, val)
		if val.Kind() != '"' || err != nil || len(m) == 0 {
			bad = NewError(CodeInvalidRequest, `Invalid request: "method" must be a non-empty string`)
		}
		r.req.Method = string(m)
		r.haveMethod = true
	case "params":
		if val.Kind() != '{' {
			bad = NewError(CodeInvalidRequest, `Invalid request: "params" must be an object`)
		}
		r.req.Params = append(json.RawMessage(nil), val...)
	case "result", "error":
		bad = NewError(CodeInvalidRequest, "Invalid request: a response is not accepted here")
	default:
		bad = NewError(CodeInvalidRequest, "Invalid request: unknown member %q", key)
	}
	r.invalid = orErr(r.invalid, bad)
}

var (
	parseError  = &Error{Code: CodeParseError, Message: "Parse error: body is not JSON"}
	emptyReader = bytes.NewReader(nil)
	decoderPool = sync.Pool{New: func() any { return jsontext.NewDecoder(emptyReader) }}
	readerPool  = sync.Pool{New: func() any { return new(bytes.Reader) }}
)

// syntaxError classifies a decoder error: a duplicated member is a JSON
// text that is not a valid request; anything else is a parse error.
func syntaxError(req *Request, err error) (*Request, *Error) {
	if errors.Is(err, jsontext.ErrDuplicateName) {
		return &Request{ID: req.ID}, NewError(CodeInvalidRequest, "Invalid request: duplicate member")
	}
	return nil, parseError
}

func orErr(first, next *Error) *Error {
	if first != nil {
		return first
	}
	return next
}
