// Package legacy serves MCP 2025-11-25 clients (the initialize handshake,
// sessions, server-initiated requests) from the same mcpserver.Server
// handlers that serve 2026-07-28 clients, on the same endpoint.
//
// Handler sits in front of a streamhttp.Handler. A request of a 2025-era
// client (an initialize request, with or without an older
// MCP-Protocol-Version header; any request, GET or DELETE with an
// Mcp-Session-Id header) goes to a stateful
// go-sdk v1.8.0 StreamableHTTPHandler whose tools, prompts, resources and
// completion run the registered mcpserver handlers; everything else goes to
// the 2026-07-28 streamhttp handler unchanged (a request carrying
// MCP-Protocol-Version: 2026-07-28 costs one header lookup).
//
// When a handler returns input-required, the bridge sends each input
// request to the client over the session (elicitation/create in form or
// URL mode, sampling/createMessage, roots/list), then calls the handler
// again with the answers and the sealed requestState, round after round
// (see Options.MaxRounds), exactly as a 2026 client's retries would: the
// state is sealed and opened by the same mcpserver code with the same
// Sealer and binding (principal, method, target, arguments). The state
// never leaves the server on this side, so a 2025 client can neither see
// nor tamper with it; requestState or inputResponses a 2025 client puts in
// its own params are ignored.
//
// Era differences, in short:
//
//   - capabilities come from the client's initialize request and are what
//     the handlers see as Request.Capabilities on every round;
//   - a URL-mode elicitation carries a fresh elicitationId, and once the
//     handler no longer asks for that key after an accept (the page was
//     finished), notifications/elicitation/complete is sent for it;
//   - after an accept whose page is not finished yet (the handler asks the
//     same URL again), the bridge first polls by calling the handler again
//     with the same accept a few times (Options.URLPolls, Options.URLPoll
//     apart) before it asks the user again — unless the handler held the
//     request itself while waiting for the page (it kept it alive, as
//     connect.Step does): then that one wait is the whole hold, and the
//     user is asked again as soon as it ends;
//   - a request that needs a capability the client did not declare gets the
//     same JSON-RPC error as a 2026 client (-32021, the same message and
//     data.requiredCapabilities), inside the session's response. -32021 lies
//     in JSON-RPC's range for implementation-defined server errors, so a
//     2025 client shows it as any error. -32042 (URLElicitationRequiredError)
//     is not used for it: it would hand a URL to a client that declared it
//     cannot open one, and the handler's gate refuses before any flow is made;
//   - -32042 is used when the user accepted a URL-mode elicitation again
//     and again without finishing the page until the round cap: the error
//     names the page, so the client can show it and call again;
//   - an answer that is no valid result (an unknown action) ends the call
//     with -32602 "Invalid elicitation answer", not the 2026 wording about
//     inputResponses; each request to the client must be answered within
//     Options.InputTimeout, else the call ends with -32603;
//   - initialize params of the wrong shape get HTTP 400 with -32602 naming
//     the field; a 2026 _meta protocolVersion on a session request is
//     ignored (the negotiated version rules); list results carry no ttlMs
//     or cacheScope (not in schema-2025-11-25).
//
// Sessions are the Handler's to end: DELETE, Options.SessionTimeout with
// no request in progress, the caps (Options.MaxSessions,
// Options.MaxSessionsPerPrincipal) and Close each cancel the session's
// bridge calls first, because go-sdk's close waits for in-flight handlers
// and a prompt the client never answers would hold it forever. A call cut
// off so is answered -32603 "Session closed: <reason>"; the close waits
// for that answer (at most two seconds) so go-sdk does not drop it.
//
// Authentication, the Host/Origin check and the body limit are the
// streamhttp handler's, applied before go-sdk sees the request. The
// caller's subject reaches go-sdk as auth.TokenInfo.UserID,
// which also binds each session to the user who opened it (go-sdk answers
// 403 to another user). That handover goes through go-sdk's bearer-token
// middleware, so an authenticator that names a subject must read an
// "Authorization: Bearer" header (auth.DemoBearer does).
//
// # Public surface
//
// NewHandler, Handler (an http.Handler with Close), Options and Versions.
package legacy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-elicit/elicit/auth"
	"github.com/mcp-elicit/elicit/internal/transport"
	"github.com/mcp-elicit/elicit/internal/transport/endpoint"
	"github.com/mcp-elicit/elicit/jsonrpc"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpserver"
	"github.com/mcp-elicit/elicit/reqstate"
	"github.com/mcp-elicit/elicit/streamhttp"
)

// Versions are the protocol revisions served through the initialize
// handshake, newest first.
var Versions = []string{"2025-11-25", "2025-06-18", "2025-03-26"}

// Options configure a Handler. A nil *Options means the defaults.
type Options struct {
	// Logger receives bridge failures; nil means slog.Default().
	Logger *slog.Logger
	// SessionTimeout closes a session that has had no request in progress
	// for this long (an open GET stream does not count); 0 means 30
	// minutes.
	SessionTimeout time.Duration
	// MaxSessions caps the open 2025 sessions of the Handler; 0 means
	// 10000. An initialize beyond it gets HTTP 503 with Retry-After and a
	// JSON-RPC error (-32603), unless the caller is at its own cap (below).
	MaxSessions int
	// MaxSessionsPerPrincipal caps the open sessions of one principal (all
	// unauthenticated callers are one principal); 0 means 16. At the cap, a
	// new initialize closes that principal's least recently used session
	// with no request in progress (a client that lost its session id should
	// not be locked out until the idle timeout); when all are busy it gets
	// HTTP 429 with Retry-After and a JSON-RPC error (-32603).
	MaxSessionsPerPrincipal int
	// InputTimeout bounds each request the bridge sends to the client
	// (elicitation/create, sampling/createMessage, roots/list): unanswered
	// after this long, the 2025 request fails with -32603 "The client did
	// not answer …". 0 means 10 minutes, reqstate.DefaultTTL, the time a
	// 2026 client gets to answer the same question.
	InputTimeout time.Duration
	// MaxRounds caps the handler calls of one 2025 request (each input
	// round and each poll is one); 0 means 32, the mcpserver default. The
	// server's own cap (mcpserver.Options.MaxRounds) applies as well.
	MaxRounds int
	// URLPolls is how often, after an accepted URL-mode elicitation whose
	// page is not finished, the handler is called again with the same
	// accept before the user is asked again; 0 means 3, negative none.
	// A handler that held the request while waiting for the page is not
	// polled (see Handler).
	URLPolls int
	// URLPoll is the pause before each such poll; 0 means 1 second.
	URLPoll time.Duration
	// StatePoll is the pause before calling again after an input-required
	// result that asks nothing (the handler's "come back later"); 0 means
	// 500 milliseconds.
	StatePoll time.Duration
}

// withDefaults returns the options with every zero field at its default.
func (opts *Options) withDefaults() Options {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.SessionTimeout <= 0 {
		o.SessionTimeout = 30 * time.Minute
	}
	if o.MaxRounds <= 0 {
		o.MaxRounds = 32
	}
	if o.URLPolls == 0 {
		o.URLPolls = 3
	}
	if o.URLPolls < 0 {
		o.URLPolls = 0
	}
	if o.URLPoll <= 0 {
		o.URLPoll = time.Second
	}
	if o.StatePoll <= 0 {
		o.StatePoll = 500 * time.Millisecond
	}
	if o.MaxSessions <= 0 {
		o.MaxSessions = 10000
	}
	if o.MaxSessionsPerPrincipal <= 0 {
		o.MaxSessionsPerPrincipal = 16
	}
	if o.InputTimeout <= 0 {
		o.InputTimeout = reqstate.DefaultTTL
	}
	return o
}

// Handler serves both eras on one endpoint. Build it with NewHandler; call
// Close when the server shuts down.
type Handler struct {
	modern  *streamhttp.Handler
	edge    endpoint.Endpoint // modern's admission and body limit
	reg     *registry
	sdk     http.Handler // go-sdk stateful handler, no user
	withSub http.Handler // the same behind the bearer middleware (TokenInfo.UserID = subject)
}

// NewHandler returns a Handler that sends 2026-07-28 requests to modern
// and serves 2025-era clients from srv's registered handlers. Register
// every tool, prompt, resource and the completion handler on srv before
// calling it: the 2025 side copies the lists once. It tells srv that the
// endpoint serves Versions too: they are listed in server/discover and in
// the data of -32022.
func NewHandler(srv *mcpserver.Server, modern *streamhttp.Handler, opts *Options) *Handler {
	o := opts.withDefaults()
	// Clients of either era learn, from discover or -32022, that the
	// endpoint serves these too.
	core := transport.Of(srv)
	core.AlsoServed(Versions...)
	reg := &registry{log: o.Logger, idle: o.SessionTimeout, max: o.MaxSessions, perUser: o.MaxSessionsPerPrincipal,
		byID: map[string]*session{}, byUser: map[string][]*session{}}
	b := &bridge{srv: srv, core: core, opts: o, log: o.Logger, reg: reg}
	s := b.newSDKServer()
	sh := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, &sdk.StreamableHTTPOptions{
		// go-sdk logs every session at INFO; here that is DEBUG.
		Logger: quieter(o.Logger),
		// No SessionTimeout: the registry closes idle sessions, after
		// cancelling their bridge calls (go-sdk's close would wait for them).
		// Host and Origin are checked by modern's admission against the
		// endpoint's allowed hosts, which may include a public name.
		DisableLocalhostProtection: true,
	})
	// The token was checked by Admit; the verifier only hands its subject
	// to go-sdk. The expiry satisfies the middleware: every request is
	// authenticated anew by Admit.
	verify := func(ctx context.Context, _ string, _ *http.Request) (*sdkauth.TokenInfo, error) {
		sub, _ := ctx.Value(subjectKey{}).(string)
		if sub == "" {
			return nil, sdkauth.ErrInvalidToken
		}
		return &sdkauth.TokenInfo{UserID: sub, Expiration: time.Now().Add(time.Hour)}, nil
	}
	return &Handler{modern: modern, edge: endpoint.Of(modern), reg: reg, sdk: sh, withSub: sdkauth.RequireBearerToken(verify, nil)(sh)}
}

// Close ends every 2025 session (their pending prompts and calls are
// cancelled, their GET streams end) and refuses new ones (HTTP 503); it
// returns when all are closed. Call it when the server begins shutting
// down (http.Server.RegisterOnShutdown), so open streams do not hold the
// shutdown until its timeout. The 2026 side is stateless and unaffected.
func (h *Handler) Close() error {
	h.reg.closeAll()
	return nil
}

// ServeHTTP routes one request to the era it belongs to.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	pv := r.Header[mcp.HeaderProtocolVersion]
	if len(pv) == 1 && pv[0] == mcp.ProtocolVersion {
		h.modern.ServeHTTP(w, r) // the 2026 hot path: nothing read, nothing copied
		return
	}
	switch {
	case len(r.Header[sessionHeader]) > 0:
		h.serveLegacy(w, r)
	case r.Method == http.MethodPost && (len(pv) == 0 || len(pv) == 1 && isLegacyVersion(pv[0])):
		h.sniff(w, r, pv)
	default:
		h.modern.ServeHTTP(w, r)
	}
}

// sessionHeader is the canonical form of Mcp-Session-Id.
const sessionHeader = "Mcp-Session-Id"

func isLegacyVersion(v string) bool {
	v = strings.TrimSpace(v)
	for _, l := range Versions {
		if v == l {
			return true
		}
	}
	return false
}

// sniff serves a POST without a session that carries no
// MCP-Protocol-Version or a 2025-era one: an initialize request (a 2025
// client's first, sent before a version is negotiated, or with the version
// header already set) goes to the legacy side; anything else cannot belong
// to a 2025 session: without a 2026 _meta version (and, with no version
// header, without Mcp-Method) it is a 2025 client that skipped its session
// (400, -32020, noSessionMessage), else the modern handler refuses it
// (-32020: the header is missing or differs from _meta). The body is read once within the endpoint's limit and handed
// on; a body over the limit goes on unread past the limit, so the modern
// handler answers 413 as usual.
func (h *Handler) sniff(w http.ResponseWriter, r *http.Request, pv []string) {
	p, ok := h.edge.Admit(w, r)
	if !ok {
		return
	}
	limit := h.edge.MaxBodyBytes()
	body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil {
		endpoint.WriteError(w, http.StatusBadRequest, jsonrpc.ID{}, jsonrpc.NewError(jsonrpc.CodeParseError, "Parse error: could not read body"))
		return
	}
	if int64(len(body)) > limit {
		r.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(body), r.Body), r.Body}
		h.modern.ServeHTTP(w, r)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	m, ok := peek(body)
	switch {
	case ok && m.Method == "initialize":
		h.initialize(w, r, p, body)
	case ok && m.Params.Meta[mcp.MetaProtocolVersion] == nil &&
		(len(pv) == 1 || len(r.Header[mcp.HeaderMethod]) == 0):
		// A 2025 client's request without its session (a 2026 request
		// carries the version in _meta and, without a version header,
		// Mcp-Method): say what is missing rather than which 2026 header.
		endpoint.WriteError(w, http.StatusBadRequest, m.ID, jsonrpc.NewError(mcp.CodeHeaderMismatch, noSessionMessage))
	default:
		h.modern.ServeHTTP(w, r)
	}
}

// noSessionMessage answers a 2025-era request without Mcp-Session-Id
// that is not initialize. HTTP 400, as the 2025-11-25 transport answers a
// missing session id; the code stays the 2026 side's -32020 (a header is
// missing) so both eras' clients see one code.
const noSessionMessage = "no session: a 2025-11-25 client sends initialize first and then Mcp-Session-Id"

// peeked is what sniff needs from a request body.
type peeked struct {
	ID     jsonrpc.ID `json:"id"`
	Method string     `json:"method"`
	Params struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	} `json:"params"`
}

// peek decodes body as one JSON-RPC message; ok is false when it is not
// one (a batch, bad JSON, params that are not an object), which the
// modern handler then answers.
func peek(body []byte) (peeked, bool) {
	var m peeked
	err := json.Unmarshal(body, &m)
	return m, err == nil
}

// retryAfter is the Retry-After of a refused initialize: sessions end
// when their requests do, so a short wait may be enough.
const retryAfter = 10 * time.Second

// initialize opens a session: its params are checked (go-sdk would answer
// a misfit with code 0 and Go type names), the caps applied, and the
// session registered so the Handler can close it.
func (h *Handler) initialize(w http.ResponseWriter, r *http.Request, p auth.Principal, body []byte) {
	id, jerr := checkInitialize(body)
	if jerr != nil {
		endpoint.WriteError(w, http.StatusBadRequest, id, jerr)
		return
	}
	s, refused := h.reg.open(p.ID())
	if refused != nil {
		refuse(w, id, refused, retryAfter)
		return
	}
	defer h.reg.started(s)
	h.toSDK(w, r.WithContext(context.WithValue(r.Context(), sessionKey{}, s)), p)
}

// serveLegacy applies the endpoint's Host/Origin check and
// authentication, then hands the request to go-sdk.
func (h *Handler) serveLegacy(w http.ResponseWriter, r *http.Request) {
	p, ok := h.edge.Admit(w, r)
	if !ok {
		return
	}
	// Unknown, or another principal's: go-sdk answers 404 or 403.
	s := h.reg.lookup(r.Header.Get(sessionHeader), p.ID())
	switch {
	case s == nil:
	case r.Method == http.MethodDelete:
		// The session's calls are cancelled before go-sdk's close, which
		// waits for them.
		h.reg.end(s, errDeleted)
		w.WriteHeader(http.StatusNoContent)
		return
	case r.Method == http.MethodPost:
		body, ok := h.readBody(w, r)
		if !ok {
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(stripModernMeta(body)))
		h.reg.begin(s)
		defer h.reg.done(s)
	}
	h.toSDK(w, r, p)
}

// readBody reads a session POST's body within the endpoint's limit,
// answering 413 (or 400) as a JSON-RPC error, as the 2026 handler does.
func (h *Handler) readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.edge.MaxBodyBytes()))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			endpoint.WriteError(w, http.StatusRequestEntityTooLarge, jsonrpc.ID{}, jsonrpc.NewError(jsonrpc.CodeInvalidRequest, "Request body too large"))
		} else {
			endpoint.WriteError(w, http.StatusBadRequest, jsonrpc.ID{}, jsonrpc.NewError(jsonrpc.CodeParseError, "Parse error: could not read body"))
		}
		return nil, false
	}
	return body, true
}

// subjectKey carries the subject Admit found to the bearer middleware's verifier.
type subjectKey struct{}

// toSDK hands an admitted request to go-sdk within the body limit, with
// the caller's principal id (auth.Principal.ID) as TokenInfo.UserID.
func (h *Handler) toSDK(w http.ResponseWriter, r *http.Request, p auth.Principal) {
	if r.Body != nil {
		r.Body = http.MaxBytesReader(w, r.Body, h.edge.MaxBodyBytes())
	}
	// The principal id (issuer#subject for a token), not the bare subject:
	// state, flows and the vault are bound to it on both eras.
	id := p.ID()
	if id == "" {
		h.sdk.ServeHTTP(w, r)
		return
	}
	h.withSub.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), subjectKey{}, id)))
}

// principalOf returns the subject that serveLegacy handed to go-sdk, else
// the principal of the session the handler runs in (a stream's, ServeStream).
func principalOf(ctx context.Context, extra *sdk.RequestExtra) string {
	if extra != nil && extra.TokenInfo != nil {
		return extra.TokenInfo.UserID
	}
	if s := sessionOf(ctx); s != nil {
		return s.principal
	}
	return ""
}
