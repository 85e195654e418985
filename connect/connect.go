// Package connect is the server's own web page behind a URL-mode
// elicitation: the user signs in in a browser and types a secret (an API
// key), which is stored encrypted for that user; the MCP tool then sees the
// flow complete when the client retries (ELI-U-S-03).
//
// Security rules it enforces (URL-mode security, docs/requirements.md):
//   - The flow id in the URL is random and not a credential; the URL holds
//     no secret or personal data (SEC-U-S-01, SEC-U-S-02).
//   - Opening or completing a flow needs a browser login as the same user
//     the flow was made for, even if the URL was edited (SEC-U-S-06,
//     SEC-U-S-07); anyone else gets 403 and nothing is stored.
//   - The secret never goes back to the MCP client, and never appears in a
//     log line, URL, redirect or response body (SEC-U-S-08).
//   - The browser session cannot be planted by a neighbour: cookies are
//     __Host- and Secure wherever browsers allow it, and a request that
//     carries a page cookie twice (cookie tossing from another origin of
//     the same site) is refused and signed out (see CookieName, Handler).
//   - Redirect targets are local /ui/ and /connect/ paths (no open
//     redirects), and, for OAuth flows, the registered provider's
//     authorization endpoint once the same-user check has passed.
//
// Flows whose purpose is a registered OAuth provider (AddOAuthProvider,
// oauth.go) make the server an OAuth client of a third party: the user
// approves at the provider, and the tokens land in the vault.
//
// Mount the handler at "/ui/" (and at "/connect/" for OAuth providers):
// mux.Handle("/ui/", svc.Handler()).
//
// # Public surface
//
// New with Options (and a Store: any store.Store) gives a Service:
// Handler (the pages), StartFlow, Flow, FlowURL, Secret, HasSecret,
// OAuthToken, OAuthClient, AddOAuthProvider (OAuthProvider), Now. IdentityProvider and
// IdentityMismatch for the same-user check; LoadOrCreateMasterKey and
// MasterKeyFile for the vault key; the cookie, path, TTL and size
// constants a server's own routing and retention must agree with.
package connect

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/mcp-elicit/elicit/auth"
	"github.com/mcp-elicit/elicit/elicit"
	"github.com/mcp-elicit/elicit/internal/aead"
	"github.com/mcp-elicit/elicit/reqstate"
	"github.com/mcp-elicit/elicit/store"
)

// Defaults for Options.
const (
	// DefaultFlowTTL is the life of a flow and of its link: the life of
	// the requestState that carries it (reqstate.DefaultTTL), so that,
	// with the default sealer, a link never outlives the state it was
	// sent with. The rule for the three lifetimes is in Step's doc.
	DefaultFlowTTL     = reqstate.DefaultTTL
	DefaultSessionTTL  = 12 * time.Hour
	DefaultMaxAttempts = 20
)

// Cookie base names. Every cookie the pages set is HttpOnly, SameSite=Lax
// and Path=/. Every BaseURL is https or http on a loopback host
// (localhost, *.localhost, 127.0.0.0/8, [::1]), which browsers treat as a
// secure context, so each is also Secure and named HostPrefix + base name
// (CookieName): a browser takes it only from this very host, with Path=/ and no Domain: a sibling subdomain cannot
// set it at all, and no origin can set it under a narrower path.
//
// A request that carries one of these cookies more than once (any
// spelling: base name, HostPrefix, "__Secure-") is refused with a page
// that says why and signs the browser out (cookie tossing: another origin
// on the same site planting its own session, see Handler).
const (
	// SessionCookie carries the browser session id (a credential).
	SessionCookie = "elicit_session"
	// LoginCSRFCookie is the double-submit token of the login form, used
	// before there is a session to hold a CSRF token.
	LoginCSRFCookie = "elicit_csrf"
	// SignInCookie holds one sign-in in progress at the identity provider
	// (signin.go).
	SignInCookie = "elicit_signin"

	// HostPrefix is the cookie name prefix that binds a Secure cookie to
	// its host (RFC 6265bis §4.1.3.2).
	HostPrefix = "__Host-"
	// securePrefix is the weaker prefix; it is only looked for.
	securePrefix = "__Secure-"
)

// cookieBases are the cookies the pages set, by base name.
var cookieBases = []string{SessionCookie, LoginCSRFCookie, SignInCookie}

// MaxSecretLen is the largest accepted secret, in bytes after trimming
// surrounding white space.
const MaxSecretLen = 4096

// Store is what a Service needs of a store.Store: the out-of-band flows,
// the sealed secrets they collect and the browser sessions of the pages,
// and the ledger rows of OAuth attempts and of URL steps. The methods
// mean what they mean on store.Store. A Store that is also a
// store.FlowNotifier (store/postgres) tells the other instances when a
// flow ends, so a retry held on one of them is answered at once.
type Store interface {
	CreateFlow(ctx context.Context, f *store.Flow) error
	GetFlow(ctx context.Context, id string) (*store.Flow, error)
	PendingFlow(ctx context.Context, principal, purpose string, now time.Time) (*store.Flow, error)
	CompleteFlow(ctx context.Context, flowID, principal string, sealedSecret []byte, now time.Time) error
	CloseFlowAndRecord(ctx context.Context, flowID string, op *store.Operation) error
	GetSecret(ctx context.Context, principal, name string) ([]byte, error)
	HasSecret(ctx context.Context, principal, name string) (bool, error)
	ReplaceSecret(ctx context.Context, principal, name string, old, sealed []byte, now time.Time) error
	CreateSession(ctx context.Context, s *store.Session) error
	GetSession(ctx context.Context, id string) (*store.Session, error)
	DeleteSession(ctx context.Context, id string) error
	CompleteOperation(ctx context.Context, op *store.Operation, effect func(ctx context.Context, fx store.Effects) error) error
	GetOperation(ctx context.Context, id string) (*store.Operation, error)
	GetRecord(ctx context.Context, kind, id string) (*store.Record, error)
}

var _ Store = store.Store(nil) // every store.Store serves a Service

// Options configures a Service.
type Options struct {
	// Store persists flows, sealed secrets and sessions. Required; every
	// store.Store (store/sqlite, store/postgres) is one.
	Store Store
	// MasterKey is the 32-byte AES-256-GCM vault key (see
	// keyring.LoadOrCreateMasterKey in reqstate/keyring). Required; New
	// keeps no reference to it.
	MasterKey []byte
	// BaseURL is the public origin the pages are served at, e.g.
	// "http://127.0.0.1:3000": https, or http on a loopback host only
	// (elicit.CheckURL), no path (the handler answers and redirects at
	// /ui/...), no query. A trailing slash is dropped.
	// https, or http on a loopback host, makes cookies Secure and
	// __Host- prefixed (use https outside development, SEC-U-S-04); the
	// pages must then be opened at this host, not another name of it.
	BaseURL string
	// Logger receives audit lines (attribute audit=true) and errors.
	// nil means slog.Default().
	Logger *slog.Logger
	// FlowTTL is how long a flow, and so its link, can be completed;
	// <= 0 means DefaultFlowTTL. Keep it no longer than the requestState's
	// life (reqstate.Options.TTL), so that a link never outlives the state
	// it was sent with (the lifetime rule in Step's doc).
	FlowTTL time.Duration
	// SessionTTL is how long a browser login lasts; <= 0 means
	// DefaultSessionTTL.
	SessionTTL time.Duration
	// Now is the clock; nil means time.Now. Tests inject one.
	Now func() time.Time
	// MaxAttempts caps a user's OAuth attempts started within AttemptTTL
	// (each POST to /connect/<id> starts one and stores a row); past it,
	// the page answers 429 and stores nothing, so a user cannot grow the
	// store faster than MaxAttempts rows per AttemptTTL. <= 0 means
	// DefaultMaxAttempts.
	MaxAttempts int
	// SignIn, if set, signs browsers in through an OpenID Connect issuer
	// (jwtauth.OIDC) instead of the demo user-name form; see signin.go.
	SignIn IdentityProvider
	// InsecureDemoSignIn lets the demo sign-in (SignIn nil: the page asks
	// a user name and no password) serve a BaseURL whose host is not
	// loopback. Without it New refuses such a BaseURL: whoever reaches the
	// pages could sign in as any user and finish or refuse that user's
	// flows, which is the forwarded-link attack the same-user check exists
	// to stop (SEC-U-S-06). Set it only for a demo on a network you
	// control (elicitd --insecure-demo-auth).
	InsecureDemoSignIn bool
	// OnIdentityMismatch, when set, is called each time a page refuses a
	// browser signed in as another user than the flow's (SEC-U-S-06,
	// SEC-U-S-07), after the refusal is decided and before it is written:
	// the hook for audit records and metrics
	// (mcpserver.OutcomeIdentityMismatch). It runs on the request's
	// goroutine.
	OnIdentityMismatch func(ctx context.Context, m *IdentityMismatch)
	// OnCookieConflict, when set, is called each time a page refuses a
	// request that carries one of its cookies more than once (see
	// CookieName), after the refusal is decided and before it is written:
	// the hook for audit records and metrics. It runs on the request's
	// goroutine.
	OnCookieConflict func(ctx context.Context, c *CookieConflict)
}

// CookieConflict describes one page request refused because it carried a
// cookie more than once, as when another origin of the same site planted
// its own session under a narrower path. It holds no cookie value.
type CookieConflict struct {
	// Cookies are the base names that came more than once (SessionCookie,
	// LoginCSRFCookie, SignInCookie).
	Cookies []string
	// Path is the request's path as sent (percent-encoded, so ASCII),
	// without the query; cut at 256 bytes and marked "…".
	Path string
	// Method is the request's HTTP method.
	Method string
}

// IdentityMismatch describes one refused page request: who the flow was
// made for and who was signed in. It holds no secret: the flow id names
// the flow but is not a credential (SEC-U-S-01).
type IdentityMismatch struct {
	FlowID  string
	Purpose string
	// FlowPrincipal is the user the flow was made for.
	FlowPrincipal string
	// SessionPrincipal is the user signed in in the browser.
	SessionPrincipal string
	// Method is the page request's HTTP method (GET opens, POST submits).
	Method string
}

// Service runs URL-mode flows: it starts them, serves their pages, and
// holds the vault. It is safe for concurrent use.
type Service struct {
	store      Store
	aead       *aead.AEAD
	baseURL    string
	log        *slog.Logger
	flowTTL    time.Duration
	sessionTTL time.Duration
	maxAttempt int
	now        func() time.Time
	tmpl       *template.Template
	idp        IdentityProvider // nil: demo user-name sign-in
	mismatch   func(context.Context, *IdentityMismatch)
	conflict   func(context.Context, *CookieConflict)

	mu        sync.RWMutex
	providers map[string]*OAuthProvider // by purpose

	hub flowHub // WaitFlow's waiters in this process (flowstate.go)
}

// New checks opts and returns a Service. It fails on a nil Store, a
// MasterKey that is not 32 bytes, a BaseURL that is not an absolute http
// or https origin or is plain http on a host that is not loopback (the
// flows' links would fail elicit.CheckURL), or the demo sign-in (SignIn
// nil) at a BaseURL that is not loopback without InsecureDemoSignIn.
func New(opts Options) (*Service, error) {
	if opts.Store == nil {
		return nil, errors.New("connect: Options.Store is required")
	}
	aead, err := newAEAD(opts.MasterKey)
	if err != nil {
		return nil, err
	}
	base, err := parseBaseURL(opts.BaseURL)
	if err != nil {
		return nil, err
	}
	// Every flow's link is built on base: refuse now an origin whose links
	// a URL-mode elicitation may not carry (plain http off loopback), not
	// after a flow was made for one.
	if err := elicit.CheckURL(base + "/ui/set_api_key"); err != nil {
		return nil, fmt.Errorf("connect: BaseURL %q: the flows' links would be refused: %w", base, err)
	}
	if opts.SignIn == nil && !opts.InsecureDemoSignIn && !loopbackOrigin(base) {
		return nil, fmt.Errorf("connect: BaseURL %s is not loopback, and the demo sign-in (Options.SignIn nil) lets anyone sign in as any user: set SignIn to an identity provider, or InsecureDemoSignIn to accept that", base)
	}
	s := &Service{
		store:      opts.Store,
		aead:       aead,
		baseURL:    base,
		log:        opts.Logger,
		flowTTL:    opts.FlowTTL,
		sessionTTL: opts.SessionTTL,
		now:        opts.Now,
		tmpl:       pages,
		idp:        opts.SignIn,
		mismatch:   opts.OnIdentityMismatch,
		conflict:   opts.OnCookieConflict,
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.flowTTL <= 0 {
		s.flowTTL = DefaultFlowTTL
	}
	if s.maxAttempt = opts.MaxAttempts; s.maxAttempt <= 0 {
		s.maxAttempt = DefaultMaxAttempts
	}
	if s.sessionTTL <= 0 {
		s.sessionTTL = DefaultSessionTTL
	}
	if s.now == nil {
		s.now = time.Now
	}
	return s, nil
}

func parseBaseURL(raw string) (base string, err error) {
	raw = strings.TrimSuffix(raw, "/")
	u, err := url.Parse(raw)
	if err != nil || raw == "" {
		return "", fmt.Errorf("connect: invalid BaseURL %q", raw)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return "", fmt.Errorf("connect: BaseURL %q: scheme must be http or https", raw)
	case u.Host == "" || u.User != nil:
		return "", fmt.Errorf("connect: BaseURL %q: needs a host and no user info", raw)
	case u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.ForceQuery:
		return "", fmt.Errorf("connect: BaseURL %q: must be an origin without path, query or fragment", raw)
	}
	return u.Scheme + "://" + u.Host, nil
}

// loopbackOrigin reports whether the origin base (as parseBaseURL
// returns it) is on a loopback host.
func loopbackOrigin(base string) bool {
	u, err := url.Parse(base)
	return err == nil && loopbackHost(u.Hostname())
}

// loopbackHost reports whether browsers treat http://host as a secure
// context, and so accept Secure and __Host- cookies from it: localhost,
// a name under .localhost, or a loopback IP address.
func loopbackHost(host string) bool {
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// CookieName returns the name the cookie called base (SessionCookie,
// LoginCSRFCookie or SignInCookie) is set under: HostPrefix + base. Every
// BaseURL New accepts is https or http on a loopback host, where browsers
// accept Secure and __Host- cookies.
func (s *Service) CookieName(base string) string { return HostPrefix + base }

// Now returns the Service's clock reading, so callers judge expiry with the
// same clock the pages use.
func (s *Service) Now() time.Time { return s.now() }

// StartFlow creates a pending flow for principal to provide the secret
// named purpose, valid for FlowTTL, and logs audit event "flow_started".
// principal must be an auth.Principal ID that a browser can sign in as (a
// demo user name or issuer#subject, see auth.ParseID), so that the flow
// can be finished; purpose is 1–64 characters of [A-Za-z0-9._-].
func (s *Service) StartFlow(ctx context.Context, principal, purpose string) (*store.Flow, error) {
	if _, err := auth.ParseID(principal); err != nil {
		return nil, errors.New("connect: StartFlow: invalid principal")
	}
	if !validPurpose(purpose) {
		return nil, errors.New("connect: StartFlow: purpose must be 1-64 characters of [A-Za-z0-9._-]")
	}
	now := s.now()
	// Reuse the user's live pending flow for this purpose while it has at
	// least half its life left: repeated calls must not pile up rows, and
	// any of them is finished by the same page.
	if f, err := s.store.PendingFlow(ctx, principal, purpose, now); err == nil && f.ExpiresAt.Sub(now) >= s.flowTTL/2 {
		s.audit(ctx, slog.LevelInfo, "flow_reused",
			slog.String("flow_id", f.ID), slog.String("principal", principal), slog.String("purpose", purpose))
		return f, nil
	} else if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("connect: start flow: %w", err)
	}
	id, err := randomHex(16)
	if err != nil {
		return nil, err
	}
	f := &store.Flow{
		ID:        id,
		Principal: principal,
		Purpose:   purpose,
		Status:    store.FlowPending,
		CreatedAt: now,
		ExpiresAt: now.Add(s.flowTTL),
	}
	if err := s.store.CreateFlow(ctx, f); err != nil {
		return nil, fmt.Errorf("connect: start flow: %w", err)
	}
	s.audit(ctx, slog.LevelInfo, "flow_started",
		slog.String("flow_id", f.ID), slog.String("principal", principal), slog.String("purpose", purpose))
	return f, nil
}

// FlowURL returns the page URL for f: BaseURL + "/ui/set_api_key?flow=" +
// id, or BaseURL + "/connect/" + id when f's purpose is an OAuth provider
// (AddOAuthProvider). It carries only the flow id, never a secret
// (SEC-U-S-01), and never points at a third party: the same-user check
// happens on this server first (SEC-U-S-06). A nil f gives "".
func (s *Service) FlowURL(f *store.Flow) string {
	if f == nil {
		return ""
	}
	return s.baseURL + s.flowPath(f)
}

// flowPath is FlowURL without the origin.
func (s *Service) flowPath(f *store.Flow) string {
	if s.provider(f.Purpose) != nil {
		return connectPrefix + f.ID
	}
	return "/ui/set_api_key?flow=" + url.QueryEscape(f.ID)
}

// Flow returns the flow with the given id, whatever its status or expiry
// (compare ExpiresAt with Now). A malformed or unknown id gives
// store.ErrNotFound.
func (s *Service) Flow(ctx context.Context, id string) (*store.Flow, error) {
	if !validFlowID(id) {
		return nil, store.ErrNotFound
	}
	return s.store.GetFlow(ctx, id)
}

// HasSecret reports whether principal has a stored secret called name.
// It asks the store whether the row exists (one point query) and reads,
// opens or decodes nothing.
func (s *Service) HasSecret(ctx context.Context, principal, name string) (bool, error) {
	return s.store.HasSecret(ctx, principal, name)
}

// Secret returns principal's decrypted secret called name, for server-side
// use only: it must never be sent to the MCP client (SEC-U-S-08).
// store.ErrNotFound if there is none; an error if the blob does not
// decrypt (other master key, or tampering).
func (s *Service) Secret(ctx context.Context, principal, name string) ([]byte, error) {
	blob, err := s.store.GetSecret(ctx, principal, name)
	if err != nil {
		return nil, err
	}
	return s.open(principal, name, blob)
}

// audit logs a security-relevant event. Callers pass ids and names only,
// never secrets or session ids.
func (s *Service) audit(ctx context.Context, level slog.Level, event string, attrs ...slog.Attr) {
	s.log.LogAttrs(ctx, level, event, append([]slog.Attr{slog.Bool("audit", true), slog.String("event", event)}, attrs...)...)
}

func randomBytes(n int) ([]byte, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("connect: random: %w", err)
	}
	return b, nil
}

func randomHex(n int) (string, error) {
	b, err := randomBytes(n)
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// randomToken returns 256 random bits, base64url without padding (43
// characters): session ids and CSRF tokens.
func randomToken() (string, error) {
	b, err := randomBytes(32)
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// validToken reports whether v looks like randomToken output, so junk
// cookies are rejected before reaching the store.
func validToken(v string) bool {
	if len(v) != 43 {
		return false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// validFlowID reports whether id is 32 lowercase hex characters.
func validFlowID(id string) bool {
	if len(id) != 32 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// validPurpose keeps secret names short and free of the AAD separator.
func validPurpose(p string) bool {
	if len(p) == 0 || len(p) > 64 {
		return false
	}
	for i := 0; i < len(p); i++ {
		c := p[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// purposeHeadings names what a page collects, for known purposes.
var purposeHeadings = map[string]string{
	"billing_key":       "Connect your payment provider",
	"reporting_account": "Connect your reporting account",
}

func purposeHeading(purpose string) string {
	if h, ok := purposeHeadings[purpose]; ok {
		return h
	}
	return "Provide your API key (" + purpose + ")"
}
