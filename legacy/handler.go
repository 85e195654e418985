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
//     apart) before it asks the user again;
//   - a request that needs a capability the client did not declare gets the
//     same JSON-RPC error as a 2026 client (-32021, the same message and
//     data.requiredCapabilities), inside the session's response. -32021 lies
//     in JSON-RPC's range for implementation-defined server errors, so a
//     2025 client shows it as any error. -32042 (URLElicitationRequiredError)
//     is not used: it would hand a URL to a client that declared it cannot
//     open one, and the handler's gate refuses before any flow is made.
//
// Authentication, the Host/Origin check and the body limit are the
// streamhttp handler's (Admit, MaxBodyBytes), applied before go-sdk sees
// the request. The caller's subject reaches go-sdk as auth.TokenInfo.UserID,
// which also binds each session to the user who opened it (go-sdk answers
// 403 to another user). That handover goes through go-sdk's bearer-token
// middleware, so an authenticator that names a subject must read an
// "Authorization: Bearer" header (auth.DemoBearer does).
package legacy

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-elicit/elicit/auth"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpserver"
	"github.com/mcp-elicit/elicit/streamhttp"
)

// Versions are the protocol revisions served through the initialize
// handshake, newest first.
var Versions = []string{"2025-11-25", "2025-06-18", "2025-03-26"}

// Options configure a Handler. A nil *Options means the defaults.
type Options struct {
	// Logger receives bridge failures; nil means slog.Default().
	Logger *slog.Logger
	// SessionTimeout closes a session that received no request for this
	// long; 0 means 30 minutes.
	SessionTimeout time.Duration
	// MaxRounds caps the handler calls of one 2025 request (each input
	// round and each poll is one); 0 means 32, the mcpserver default. The
	// server's own cap (mcpserver.Options.MaxRounds) applies as well.
	MaxRounds int
	// URLPolls is how often, after an accepted URL-mode elicitation whose
	// page is not finished, the handler is called again with the same
	// accept before the user is asked again; 0 means 3, negative none.
	URLPolls int
	// URLPoll is the pause before each such poll; 0 means 1 second.
	URLPoll time.Duration
	// StatePoll is the pause before calling again after an input-required
	// result that asks nothing (the handler's "come back later"); 0 means
	// 500 milliseconds.
	StatePoll time.Duration
}

// Handler serves both eras on one endpoint. Build it with NewHandler.
type Handler struct {
	modern  *streamhttp.Handler
	sdk     http.Handler // go-sdk stateful handler, no user
	withSub http.Handler // the same behind the bearer middleware (TokenInfo.UserID = subject)
}

// NewHandler returns a Handler that sends 2026-07-28 requests to modern
// and serves 2025-era clients from srv's registered handlers. Register
// every tool, prompt, resource and the completion handler on srv before
// calling it: the 2025 side copies the lists once.
func NewHandler(srv *mcpserver.Server, modern *streamhttp.Handler, opts *Options) *Handler {
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
	b := &bridge{srv: srv, opts: o, log: o.Logger}
	s := b.newSDKServer()
	sh := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, &sdk.StreamableHTTPOptions{
		Logger:         o.Logger,
		SessionTimeout: o.SessionTimeout,
		// Host and Origin are checked by modern.Admit against the
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
	return &Handler{modern: modern, sdk: sh, withSub: sdkauth.RequireBearerToken(verify, nil)(sh)}
}

// ServeHTTP routes one request to the era it belongs to.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	pv := r.Header[streamhttp.HeaderProtocolVersion]
	if len(pv) == 1 && pv[0] == mcp.ProtocolVersion {
		h.modern.ServeHTTP(w, r) // the 2026 hot path: nothing read, nothing copied
		return
	}
	switch {
	case len(r.Header[sessionHeader]) > 0:
		h.serveLegacy(w, r)
	case r.Method == http.MethodPost && (len(pv) == 0 || len(pv) == 1 && isLegacyVersion(pv[0])):
		h.sniff(w, r)
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
// to a 2025 session and goes to the modern handler, which refuses it
// (-32020: the header is missing or differs from _meta). The body is read once within the endpoint's limit and handed
// on; a body over the limit goes on unread past the limit, so the modern
// handler answers 413 as usual.
func (h *Handler) sniff(w http.ResponseWriter, r *http.Request) {
	p, ok := h.modern.Admit(w, r)
	if !ok {
		return
	}
	limit := h.modern.MaxBodyBytes()
	body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil {
		http.Error(w, "Bad Request: could not read body", http.StatusBadRequest)
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
	if isInitialize(body) {
		h.toSDK(w, r, p)
		return
	}
	h.modern.ServeHTTP(w, r)
}

// isInitialize reports whether body is one JSON-RPC initialize request.
func isInitialize(body []byte) bool {
	var m struct {
		Method string `json:"method"`
	}
	return json.Unmarshal(body, &m) == nil && m.Method == "initialize"
}

// serveLegacy applies the endpoint's Host/Origin check and
// authentication, then hands the request to go-sdk.
func (h *Handler) serveLegacy(w http.ResponseWriter, r *http.Request) {
	p, ok := h.modern.Admit(w, r)
	if !ok {
		return
	}
	h.toSDK(w, r, p)
}

// subjectKey carries the subject Admit found to the bearer middleware's verifier.
type subjectKey struct{}

// toSDK hands an admitted request to go-sdk within the body limit, with
// the caller's principal id (auth.Principal.ID) as TokenInfo.UserID.
func (h *Handler) toSDK(w http.ResponseWriter, r *http.Request, p auth.Principal) {
	if r.Body != nil {
		r.Body = http.MaxBytesReader(w, r.Body, h.modern.MaxBodyBytes())
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

// principalOf returns the subject that serveLegacy handed to go-sdk.
func principalOf(extra *sdk.RequestExtra) string {
	if extra == nil || extra.TokenInfo == nil {
		return ""
	}
	return extra.TokenInfo.UserID
}
