// Package fakeoauth is a small third-party OAuth 2.1 authorization server
// with one protected API, for tests and for elicitd's demo: the "calendar
// provider" that the calendar example connects to in URL mode.
//
// It listens on its own loopback listener and keeps everything in memory.
// What it enforces is what a real provider would, so that a client that
// works against it is not accidentally sloppy:
//
//   - GET /authorize (RFC 6749 §4.1.1, OAuth 2.1 §4.1.1): a known client_id
//     and its exact registered redirect_uri (otherwise an error page and no
//     redirect, RFC 6749 §4.1.2.1); response_type=code; PKCE with
//     code_challenge_method=S256 (plain or missing is refused, RFC 7636).
//     The page asks the user to sign in (demo: a user name) and approve.
//   - POST /token (RFC 6749 §4.1.3, §6): client authentication by HTTP
//     Basic or client_secret_post; authorization codes are single-use,
//     short-lived and bound to client, redirect_uri, user and code
//     challenge; a replayed code also revokes what it issued (RFC 6749
//     §4.1.2). Refresh tokens rotate. Errors are RFC 6749 §5.2 JSON.
//   - GET /api/events with "Authorization: Bearer <access token>" (RFC
//     6750): the events of the token's user, and nobody else's.
//
// Every user gets distinct tokens and distinct events. Nothing here is
// fit for production: users sign in by name alone.
package fakeoauth

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/mcp-elicit/elicit/auth"
)

// Lifetimes used when Options leaves them zero.
const (
	DefaultCodeTTL    = time.Minute      // authorization codes
	DefaultTokenTTL   = time.Hour        // access tokens
	DefaultRequestTTL = 10 * time.Minute // an authorize page left open
)

// Scope is the only scope the provider knows: read the user's events.
const Scope = "events.read"

// Paths of the endpoints, relative to URL().
const (
	AuthorizePath = "/authorize"
	TokenPath     = "/token"
	EventsPath    = "/api/events"
)

// Client is a registered OAuth client.
type Client struct {
	// ID is the client_id, 1–64 characters of [A-Za-z0-9._-].
	ID string
	// Secret is the client_secret; required (confidential client).
	Secret string
	// RedirectURI is the one redirect URI the client may use; requests
	// must repeat it byte for byte.
	RedirectURI string
	// Name is shown on the approval page.
	Name string
}

// Event is one calendar entry, as GET /api/events returns it.
type Event struct {
	ID    string    `json:"id"`
	Title string    `json:"title"`
	Start time.Time `json:"start"`
}

// EventsResponse is the body of GET /api/events.
type EventsResponse struct {
	User   string  `json:"user"`
	Events []Event `json:"events"`
}

// Options configures a Server. The zero value is usable.
type Options struct {
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Logger receives one line per refused request; nil discards. Lines
	// never hold a code or token.
	Logger *slog.Logger
	// CodeTTL, TokenTTL: <= 0 means the defaults above.
	CodeTTL, TokenTTL time.Duration
}

type authRequest struct {
	client    *Client
	state     string
	challenge string
	scope     string
	expires   time.Time
}

type grant struct {
	client    string
	redirect  string
	user      string
	challenge string
	scope     string
	expires   time.Time
	used      bool
	issued    []string // tokens issued from this code, revoked on replay
}

type token struct {
	client  string
	user    string
	scope   string
	expires time.Time // zero for refresh tokens
	refresh bool
}

// Server is the fake provider. It is safe for concurrent use.
type Server struct {
	now      func() time.Time
	log      *slog.Logger
	codeTTL  time.Duration
	tokenTTL time.Duration

	mu         sync.Mutex
	clients    map[string]*Client
	requests   map[string]*authRequest // authorize page id -> request
	codes      map[string]*grant
	tokens     map[string]*token
	events     map[string][]Event
	authorizes int      // GET /authorize requests seen
	authHdrs   []string // every Authorization header value received
	issued     []string // every code and token handed out

	ln   net.Listener
	http *http.Server
	url  string
}

// New returns a Server that is not listening yet; use Handler, or Start.
func New(opts *Options) *Server {
	if opts == nil {
		opts = &Options{}
	}
	s := &Server{
		now: opts.Now, log: opts.Logger, codeTTL: opts.CodeTTL, tokenTTL: opts.TokenTTL,
		clients: map[string]*Client{}, requests: map[string]*authRequest{}, codes: map[string]*grant{},
		tokens: map[string]*token{}, events: map[string][]Event{},
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.codeTTL <= 0 {
		s.codeTTL = DefaultCodeTTL
	}
	if s.tokenTTL <= 0 {
		s.tokenTTL = DefaultTokenTTL
	}
	return s
}

// Start listens on addr, which must be a loopback address such as
// "127.0.0.1:0", and serves until Close. URL then gives the base URL.
func Start(addr string, opts *Options) (*Server, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("fakeoauth: %w", err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("fakeoauth: %s is not a loopback address: the fake provider lets anyone sign in as anyone", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("fakeoauth: %w", err)
	}
	s := New(opts)
	s.ln = ln
	s.url = "http://" + ln.Addr().String()
	s.http = &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.http.Serve(ln) }()
	return s, nil
}

// URL is the base URL ("http://127.0.0.1:port") of a started Server.
func (s *Server) URL() string { return s.url }

// AuthURL is the authorization endpoint an OAuth client is configured with.
func (s *Server) AuthURL() string { return s.url + AuthorizePath }

// TokenURL is the token endpoint an OAuth client is configured with.
func (s *Server) TokenURL() string { return s.url + TokenPath }

// EventsURL is the protected API: GET with a Bearer access token.
func (s *Server) EventsURL() string { return s.url + EventsPath }

// Close stops a started Server.
func (s *Server) Close() error {
	if s.http == nil {
		return nil
	}
	return s.http.Close()
}

// RegisterClient adds or replaces a client.
func (s *Server) RegisterClient(c Client) error {
	if !auth.ValidUserName(c.ID) || c.Secret == "" {
		return errors.New("fakeoauth: client needs an ID of [A-Za-z0-9._-] and a Secret")
	}
	if u, err := url.Parse(c.RedirectURI); err != nil || !u.IsAbs() || u.Fragment != "" {
		return errors.New("fakeoauth: client RedirectURI must be an absolute URL without fragment")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clients[c.ID] = &c
	return nil
}

// SetEvents replaces user's events.
func (s *Server) SetEvents(user string, events []Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events[user] = append([]Event(nil), events...)
}

// Revoke invalidates every access and refresh token of user, as a user
// who withdraws the application's access at the provider would.
func (s *Server) Revoke(user string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, t := range s.tokens {
		if t.user == user {
			delete(s.tokens, k)
		}
	}
}

// AuthorizeRequests counts the GET /authorize requests received, valid or
// not: a test can show that nobody was sent here.
func (s *Server) AuthorizeRequests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.authorizes
}

// AuthorizationHeaders returns every Authorization header value received
// on any endpoint, so a test can show that no MCP token ever arrived.
func (s *Server) AuthorizationHeaders() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.authHdrs...)
}

// Issued returns every authorization code, access token and refresh token
// handed out, so a test can search logs and transcripts for them.
func (s *Server) Issued() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.issued...)
}

// Handler serves the three endpoints.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+AuthorizePath, s.getAuthorize)
	mux.HandleFunc("POST "+AuthorizePath, s.postAuthorize)
	mux.HandleFunc("POST "+TokenPath, s.postToken)
	mux.HandleFunc("GET "+EventsPath, s.getEvents)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Referrer-Policy", "no-referrer")
		w.Header().Set("X-Frame-Options", "DENY")
		if v := r.Header.Values("Authorization"); len(v) > 0 {
			s.mu.Lock()
			s.authHdrs = append(s.authHdrs, v...)
			s.mu.Unlock()
		}
		mux.ServeHTTP(w, r)
	})
}

// defaultEvents are the events of a user nobody called SetEvents for:
// each names its user, so a leak across users is visible.
func defaultEvents(user string, now time.Time) []Event {
	day := now.UTC().Truncate(24 * time.Hour).Add(24 * time.Hour)
	return []Event{
		{ID: user + "-1", Title: "Stand-up (" + user + ")", Start: day.Add(9 * time.Hour)},
		{ID: user + "-2", Title: "Lunch with a friend of " + user, Start: day.Add(12*time.Hour + 30*time.Minute)},
	}
}

func randomString() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b)
}

// s256 is the PKCE S256 transform: BASE64URL(SHA256(verifier)).
func s256(verifier string) string {
	sum := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// validVerifier checks RFC 7636 §4.1: 43–128 characters of
// [A-Za-z0-9-._~].
func validVerifier(v string) bool {
	if len(v) < 43 || len(v) > 128 {
		return false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~') {
			return false
		}
	}
	return true
}

// validChallenge checks an S256 code_challenge: 43 base64url characters.
func validChallenge(c string) bool {
	if len(c) != 43 {
		return false
	}
	_, err := base64.RawURLEncoding.DecodeString(c)
	return err == nil
}

func equal(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }

var page = template.Must(template.New("page").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer"><title>Calendar provider</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:32rem;margin:2rem auto;padding:0 1rem}label{display:block;font-weight:600;margin-top:1rem}input{width:100%;padding:.5rem;box-sizing:border-box}button{margin:1rem .5rem 0 0;padding:.5rem 1rem}.alert{color:#9b0000;font-weight:600}</style>
</head><body>
<h1>Calendar provider (demo)</h1>
{{if .Error}}<p class="alert" role="alert" id="error">{{.Error}}</p>{{else}}
<p id="consent"><strong>{{.Client}}</strong> asks to read your calendar events ({{.Scope}}).</p>
<form method="post" action="/authorize" id="approve-form">
<label for="username">Sign in to the calendar provider: user name (demo, no password)</label>
<input type="text" id="username" name="username" required maxlength="64" pattern="[A-Za-z0-9._\-]{1,64}" autocomplete="username" autocapitalize="off" spellcheck="false" autofocus>
<input type="hidden" name="request" value="{{.Request}}">
<button type="submit" name="decision" value="approve" id="approve">Sign in and approve</button>
<button type="submit" name="decision" value="deny" id="deny">Deny</button>
</form>{{end}}
</body></html>`))

type pageData struct{ Error, Client, Scope, Request string }

func (s *Server) errorPage(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_ = page.Execute(w, pageData{Error: msg})
}

// redirectTo answers 303 to the client's redirect URI with params added
// to its query (RFC 6749 §4.1.2).
func redirectTo(w http.ResponseWriter, redirectURI string, params url.Values) {
	u, _ := url.Parse(redirectURI) // checked at registration
	q := u.Query()
	for k, v := range params {
		q[k] = v
	}
	u.RawQuery = q.Encode()
	w.Header().Set("Location", u.String())
	w.WriteHeader(http.StatusSeeOther)
}

func (s *Server) getAuthorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	s.mu.Lock()
	s.authorizes++
	c := s.clients[q.Get("client_id")]
	s.mu.Unlock()
	// RFC 6749 §4.1.2.1: with an unknown client or a redirect URI that is
	// not the registered one, tell the user and do not redirect.
	if c == nil {
		s.log.Warn("fakeoauth: authorize refused", "reason", "unknown client")
		s.errorPage(w, http.StatusBadRequest, "Unknown client.")
		return
	}
	if q.Get("redirect_uri") != c.RedirectURI {
		s.log.Warn("fakeoauth: authorize refused", "reason", "redirect_uri mismatch", "client", c.ID)
		s.errorPage(w, http.StatusBadRequest, "The redirect URI is not the one registered for this client.")
		return
	}
	fail := func(code, desc string) {
		s.log.Warn("fakeoauth: authorize refused", "reason", code, "client", c.ID)
		p := url.Values{"error": {code}, "error_description": {desc}}
		if st := q.Get("state"); st != "" {
			p.Set("state", st)
		}
		redirectTo(w, c.RedirectURI, p)
	}
	switch {
	case q.Get("response_type") != "code":
		fail("unsupported_response_type", "only response_type=code is supported")
	case q.Get("code_challenge") == "":
		fail("invalid_request", "PKCE is required: code_challenge is missing")
	case q.Get("code_challenge_method") != "S256":
		fail("invalid_request", "PKCE code_challenge_method must be S256")
	case !validChallenge(q.Get("code_challenge")):
		fail("invalid_request", "code_challenge is not a base64url SHA-256 value")
	case q.Get("scope") != "" && q.Get("scope") != Scope:
		fail("invalid_scope", "the only scope is "+Scope)
	default:
		id := randomString()
		s.mu.Lock()
		s.requests[id] = &authRequest{client: c, state: q.Get("state"), challenge: q.Get("code_challenge"),
			scope: Scope, expires: s.now().Add(DefaultRequestTTL)}
		s.mu.Unlock()
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		// The form is answered with a redirect to the client, which
		// browsers check against form-action too.
		ru, _ := url.Parse(c.RedirectURI)
		w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self' "+ru.Scheme+"://"+ru.Host+"; frame-ancestors 'none'")
		_ = page.Execute(w, pageData{Client: c.Name, Scope: Scope, Request: id})
	}
}

func (s *Server) postAuthorize(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if err := r.ParseForm(); err != nil {
		s.errorPage(w, http.StatusBadRequest, "The form could not be read.")
		return
	}
	s.mu.Lock()
	req := s.requests[r.PostForm.Get("request")]
	delete(s.requests, r.PostForm.Get("request")) // one answer per page
	s.mu.Unlock()
	if req == nil || !s.now().Before(req.expires) {
		s.errorPage(w, http.StatusBadRequest, "This sign-in page expired. Go back to the application and start again.")
		return
	}
	p := url.Values{}
	if req.state != "" {
		p.Set("state", req.state)
	}
	if r.PostForm.Get("decision") != "approve" {
		p.Set("error", "access_denied")
		p.Set("error_description", "the user denied the request")
		redirectTo(w, req.client.RedirectURI, p)
		return
	}
	user := strings.TrimSpace(r.PostForm.Get("username"))
	if !auth.ValidUserName(user) {
		s.errorPage(w, http.StatusBadRequest, "User names are 1 to 64 letters, digits, dots, underscores or hyphens. Go back to the application and start again.")
		return
	}
	code := randomString()
	s.mu.Lock()
	s.codes[code] = &grant{client: req.client.ID, redirect: req.client.RedirectURI, user: user,
		challenge: req.challenge, scope: req.scope, expires: s.now().Add(s.codeTTL)}
	s.issued = append(s.issued, code)
	s.mu.Unlock()
	p.Set("code", code)
	redirectTo(w, req.client.RedirectURI, p)
}

// tokenError writes an RFC 6749 §5.2 error response.
func (s *Server) tokenError(w http.ResponseWriter, status int, code, desc string) {
	s.log.Warn("fakeoauth: token request refused", "error", code, "description", desc)
	w.Header().Set("Content-Type", "application/json")
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Basic realm="fakeoauth"`)
	}
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": code, "error_description": desc})
}

// errTokenRequest is a refused token request: the HTTP status and the RFC
// 6749 §5.2 error code.
type errTokenRequest struct {
	status     int
	code, desc string
}

func (e *errTokenRequest) Error() string { return e.code + ": " + e.desc }

// clientCredentials reads the client's id and secret from HTTP Basic
// (each form-urlencoded first, RFC 6749 §2.3.1) or from the body; using
// both is refused.
func clientCredentials(r *http.Request) (id, secret string, err error) {
	basicID, basicSecret, hasBasic := r.BasicAuth()
	bodyID, bodySecret := r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	switch {
	case hasBasic && bodySecret != "":
		return "", "", &errTokenRequest{http.StatusBadRequest, "invalid_request", "use one client authentication method"}
	case hasBasic:
		id, err1 := url.QueryUnescape(basicID)
		secret, err2 := url.QueryUnescape(basicSecret)
		if err1 != nil || err2 != nil {
			return "", "", &errTokenRequest{http.StatusUnauthorized, "invalid_client", "malformed client credentials"}
		}
		if bodyID != "" && bodyID != id {
			return "", "", &errTokenRequest{http.StatusBadRequest, "invalid_request", "client_id differs from the authenticated client"}
		}
		return id, secret, nil
	case bodyID != "" && bodySecret != "":
		return bodyID, bodySecret, nil
	}
	return "", "", &errTokenRequest{http.StatusUnauthorized, "invalid_client", "client authentication is required"}
}

func (s *Server) postToken(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if err := r.ParseForm(); err != nil {
		s.tokenError(w, http.StatusBadRequest, "invalid_request", "the body is not a form")
		return
	}
	body, err := s.token(r)
	if err != nil {
		var te *errTokenRequest
		if !errors.As(err, &te) {
			te = &errTokenRequest{http.StatusInternalServerError, "server_error", "internal error"}
		}
		s.tokenError(w, te.status, te.code, te.desc)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Pragma", "no-cache")
	_ = json.NewEncoder(w).Encode(body)
}

// token decides a parsed token request (RFC 6749 §4.1.3, §6): the answer
// body, or an *errTokenRequest.
func (s *Server) token(r *http.Request) (map[string]any, error) {
	for k, v := range r.PostForm {
		if len(v) > 1 {
			return nil, &errTokenRequest{http.StatusBadRequest, "invalid_request", "parameter " + k + " repeated"}
		}
	}
	id, secret, err := clientCredentials(r)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.clients[id]
	if c == nil || !equal(c.Secret, secret) {
		return nil, &errTokenRequest{http.StatusUnauthorized, "invalid_client", "unknown client or wrong secret"}
	}
	now := s.now()
	switch r.PostForm.Get("grant_type") {
	case "authorization_code":
		return s.redeemCode(r.PostForm, c, now)
	case "refresh_token":
		rt := r.PostForm.Get("refresh_token")
		t := s.tokens[rt]
		if rt == "" || t == nil || !t.refresh || t.client != c.ID {
			return nil, &errTokenRequest{http.StatusBadRequest, "invalid_grant", "unknown refresh token"}
		}
		delete(s.tokens, rt) // rotation: a refresh token works once
		return s.issue(c.ID, t.user, t.scope, now), nil
	case "":
		return nil, &errTokenRequest{http.StatusBadRequest, "invalid_request", "grant_type is required"}
	default:
		return nil, &errTokenRequest{http.StatusBadRequest, "unsupported_grant_type", "supported: authorization_code, refresh_token"}
	}
}

// redeemCode answers the authorization_code grant (RFC 6749 §4.1.3 with
// PKCE, RFC 7636 §4.6); s.mu is held.
func (s *Server) redeemCode(form url.Values, c *Client, now time.Time) (map[string]any, error) {
	code := form.Get("code")
	g := s.codes[code]
	switch {
	case code == "" || g == nil:
		return nil, &errTokenRequest{http.StatusBadRequest, "invalid_grant", "unknown authorization code"}
	case g.used:
		// RFC 6749 §4.1.2: a code used twice revokes what it gave.
		for _, t := range g.issued {
			delete(s.tokens, t)
		}
		return nil, &errTokenRequest{http.StatusBadRequest, "invalid_grant", "authorization code already used"}
	case g.client != c.ID:
		return nil, &errTokenRequest{http.StatusBadRequest, "invalid_grant", "authorization code was issued to another client"}
	case !now.Before(g.expires):
		return nil, &errTokenRequest{http.StatusBadRequest, "invalid_grant", "authorization code expired"}
	case form.Get("redirect_uri") != g.redirect:
		return nil, &errTokenRequest{http.StatusBadRequest, "invalid_grant", "redirect_uri does not match the authorization request"}
	case form.Get("code_verifier") == "":
		return nil, &errTokenRequest{http.StatusBadRequest, "invalid_request", "code_verifier is required (PKCE)"}
	case !validVerifier(form.Get("code_verifier")) || !equal(s256(form.Get("code_verifier")), g.challenge):
		return nil, &errTokenRequest{http.StatusBadRequest, "invalid_grant", "code_verifier does not match the code_challenge"}
	}
	g.used = true
	body := s.issue(c.ID, g.user, g.scope, now)
	g.issued = append(g.issued, body["access_token"].(string), body["refresh_token"].(string))
	return body, nil
}

// issue mints an access and a refresh token; s.mu is held.
func (s *Server) issue(client, user, scope string, now time.Time) map[string]any {
	at, rt := randomString(), randomString()
	s.tokens[at] = &token{client: client, user: user, scope: scope, expires: now.Add(s.tokenTTL)}
	s.tokens[rt] = &token{client: client, user: user, scope: scope, refresh: true}
	s.issued = append(s.issued, at, rt)
	return map[string]any{"access_token": at, "token_type": "Bearer", "expires_in": int(s.tokenTTL.Seconds()),
		"refresh_token": rt, "scope": scope}
}

func (s *Server) getEvents(w http.ResponseWriter, r *http.Request) {
	refuse := func(desc string) {
		s.log.Warn("fakeoauth: API request refused", "reason", desc)
		w.Header().Set("WWW-Authenticate", `Bearer realm="fakeoauth", error="invalid_token", error_description="`+desc+`"`)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": "invalid_token", "error_description": desc})
	}
	hdr := r.Header.Values("Authorization")
	if len(hdr) != 1 || len(hdr[0]) < 7 || !strings.EqualFold(hdr[0][:7], "Bearer ") {
		refuse("a Bearer access token is required")
		return
	}
	s.mu.Lock()
	t := s.tokens[hdr[0][7:]]
	var events []Event
	if t != nil && !t.refresh && s.now().Before(t.expires) {
		var ok bool
		if events, ok = s.events[t.user]; !ok {
			events = defaultEvents(t.user, s.now())
		}
	}
	s.mu.Unlock()
	if t == nil || t.refresh || !s.now().Before(t.expires) {
		refuse("the access token is unknown or expired")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(EventsResponse{User: t.user, Events: append([]Event{}, events...)})
}
