package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mcp-elicit/elicit/jsonrpc"
	"github.com/mcp-elicit/elicit/mcp"
)

// outgoing is one request before encoding.
type outgoing struct {
	method string
	// name is the Mcp-Name value (tool or prompt name, resource URI,
	// task id); set only for tools/call, prompts/get, resources/read and
	// the tasks methods.
	name    string
	hasName bool
	params  reqParams
	headers http.Header // Mcp-Param-*
	// target names the tool, prompt or URI for progress callbacks.
	target string
	// caps, when set, replaces the client's capabilities for this request
	// (SendRaw).
	caps *mcp.ClientCapabilities
	// bearer is the access token to send ("" for none), set per attempt
	// by postAuthorized.
	bearer string
	// meta holds further _meta members (SendRaw's RawRequest.Meta).
	meta map[string]json.RawMessage
	// onMessage receives the notifications and keep-alives of an SSE
	// answer (SendRaw's RawRequest.OnMessage).
	onMessage func(method string, params json.RawMessage)
}

// reqParams are the params of every request this client sends; the
// pointer and omitempty members appear only where their method has them
// (docs/protocol.md §Discovery, §Tools).
type reqParams struct {
	Name      *string         `json:"name,omitempty"`
	URI       *string         `json:"uri,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Cursor    string          `json:"cursor,omitempty"`
	// Ref and Argument are completion/complete's (SendRaw only).
	Ref            json.RawMessage            `json:"ref,omitempty"`
	Argument       json.RawMessage            `json:"argument,omitempty"`
	InputResponses map[string]json.RawMessage `json:"inputResponses,omitempty"`
	// RequestState is the server's JSON string token, as received.
	RequestState json.RawMessage `json:"requestState,omitempty"`
	// TaskID is params.taskId of tasks/get, tasks/update and tasks/cancel.
	TaskID *string  `json:"taskId,omitempty"`
	Meta   *reqMeta `json:"_meta"`
}

// reqMeta is the request _meta (basic/index.mdx §Per-request protocol
// fields; META-C-01, META-C-02).
type reqMeta struct {
	ProtocolVersion    string                 `json:"io.modelcontextprotocol/protocolVersion"`
	ClientCapabilities mcp.ClientCapabilities `json:"io.modelcontextprotocol/clientCapabilities"`
	ClientInfo         *mcp.Implementation    `json:"io.modelcontextprotocol/clientInfo,omitempty"`
	ProgressToken      string                 `json:"progressToken,omitempty"`
	// extra holds further members (SendRaw's RawRequest.Meta); the
	// members above win over extra ones of the same name.
	extra map[string]json.RawMessage
}

// MarshalJSON encodes the members above, then the extra ones.
func (m *reqMeta) MarshalJSON() ([]byte, error) {
	type plain reqMeta
	b, err := marshal((*plain)(m))
	if err != nil || len(m.extra) == 0 {
		return b, err
	}
	// The members the encoding above holds (omitempty ones when set).
	known := func(k string) bool {
		switch k {
		case mcp.MetaProtocolVersion, mcp.MetaClientCapabilities:
			return true
		case mcp.MetaClientInfo:
			return m.ClientInfo != nil
		case mcp.MetaProgressToken:
			return m.ProgressToken != ""
		}
		return false
	}
	keys := make([]string, 0, len(m.extra))
	for k := range m.extra {
		if !known(k) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	b = b[:len(b)-1] // the closing brace
	for _, k := range keys {
		name, err := marshal(k)
		if err != nil {
			return nil, err
		}
		if !json.Valid(m.extra[k]) {
			return nil, fmt.Errorf("_meta member %q is not valid JSON", k)
		}
		b = append(append(append(append(b, ','), name...), ':'), m.extra[k]...)
	}
	return append(b, '}'), nil
}

type reqEnvelope struct {
	JSONRPC string     `json:"jsonrpc"`
	ID      int64      `json:"id"`
	Method  string     `json:"method"`
	Params  *reqParams `json:"params"`
}

// wireMsg is any JSON-RPC message a server may send to this client.
type wireMsg struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   *wireError      `json:"error"`
}

type wireError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}

// marshal encodes v without HTML escaping, so that raw members (the
// requestState token, arguments) go out exactly as they are.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// transport carries one request to the server and brings back its raw
// result object: Streamable HTTP (httpTransport, each request its own
// POST) or the standard streams of a launched command (stdioTransport).
// The client logic above it (the input loop, version fallback, typed
// errors) is the same for both.
type transport interface {
	// roundTrip sends out, with a fresh id and _meta for version, and
	// returns the result object or the request's error.
	roundTrip(ctx context.Context, out *outgoing, version string) (json.RawMessage, error)
	// headers reports whether requests carry HTTP headers, so that a tool
	// whose x-mcp-header annotations break the rules cannot be called
	// (HTTP-C-11, HTTP-C-12).
	headers() bool
	// close releases the connection (stops a launched command).
	close() error
}

// httpTransport is the Streamable HTTP binding.
type httpTransport struct{ c *Client }

func (t httpTransport) roundTrip(ctx context.Context, out *outgoing, version string) (json.RawMessage, error) {
	return t.c.postAuthorized(ctx, out, version)
}

func (httpTransport) headers() bool { return true }
func (httpTransport) close() error  { return nil }

// send sends out and returns the raw result object. On -32022 it retries
// once with a version from data.supported that this client speaks
// (VER-C-02) and keeps that version for later requests.
func (c *Client) send(ctx context.Context, out *outgoing) (json.RawMessage, error) {
	version := c.Version()
	res, err := c.tr.roundTrip(ctx, out, version)
	var rpc *RPCError
	if err == nil || !errors.As(err, &rpc) || rpc.Code != mcp.CodeUnsupportedProtocolVersion {
		return res, err
	}
	var data mcp.UnsupportedVersionData
	_ = json.Unmarshal(rpc.Data, &data)
	next := ""
	for _, v := range c.versions {
		if slices.Contains(data.Supported, v) {
			next = v
			break
		}
	}
	if next == "" {
		return nil, &UnsupportedVersionError{Supported: data.Supported, Requested: version, RPC: rpc}
	}
	c.setVersion(next)
	res, err = c.tr.roundTrip(ctx, out, next)
	if errors.As(err, &rpc) && rpc.Code == mcp.CodeUnsupportedProtocolVersion {
		_ = json.Unmarshal(rpc.Data, &data)
		return nil, &UnsupportedVersionError{Supported: data.Supported, Requested: next, RPC: rpc}
	}
	return res, err
}

// encode builds the JSON-RPC request for out: a fresh id, out's params and
// _meta with version, the capabilities and clientInfo, and a progress
// token when progress is wanted.
func (c *Client) encode(out *outgoing, version string) (id int64, token string, body []byte, err error) {
	id = c.nextID.Add(1)
	params := out.params
	caps := c.caps
	if out.caps != nil {
		caps = *out.caps
	}
	params.Meta = &reqMeta{ProtocolVersion: version, ClientCapabilities: caps, ClientInfo: &c.info, extra: out.meta}
	if c.onProgress != nil {
		token = "elicit-" + strconv.FormatInt(id, 10)
		params.Meta.ProgressToken = token
	}
	body, err = marshal(&reqEnvelope{JSONRPC: jsonrpc.Version, ID: id, Method: out.method, Params: &params})
	if err != nil {
		return 0, "", nil, fmt.Errorf("mcpclient: %s: encoding the request: %w", out.method, err)
	}
	return id, token, body, nil
}

// post sends one request with a fresh id and _meta and reads its answer.
func (c *Client) post(ctx context.Context, out *outgoing, version string) (json.RawMessage, error) {
	id, token, body, err := c.encode(out, version)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("mcpclient: bad endpoint %q: %w", c.endpoint, err)
	}
	h := req.Header
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json, text/event-stream")
	h.Set(mcp.HeaderProtocolVersion, version)
	h.Set(mcp.HeaderMethod, out.method)
	if out.hasName {
		h.Set(mcp.HeaderName, mcp.EncodeHeaderValue(out.name))
	}
	for k, v := range out.headers {
		h[k] = v // already canonical (paramHeaders)
	}
	if out.bearer != "" {
		h.Set("Authorization", "Bearer "+out.bearer)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &ConnectionError{Endpoint: c.endpoint, Err: unwrapURLError(err)}
	}
	defer resp.Body.Close()
	rd := &reading{c: c, out: out, id: id, token: token, resp: resp}
	return rd.read(ctx)
}

// unwrapURLError drops the *url.Error wrapper, whose text repeats the
// method and endpoint that ConnectionError already names.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) && ue.Err != nil {
		return ue.Err
	}
	return err
}

// reading is the answer to one POST.
type reading struct {
	c     *Client
	out   *outgoing
	id    int64
	token string
	resp  *http.Response
}

func (r *reading) notMCP(reason string, body []byte) error {
	return &NotMCPError{Endpoint: r.c.endpoint, StatusCode: r.resp.StatusCode,
		ContentType: clip(r.resp.Header.Get("Content-Type"), 100), Reason: reason, Snippet: clip(string(body), 200),
		RetryAfter: retryAfter(r.resp.Header, time.Now())}
}

func (r *reading) protocol(rule, format string, args ...any) error {
	return &ProtocolError{Method: r.out.method, Rule: rule, Reason: fmt.Sprintf(format, args...)}
}

func (r *reading) read(ctx context.Context) (json.RawMessage, error) {
	resp := r.resp
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	isJSON := mt == "application/json" || strings.HasSuffix(mt, "+json")
	refused := resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden
	switch {
	case refused && (isJSON || bearerChallenge(strings.Join(resp.Header.Values("WWW-Authenticate"), ", "))):
		// Only an MCP-ish refusal is about the token: an HTML 403 (a
		// login page's CSRF refusal, say) means a wrong endpoint.
		return nil, r.authError(isJSON)
	case resp.StatusCode == http.StatusOK && mt == "text/event-stream":
		return r.stream(ctx)
	case isJSON:
		b, err := r.body()
		if err != nil {
			return nil, err
		}
		m, err := decodeMsg(b)
		if err != nil {
			return nil, r.notMCP("the body is not a JSON-RPC 2.0 message", b)
		}
		return r.answer(m, b)
	case resp.StatusCode == http.StatusAccepted:
		return nil, r.protocol("HTTP-S-05", "HTTP 202 Accepted without a response to the request")
	case resp.StatusCode == http.StatusNotFound:
		b, _ := r.body()
		return nil, r.notMCP("not found: is the endpoint path right?", b)
	case resp.StatusCode == http.StatusMethodNotAllowed:
		return nil, r.notMCP("the endpoint does not take POST", nil)
	}
	b, _ := r.body()
	switch {
	case refused:
		return nil, r.notMCP("a refusal with neither a JSON-RPC body nor a Bearer challenge: is the endpoint path right?", b)
	case resp.StatusCode == http.StatusOK:
		return nil, r.notMCP("unexpected content type", b)
	}
	return nil, r.notMCP("unexpected HTTP status", b)
}

// authError is a 401 or 403 about the token, with the JSON-RPC error of
// a JSON body.
func (r *reading) authError(isJSON bool) *AuthError {
	ae := &AuthError{StatusCode: r.resp.StatusCode, WWWAuthenticate: strings.Join(r.resp.Header.Values("WWW-Authenticate"), ", ")}
	if !isJSON {
		return ae
	}
	if b, err := r.body(); err == nil {
		if m, err := decodeMsg(b); err == nil && m.Error != nil {
			ae.RPC = r.rpcError(m.Error)
		}
	}
	return ae
}

// bearerChallenge reports whether a WWW-Authenticate value (one or more
// challenges) names the Bearer scheme (RFC 6750 section 3), which MCP
// authorization uses.
func bearerChallenge(v string) bool {
	for part := range strings.SplitSeq(v, ",") {
		scheme, _, _ := strings.Cut(strings.TrimSpace(part), " ")
		if strings.EqualFold(scheme, "Bearer") {
			return true
		}
	}
	return false
}

// body reads a JSON body up to the message limit.
func (r *reading) body() ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r.resp.Body, r.c.maxMsg+1))
	if err != nil {
		return nil, &ConnectionError{Endpoint: r.c.endpoint, Err: err}
	}
	if int64(len(b)) > r.c.maxMsg {
		return nil, r.protocol("", "response larger than %d bytes", r.c.maxMsg)
	}
	return b, nil
}

func decodeMsg(b []byte) (*wireMsg, error) {
	var m wireMsg
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	if m.JSONRPC != jsonrpc.Version {
		return nil, errors.New(`"jsonrpc" is not "2.0"`)
	}
	return &m, nil
}

// answer handles the single message of a JSON body.
func (r *reading) answer(m *wireMsg, raw []byte) (json.RawMessage, error) {
	switch {
	case m.Method != "" && len(m.ID) > 0:
		return nil, r.protocol("HTTP-S-07", "the server sent a request (%q) instead of a response", clip(m.Method, 80))
	case m.Method != "":
		return nil, r.protocol("", "the server sent a notification instead of a response")
	case m.Error != nil:
		if len(m.ID) > 0 && string(m.ID) != "null" && !r.ours(m.ID) {
			return nil, r.protocol("ERR-01", "the error response has id %s, not %d", clip(string(m.ID), 40), r.id)
		}
		return nil, r.rpcErrorTyped(m.Error)
	case m.Result != nil:
		if r.resp.StatusCode != http.StatusOK {
			return nil, r.notMCP("a result with a non-200 status", raw)
		}
		if !r.ours(m.ID) {
			return nil, r.protocol("", "the response has id %s, not %d", clip(string(m.ID), 40), r.id)
		}
		if !isObject(m.Result) {
			return nil, r.protocol("", "the result is not a JSON object")
		}
		return m.Result, nil
	}
	return nil, r.notMCP("neither a result nor an error", raw)
}

// stream reads an SSE response: notifications about the request, then the
// response (docs/protocol.md §Responses: JSON and SSE). Closing the body early, as the deferred Close
// does once the response is in, is harmless: the request is answered.
func (r *reading) stream(ctx context.Context) (json.RawMessage, error) {
	sr := newSSEReader(r.resp.Body, int(r.c.maxMsg))
	if r.out.onMessage != nil {
		sr.comment = func() { r.out.onMessage("", nil) }
	}
	for {
		ev, err := sr.Next()
		if err != nil {
			return nil, r.streamFailed(ctx, err)
		}
		if ev.Type != "message" || len(bytes.TrimSpace(ev.Data)) == 0 {
			continue // other event types and priming events carry no JSON-RPC
		}
		m, err := decodeMsg(ev.Data)
		if err != nil {
			return nil, r.protocol("", "an SSE event is not a JSON-RPC message: %v", err)
		}
		if res, done, err := r.streamed(m); done {
			return res, err
		}
	}
}

// streamFailed is the error of a response stream that ended (io.EOF) or
// broke before the response: the caller's own when ctx ended.
func (r *reading) streamFailed(ctx context.Context, err error) error {
	switch {
	case errors.Is(err, errEventTooLarge):
		return r.protocol("", "an SSE event is larger than %d bytes", r.c.maxMsg)
	case ctx.Err() != nil:
		return ctx.Err()
	case err == io.EOF:
		return fmt.Errorf("%w (%s)", ErrStreamEnded, r.out.method)
	}
	return &ConnectionError{Endpoint: r.c.endpoint, Err: err}
}

// streamed handles one message of the response stream. A notification is
// delivered and a server request skipped; the response (an error without
// an id, or this request's id) is done: its result, or its error.
func (r *reading) streamed(m *wireMsg) (res json.RawMessage, done bool, err error) {
	switch {
	case m.Method != "" && len(m.ID) == 0:
		r.notification(m)
	case m.Method != "":
		// HTTP-S-07 forbids server requests; there is no way to answer
		// one in 2026-07-28, so it is skipped.
		r.c.log.Warn("mcpclient: server sent a JSON-RPC request on a response stream; ignored",
			"method", clip(m.Method, 80), "request", r.out.method)
	case m.Error != nil && (len(m.ID) == 0 || string(m.ID) == "null" || r.ours(m.ID)):
		return nil, true, r.rpcErrorTyped(m.Error)
	case m.Result != nil && r.ours(m.ID):
		if !isObject(m.Result) {
			return nil, true, r.protocol("", "the result is not a JSON object")
		}
		return m.Result, true, nil
	}
	return nil, false, nil
}

func (r *reading) notification(m *wireMsg) {
	if r.out.onMessage != nil {
		r.out.onMessage(m.Method, m.Params)
	}
	if m.Method != mcp.NotificationProgress || r.c.onProgress == nil {
		return
	}
	var p mcp.ProgressParams
	if err := json.Unmarshal(m.Params, &p); err != nil {
		return
	}
	var tok string
	if json.Unmarshal(p.ProgressToken, &tok) != nil || tok != r.token {
		return
	}
	r.c.onProgress(Progress{Method: r.out.method, Target: r.out.target, Progress: p.Progress, Total: p.Total, Message: p.Message})
}

// ours reports whether a response id is this request's (an integer).
func (r *reading) ours(id json.RawMessage) bool {
	n, err := strconv.ParseInt(string(bytes.TrimSpace(id)), 10, 64)
	return err == nil && n == r.id
}

func (r *reading) rpcError(e *wireError) *RPCError {
	status := r.resp.StatusCode
	return &RPCError{Method: r.out.method, HTTPStatus: status, Code: e.Code, Message: e.Message, Data: e.Data,
		RetryAfter: retryAfter(r.resp.Header, time.Now())}
}

func (r *reading) rpcErrorTyped(e *wireError) error { return typedError(r.rpcError(e)) }

// typedError returns the error for a JSON-RPC error response, typed for
// the codes the client acts on.
func typedError(rpc *RPCError) error {
	if rpc.Code == mcp.CodeMissingRequiredClientCapability {
		var d mcp.MissingCapabilityData
		_ = json.Unmarshal(rpc.Data, &d)
		return &MissingCapabilityError{RequiredCapabilities: d.RequiredCapabilities, RPC: rpc}
	}
	return rpc
}

func isObject(b json.RawMessage) bool {
	b = bytes.TrimSpace(b)
	return len(b) > 0 && b[0] == '{'
}
