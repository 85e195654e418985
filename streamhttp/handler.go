// Package streamhttp is the stateless Streamable HTTP binding of MCP
// 2026-07-28 (basic/transports/streamable-http.mdx) for an
// mcpserver.Server: one POST endpoint, standard header validation
// (MCP-Protocol-Version, Mcp-Method, Mcp-Name, Mcp-Param-*), Host and
// Origin checks against DNS rebinding, a body size limit, authentication,
// and JSON or SSE responses.
//
// Validation order (docs/protocol.md §Validation order): Host/Origin (403) → method
// (405) → authentication (401) → body size (413) → JSON-RPC parse (400, -32700 /
// -32600) → standard headers present (400, -32020) → required _meta
// (400, -32602) → header/body equality (400, -32020) → version (400,
// -32022) → method known (404, -32601) → Mcp-Param-* (400, -32020) →
// dispatch (capability gate 400, -32021).
//
// # Public surface
//
// NewHandler, Handler (an http.Handler), Options and DefaultMaxBodyBytes
// for the MCP endpoint; AllowHosts for the pages served beside it. What
// package legacy needs to share the endpoint (admission, the body limit,
// the error answers) is not part of this API.
package streamhttp

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/mcp-elicit/elicit/auth"
	"github.com/mcp-elicit/elicit/internal/transport"
	"github.com/mcp-elicit/elicit/internal/transport/endpoint"
	"github.com/mcp-elicit/elicit/jsonrpc"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpserver"
)

// DefaultMaxBodyBytes is the request body limit when Options leave it 0.
const DefaultMaxBodyBytes = 1 << 20

// Options configure a Handler. A nil *Options means the defaults.
type Options struct {
	// Auth authenticates each request; nil means auth.Anonymous{}.
	Auth auth.Authenticator
	// AllowedHosts are the host names (without port) accepted in the Host
	// header and in Origin. Nil means loopback names only: localhost,
	// 127.0.0.1 and ::1 (HTTP-S-02, DNS-rebinding protection). A "*" entry
	// accepts any host (only behind a proxy that checks Host itself).
	AllowedHosts []string
	// MaxBodyBytes limits a request body; 0 means DefaultMaxBodyBytes. A
	// larger body gets HTTP 413.
	MaxBodyBytes int64
	// Logger receives request failures; nil means slog.Default().
	Logger *slog.Logger
}

// Handler serves an mcpserver.Server over Streamable HTTP. It is an
// http.Handler; mount it at the MCP endpoint path.
type Handler struct {
	srv   transport.Server
	auth  auth.Authenticator
	hosts hostSet
	max   int64
	log   *slog.Logger
}

// NewHandler returns a Handler for s. With no Options.Auth (or
// auth.Anonymous) it panics if s has a handler registered with
// mcpserver.HandlerOptions.RequirePrincipal, such as a connect.Step tool,
// and registering one afterwards panics (mcpserver.Server.ServeAnonymously):
// without a user such a handler cannot work.
func NewHandler(s *mcpserver.Server, opts *Options) *Handler {
	h := &Handler{srv: transport.Of(s), auth: auth.Anonymous{}, max: DefaultMaxBodyBytes, log: slog.Default()}
	var hosts []string
	if opts != nil {
		if opts.Auth != nil {
			h.auth = opts.Auth
		}
		if opts.AllowedHosts != nil {
			hosts = opts.AllowedHosts
		}
		if opts.MaxBodyBytes > 0 {
			h.max = opts.MaxBodyBytes
		}
		if opts.Logger != nil {
			h.log = opts.Logger
		}
	}
	h.hosts = newHostSet(hosts)
	switch h.auth.(type) {
	case auth.Anonymous, *auth.Anonymous:
		// A handler that needs a user would run for nobody: refuse now,
		// not on the first call (see mcpserver.HandlerOptions.RequirePrincipal).
		if err := s.ServeAnonymously(); err != nil {
			panic("streamhttp: NewHandler: " + err.Error())
		}
	}
	return h
}

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// refuseAuth answers a failed authentication: the status and
// WWW-Authenticate challenge of an *auth.Error (401, 400 or 403, RFC 6750
// §3; 503 with Retry-After and a retryable -32603 when the issuer is
// unreachable), else 401 with the Authenticator's challenge. The message
// of a 401 adds the error's Help, how to authenticate. The reason goes to
// the log at info level; it never holds the token.
func (h *Handler) refuseAuth(w http.ResponseWriter, r *http.Request, err error) {
	status, challenge, help := http.StatusUnauthorized, h.auth.Challenge(), ""
	var ae *auth.Error
	if errors.As(err, &ae) {
		status, challenge, help = ae.Status, ae.Challenge, ae.Help
		if status == http.StatusServiceUnavailable {
			// As for a store outage: retryable, nothing was done.
			h.log.Warn("streamhttp: cannot authenticate now", "reason", ae.Reason)
			w.Header().Set("Retry-After", "1")
			endpoint.WriteError(w, status, jsonrpc.ID{}, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "Temporarily unavailable; retry later",
				Data: transport.RetryData{Retryable: true, RetryAfterMs: 1000}})
			return
		}
		h.log.Info("streamhttp: request not authenticated", "status", status, "reason", ae.Reason, "remote", r.RemoteAddr)
	}
	if challenge != "" {
		w.Header().Set("WWW-Authenticate", challenge)
	}
	msg := "Unauthorized"
	if help != "" {
		msg += ": " + help
	}
	if status == http.StatusForbidden {
		msg = "Forbidden: insufficient scope"
	} else if status == http.StatusBadRequest {
		msg = "Bad Request: malformed Authorization"
	}
	endpoint.WriteError(w, status, jsonrpc.ID{}, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: msg})
}

// ServeHTTP handles one POST.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// Host first, whatever the method: a rebinding page learns nothing,
	// not even which methods the endpoint takes (HTTP-S-02).
	if !h.hostOK(w, r) {
		return
	}
	if r.Method != http.MethodPost {
		// HTTP-S-21: no standalone GET stream, no session to DELETE.
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
		return
	}
	p, ok := h.authenticate(w, r)
	if !ok {
		return
	}
	if cts := r.Header.Values("Content-Type"); len(cts) > 1 || (len(cts) == 1 && cts[0] != "application/json") {
		if mt, _, err := mime.ParseMediaType(cts[0]); len(cts) > 1 || err != nil || mt != "application/json" {
			endpoint.WriteError(w, http.StatusUnsupportedMediaType, jsonrpc.ID{}, jsonrpc.NewError(jsonrpc.CodeInvalidRequest, "Content-Type must be application/json"))
			return
		}
	}
	buf := bufPool.Get().(*bytes.Buffer)
	buf.Reset()
	defer bufPool.Put(buf)
	if _, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, h.max)); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			endpoint.WriteError(w, http.StatusRequestEntityTooLarge, jsonrpc.ID{}, jsonrpc.NewError(jsonrpc.CodeInvalidRequest, "Request body too large"))
			return
		}
		endpoint.WriteError(w, http.StatusBadRequest, jsonrpc.ID{}, jsonrpc.NewError(jsonrpc.CodeParseError, "Parse error: could not read body"))
		return
	}
	req, jerr := jsonrpc.DecodeRequest(buf.Bytes())
	if jerr != nil {
		var id jsonrpc.ID
		if req != nil {
			id = req.ID
		}
		endpoint.WriteError(w, http.StatusBadRequest, id, jerr)
		return
	}
	if req.IsNotification() {
		// HTTP-S-04. No client notification is defined on HTTP in this
		// revision; accept and ignore.
		w.WriteHeader(http.StatusAccepted)
		return
	}
	in, jerr := h.check(r, req)
	if jerr != nil {
		endpoint.WriteError(w, endpoint.StatusFor(jerr.Code), req.ID, jerr)
		return
	}
	sw := &streamWriter{w: w, sseOK: acceptsEventStream(r.Header.Values("Accept"))}
	resp := h.srv.Serve(r.Context(), in, p.ID(), sw.notify)
	sw.finish(resp)
}

// hostOK runs the Host and Origin check (DNS rebinding, HTTP-S-02); on
// failure it has answered 403 with a JSON-RPC error.
func (h *Handler) hostOK(w http.ResponseWriter, r *http.Request) bool {
	if h.hosts.allowed(r, false) {
		return true
	}
	endpoint.WriteError(w, http.StatusForbidden, jsonrpc.ID{}, jsonrpc.NewError(jsonrpc.CodeInvalidRequest, "Forbidden: Host or Origin not allowed"))
	return false
}

// admit runs the endpoint's first checks on r: the Host and Origin check
// (403) and authentication (401 with the challenge, or the status an
// auth.Error names), in that order. Another handler that shares the
// endpoint (package legacy) runs them through endpoint.Of. On failure it
// has written the answer and ok is false.
func (h *Handler) admit(w http.ResponseWriter, r *http.Request) (p auth.Principal, ok bool) {
	if !h.hostOK(w, r) {
		return p, false
	}
	return h.authenticate(w, r)
}

// authenticate is admit's second check; on failure it has answered.
func (h *Handler) authenticate(w http.ResponseWriter, r *http.Request) (p auth.Principal, ok bool) {
	p, err := h.auth.Authenticate(r)
	if err != nil {
		h.refuseAuth(w, r, err)
		return p, false
	}
	return p, true
}

// check runs the header and metadata validation and returns the parsed request.
func (h *Handler) check(r *http.Request, req *jsonrpc.Request) (*transport.Incoming, *jsonrpc.Error) {
	version, ok := headerValue(r.Header, mcp.HeaderProtocolVersion)
	if !ok {
		return nil, mismatch("MCP-Protocol-Version header missing, repeated or not plain ASCII")
	}
	method, ok := headerValue(r.Header, mcp.HeaderMethod)
	if !ok {
		return nil, mismatch("Mcp-Method header missing, repeated or not plain ASCII")
	}
	var name string
	needsName := mcp.NamedMethod(req.Method) // the methods with params.name, params.uri or params.taskId
	if needsName {
		raw, ok := headerValue(r.Header, mcp.HeaderName)
		if !ok {
			return nil, mismatch("Mcp-Name header missing, repeated or not plain ASCII (encode other values as =?base64?…?=)")
		}
		if name, ok = mcp.DecodeHeaderValue(raw); !ok {
			return nil, mismatch("Mcp-Name has invalid base64")
		}
	}
	in, jerr := transport.Parse(req)
	if jerr != nil {
		return nil, jerr
	}
	if version != in.Meta.ProtocolVersion {
		return nil, mismatch("MCP-Protocol-Version header differs from _meta protocolVersion")
	}
	if method != req.Method {
		return nil, mismatch("Mcp-Method header differs from the body's method")
	}
	if needsName && name != in.Name {
		return nil, mismatch("Mcp-Name header differs from the body")
	}
	if jerr := h.srv.CheckVersion(version); jerr != nil {
		return nil, jerr
	}
	if !h.srv.Known(req.Method) {
		return nil, jsonrpc.NewError(jsonrpc.CodeMethodNotFound, "Method not found: %s", req.Method)
	}
	if req.Method == mcp.MethodToolsCall {
		if params, ok := h.srv.ToolHeaderParams(in.Name); ok && len(params) > 0 {
			if jerr := checkParamHeaders(r.Header, params, in.Arguments); jerr != nil {
				return nil, jerr
			}
		}
	}
	return in, nil
}

func mismatch(msg string) *jsonrpc.Error {
	return &jsonrpc.Error{Code: mcp.CodeHeaderMismatch, Message: "Header mismatch: " + msg}
}

// headerValue returns the single value of a header with optional white
// space trimmed; ok is false when it is absent or given more than once.
func headerValue(hd http.Header, name string) (string, bool) {
	vs := hd.Values(name)
	if len(vs) != 1 {
		return "", false
	}
	v := strings.Trim(vs[0], " \t")
	// Values are visible ASCII (and inner spaces or tabs): anything else
	// must come base64-encoded (streamable-http.mdx §Value Encoding).
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < 0x20 && c != '\t') || c > 0x7e {
			return "", false
		}
	}
	return v, true
}

func checkParamHeaders(hd http.Header, params []mcp.HeaderParam, args json.RawMessage) *jsonrpc.Error {
	var obj map[string]any
	if len(args) > 0 && string(args) != "null" {
		dec := json.NewDecoder(bytes.NewReader(args))
		dec.UseNumber()
		if err := dec.Decode(&obj); err != nil {
			return jsonrpc.NewError(jsonrpc.CodeInvalidParams, "Invalid params: arguments must be an object")
		}
	}
	for _, p := range params {
		val, present := p.Lookup(obj)
		name := mcp.HeaderParamPrefix + p.Header
		raw, has := headerValue(hd, name)
		if len(hd.Values(name)) > 1 {
			return mismatch(name + " given more than once")
		}
		if !present {
			if has {
				return mismatch(name + " given for an absent argument")
			}
			continue
		}
		if !has {
			return mismatch("missing " + name + " header")
		}
		dv, ok := mcp.DecodeHeaderValue(raw)
		if !ok {
			return mismatch(name + " has invalid base64")
		}
		if !paramMatches(p.Type, dv, val) {
			return mismatch(name + " differs from the body")
		}
	}
	return nil
}

func paramMatches(typ, header string, val any) bool {
	switch v := val.(type) {
	case string:
		return header == v
	case bool:
		return header == strconv.FormatBool(v)
	case json.Number:
		// HTTP-S-17: compare integers numerically (42 == 42.0).
		hf, err1 := strconv.ParseFloat(header, 64)
		bf, err2 := v.Float64()
		return err1 == nil && err2 == nil && hf == bf
	}
	return false
}

// hostSet is the set of host names accepted in Host and Origin (DNS
// rebinding protection, HTTP-S-02).
type hostSet struct {
	names map[string]bool
	any   bool
}

// newHostSet builds the set; nil means loopback names only, "*" any host.
func newHostSet(hosts []string) hostSet {
	if hosts == nil {
		hosts = []string{"localhost", "127.0.0.1", "::1"}
	}
	hs := hostSet{names: make(map[string]bool, len(hosts))}
	for _, host := range hosts {
		if host == "*" {
			hs.any = true
		}
		hs.names[strings.ToLower(strings.Trim(host, "[]"))] = true
	}
	return hs
}

// allowed checks Host and the single Origin header, if any; nullOrigin
// accepts "Origin: null" (browser form posts from a no-referrer page).
func (hs hostSet) allowed(r *http.Request, nullOrigin bool) bool {
	origins := r.Header.Values("Origin")
	if len(origins) > 1 {
		return false
	}
	if hs.any {
		return true
	}
	host := r.Host
	if hn, _, err := net.SplitHostPort(host); err == nil {
		host = hn
	}
	if !hs.names[strings.ToLower(strings.Trim(host, "[]"))] {
		return false
	}
	if len(origins) == 1 && !(nullOrigin && origins[0] == "null") {
		u, err := url.Parse(origins[0])
		if err != nil || u.Host == "" || !hs.names[strings.ToLower(u.Hostname())] {
			return false
		}
	}
	return true
}

// streamWriter answers with plain JSON unless the handler sends a
// notification first; then the response becomes an SSE stream that ends
// with the final response (HTTP-S-06, HTTP-S-08, HTTP-S-09).
type streamWriter struct {
	mu     sync.Mutex
	w      http.ResponseWriter
	sseOK  bool // the client's Accept allows text/event-stream
	sse    bool
	closed bool
}

// acceptsEventStream reports whether Accept values allow an SSE answer.
func acceptsEventStream(values []string) bool {
	for _, v := range values {
		for _, part := range strings.Split(v, ",") {
			mt, _, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err == nil && (mt == "text/event-stream" || mt == "text/*" || mt == "*/*") {
				return true
			}
		}
	}
	return false
}

// notify sends n as an SSE event; a nil n is a keep-alive, an SSE
// comment line, which clients and proxies read as traffic and ignore
// (mcpserver.Request.KeepAlive).
func (s *streamWriter) notify(n *jsonrpc.Notification) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("streamhttp: response already sent")
	}
	if !s.sseOK {
		return nil // a JSON-only client gets the final response alone
	}
	if !s.sse {
		s.sse = true
		hd := s.w.Header()
		hd.Set("Content-Type", "text/event-stream")
		hd.Set("Cache-Control", "no-cache")
		hd.Set("X-Accel-Buffering", "no")
		s.w.WriteHeader(http.StatusOK)
	}
	if n == nil {
		if _, err := io.WriteString(s.w, ": keep-alive\n\n"); err != nil {
			return err
		}
		if f, ok := s.w.(http.Flusher); ok {
			f.Flush()
		}
		return nil
	}
	b, err := json.Marshal(n)
	if err != nil {
		return err
	}
	return s.event(b)
}

func (s *streamWriter) event(b []byte) error {
	if _, err := io.WriteString(s.w, "event: message\ndata: "); err != nil {
		return err
	}
	if _, err := s.w.Write(append(b, '\n', '\n')); err != nil {
		return err
	}
	if f, ok := s.w.(http.Flusher); ok {
		f.Flush()
	}
	return nil
}

func (s *streamWriter) finish(resp *jsonrpc.Response) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if !s.sse {
		status := http.StatusOK
		if resp.Error != nil {
			status = endpoint.StatusFor(resp.Error.Code)
			if rd, ok := resp.Error.Data.(transport.RetryData); ok && rd.Retryable {
				status = http.StatusServiceUnavailable
				s.w.Header().Set("Retry-After", strconv.Itoa((rd.RetryAfterMs+999)/1000))
			}
		}
		endpoint.WriteJSON(s.w, status, resp)
		return
	}
	b, err := json.Marshal(resp)
	if err != nil {
		b, _ = json.Marshal(&jsonrpc.Response{ID: resp.ID, Error: jsonrpc.NewError(jsonrpc.CodeInternalError, "Internal error")})
	}
	_ = s.event(b)
}

// AllowHosts guards next, a handler beside the MCP endpoint (such as the
// URL-mode pages), with the same Host and Origin checks against DNS
// rebinding: a request naming another host gets 403. Unlike the MCP
// endpoint it lets "Origin: null" through, for browser form posts. hosts are as in
// Options.AllowedHosts (nil means loopback names only).
func AllowHosts(hosts []string, next http.Handler) http.Handler {
	hs := newHostSet(hosts)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// "Origin: null" passes here; the pages check Sec-Fetch-Site themselves.
		if !hs.allowed(r, true) {
			http.Error(w, "Forbidden: Host or Origin not allowed", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// endpointView is a Handler as another handler on its endpoint sees it
// (endpoint.Endpoint).
type endpointView Handler

func init() {
	endpoint.Register(func(h any) endpoint.Endpoint {
		sh, ok := h.(*Handler)
		if !ok || sh == nil {
			panic("streamhttp: endpoint.Of needs a non-nil *streamhttp.Handler")
		}
		return (*endpointView)(sh)
	})
}

func (v *endpointView) Admit(w http.ResponseWriter, r *http.Request) (auth.Principal, bool) {
	return (*Handler)(v).admit(w, r)
}

func (v *endpointView) MaxBodyBytes() int64 { return v.max }
