// Package oauth is the client side of MCP authorization
// (basic/authorization.mdx, revision 2026-07-28) for package mcpclient:
// an Authorizer that answers a server's 401 and 403 insufficient_scope
// with OAuth 2.1, so that a host or a program reaches protected MCP
// servers with a few lines:
//
//	lb := &oauth.Loopback{Open: showAndOpen} // the user's browser, a loopback redirect
//	defer lb.Close()
//	a, err := oauth.New(endpoint, &oauth.Config{Browser: lb, Store: store})
//	c := mcpclient.New(endpoint, &mcpclient.Options{Authorizer: a})
//
// On a refusal it
//   - finds the protected resource metadata (RFC 9728): the challenge's
//     resource_metadata, else the well-known URI with the endpoint's path,
//     then at the root; its resource must cover the endpoint;
//   - finds the authorization server metadata of its first authorization
//     server (RFC 8414 and OpenID Connect discovery, in the spec's order);
//     its issuer must be identical to the one asked for, its endpoints
//     https (http on loopback only), PKCE S256 supported;
//   - gets a client id in the spec's order of preference: pre-registered
//     credentials (Config.ClientID), a client ID metadata document
//     (Config.ClientMetadataURL) when the server supports them, dynamic
//     client registration (RFC 7591) otherwise; a registration belongs to
//     its issuer and is never shown to another;
//   - with the authorization code grant: PKCE S256, state, the resource
//     parameter (RFC 8707) in the authorization and token requests, the
//     scopes of the challenge, else those of the metadata (plus
//     offline_access when asked for and offered), the iss of the response
//     checked by simple string comparison (RFC 9207) before the code goes
//     anywhere; with the client credentials grant, the token request only;
//   - checks the token response: a Bearer token, and when the access token
//     is a JWT, an aud that names the resource;
//   - on 403 insufficient_scope asks again for the union of the scopes
//     requested so far and the challenged ones (step-up); on 401 with a
//     refresh token, refreshes first; when the metadata names another
//     authorization server, starts over there (migration).
//
// Records (the registration and the token, per endpoint) live in a Store:
// MemoryStore by default, FileStore for a host (0600 files in the user's
// configuration directory). Nothing is stored until a token passed every
// check. Tokens, codes, verifiers and client secrets are never put in an
// error, a log line or a URL shown to the user (the authorization URL
// carries only the PKCE challenge and the state).
package oauth

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/mcp-elicit/elicit/mcpclient"
)

// Grant is the OAuth grant an Authorizer uses.
type Grant string

// Grants.
const (
	// AuthorizationCode is the authorization code grant with PKCE: a user
	// signs in through a Browser. The default.
	AuthorizationCode Grant = "authorization_code"
	// ClientCredentials is the client credentials grant: the client acts
	// on its own behalf with Config.ClientID and ClientSecret, no user.
	ClientCredentials Grant = "client_credentials"
)

// Browser is the front channel of the authorization code grant: it gives
// the redirect URI, takes the user to the authorization URL and brings
// back the authorization response. Loopback is the one for a host on the
// user's computer.
type Browser interface {
	// RedirectURL returns the redirect URI to register and send, e.g.
	// "http://127.0.0.1:53682/callback". It may start listening.
	RedirectURL(ctx context.Context) (string, error)
	// Authorize shows the user req (asking consent before opening
	// anything) and returns the query parameters of the authorization
	// response that reached the redirect URI: code, state, iss, or error.
	// The Authorizer checks them.
	Authorize(ctx context.Context, req *AuthorizationRequest) (url.Values, error)
}

// AuthorizationRequest is one authorization request, for a Browser to
// show: URL in full, and what it is for.
type AuthorizationRequest struct {
	// URL is the authorization URL: the authorization endpoint with
	// response_type, client_id, redirect_uri, scope, state, the PKCE
	// challenge and resource. It holds no secret.
	URL string
	// Endpoint is the MCP endpoint that asked for authorization.
	Endpoint string
	// Resource is the resource the token is for (RFC 8707).
	Resource string
	// Issuer is the authorization server's issuer identifier.
	Issuer string
	// Scopes are the scopes asked for; empty when the request has none.
	Scopes []string
	// RedirectURL is the redirect URI of the request.
	RedirectURL string
	// State is the request's state; the response must carry it back.
	State string
}

// Config configures an Authorizer. Zero fields mean the defaults.
type Config struct {
	// Grant is AuthorizationCode (default) or ClientCredentials.
	Grant Grant
	// Browser takes the user through the authorization code grant;
	// required for it.
	Browser Browser
	// ClientID and ClientSecret are pre-registered credentials, first in
	// the order of preference; ClientSecret "" is a public client. They
	// are required for ClientCredentials.
	ClientID, ClientSecret string
	// ClientIssuer is the authorization server the pre-registered
	// credentials belong to; when the server names another, the
	// Authorizer fails rather than show them there. "" means any.
	ClientIssuer string
	// ClientMetadataURL is the https URL of this client's client ID
	// metadata document, used as client_id where the authorization server
	// supports client ID metadata documents.
	ClientMetadataURL string
	// ClientName is the client_name of a dynamic registration; ""
	// means "MCP client".
	ClientName string
	// NoDynamicRegistration forbids dynamic client registration.
	NoDynamicRegistration bool
	// RequestRefreshToken asks for a refresh token: offline_access is
	// added to the scopes when the authorization server lists it, and a
	// dynamic registration names the refresh_token grant.
	RequestRefreshToken bool
	// Store keeps records across runs; nil means a new MemoryStore.
	Store Store
	// HTTPClient sends the metadata, registration and token requests; nil
	// means a client with a 30-second timeout. Its CheckRedirect is
	// replaced: redirects must stay https (or loopback), and token and
	// registration requests are never redirected.
	HTTPClient *http.Client
	// Logger gets notes (a refresh that failed, a record dropped after a
	// migration); never a secret. Nil means slog.Default().
	Logger *slog.Logger
	// Now is the clock for token expiry; nil means time.Now.
	Now func() time.Time
}

// Authorizer implements mcpclient.Authorizer for one MCP endpoint with
// OAuth 2.1. It is safe for concurrent use; concurrent refusals lead to
// one sign-in.
type Authorizer struct {
	endpoint string
	cfg      Config
	get      *http.Client // metadata: redirects within policy
	post     *http.Client // token and registration: no redirects

	mu     sync.Mutex
	rec    *Record
	loaded bool
}

var _ mcpclient.Authorizer = (*Authorizer)(nil)

// New returns the Authorizer for the MCP endpoint URL. It does no I/O. It
// fails on an endpoint that is not an absolute http(s) URL, a
// ClientCredentials grant without ClientID and ClientSecret, or a
// ClientMetadataURL that is not an https URL with a path.
func New(endpoint string, cfg *Config) (*Authorizer, error) {
	ep, err := CanonicalEndpoint(endpoint)
	if err != nil {
		return nil, fmt.Errorf("oauth: endpoint: %w", err)
	}
	a := &Authorizer{endpoint: ep}
	if cfg != nil {
		a.cfg = *cfg
	}
	c := &a.cfg
	if c.Grant == "" {
		c.Grant = AuthorizationCode
	}
	switch c.Grant {
	case AuthorizationCode:
	case ClientCredentials:
		if c.ClientID == "" || c.ClientSecret == "" {
			return nil, errors.New("oauth: the client credentials grant needs ClientID and ClientSecret")
		}
	default:
		return nil, fmt.Errorf("oauth: unknown grant %q", c.Grant)
	}
	if c.ClientMetadataURL != "" {
		u, err := url.Parse(c.ClientMetadataURL)
		if err != nil || u.Scheme != "https" || u.Host == "" || strings.Trim(u.Path, "/") == "" || u.Fragment != "" {
			return nil, fmt.Errorf("oauth: ClientMetadataURL %q is not an https URL with a path", c.ClientMetadataURL)
		}
	}
	if c.ClientName == "" {
		c.ClientName = "MCP client"
	}
	if c.Store == nil {
		c.Store = &MemoryStore{}
	}
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{Timeout: 30 * time.Second}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	a.get = policyClient(c.HTTPClient, true)
	a.post = policyClient(c.HTTPClient, false)
	return a, nil
}

// Endpoint returns the canonical endpoint URL, the store key.
func (a *Authorizer) Endpoint() string { return a.endpoint }

// load returns the record, reading the store once.
func (a *Authorizer) load(ctx context.Context) (*Record, error) {
	if a.loaded {
		return a.rec, nil
	}
	r, err := a.cfg.Store.Load(ctx, a.endpoint)
	if err != nil {
		return nil, err
	}
	a.rec, a.loaded = r, true
	return r, nil
}

// save stores r and makes it current. A pre-registered client's secret
// is not stored: it stays in the configuration.
func (a *Authorizer) save(ctx context.Context, r *Record) error {
	if r.Client.Kind == ClientPreRegistered && r.Client.Secret != "" {
		c := *r
		c.Client.Secret = ""
		r = &c
	}
	if err := a.cfg.Store.Save(ctx, a.endpoint, r); err != nil {
		return err
	}
	a.rec, a.loaded = r, true
	return nil
}

// fresh reports whether t is usable now: an access token not within 30
// seconds of its expiry.
func (a *Authorizer) fresh(t *oauth2.Token) bool {
	return t != nil && t.AccessToken != "" && (t.Expiry.IsZero() || a.cfg.Now().Add(30*time.Second).Before(t.Expiry))
}

// Token returns the stored access token, refreshed first when it has
// expired and a refresh token is there; "" when there is none (the
// server's 401 then leads to Authorize). A failed refresh drops the token
// (the registration stays) and gives "".
func (a *Authorizer) Token(ctx context.Context) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	r, err := a.load(ctx)
	if err != nil || r == nil || r.Token == nil {
		return "", err
	}
	if a.fresh(r.Token) {
		return r.Token.AccessToken, nil
	}
	if r.Token.RefreshToken == "" || r.Grant != AuthorizationCode {
		return "", nil
	}
	if err := a.refresh(ctx, r); err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		a.cfg.Logger.Info("oauth: the token could not be refreshed; signing in again when the server asks", "endpoint", a.endpoint, "reason", err.Error())
		return "", a.dropToken(ctx, r)
	}
	return a.rec.Token.AccessToken, nil
}

// dropToken forgets r's token and keeps the rest.
func (a *Authorizer) dropToken(ctx context.Context, r *Record) error {
	n := *r
	n.Token = nil
	return a.save(ctx, &n)
}

// Authorize answers a refusal (mcpclient.Authorizer): discovery, then a
// refresh (401, same issuer, a refresh token), else a new grant with the
// scopes the challenge and the record call for. It returns nil at once
// when another request already replaced the refused token.
func (a *Authorizer) Authorize(ctx context.Context, ch *mcpclient.Challenge) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	r, err := a.load(ctx)
	if err != nil {
		return err
	}
	c := parseChallenge(ch.WWWAuthenticate)
	stepUp := ch.InsufficientScope()
	if r != nil && a.fresh(r.Token) && r.Token.AccessToken != ch.Token &&
		(!stepUp || containsAll(r.Scopes, c.scope)) {
		return nil // signed in meanwhile: retry with the new token
	}

	prm, _, err := protectedResource(ctx, a.get, a.endpoint, c.resourceMetadata)
	if err != nil {
		return err
	}
	issuer := prm.AuthorizationServers[0]
	asm, err := authorizationServer(ctx, a.get, issuer, a.cfg.Grant == AuthorizationCode)
	if err != nil {
		return err
	}
	if r != nil && (r.Issuer != issuer || r.Grant != a.cfg.Grant) {
		// Another authorization server now (or another grant): nothing of
		// the old record may be shown to it (client-registration.mdx
		// §Authorization Server Binding).
		a.cfg.Logger.Info("oauth: the server names another authorization server; registering there anew", "endpoint", a.endpoint, "was", r.Issuer, "now", issuer)
		r = nil
	}
	if done, err := a.tryRefresh(ctx, r, asm, stepUp); done || err != nil {
		return err
	}
	n := &Record{Endpoint: a.endpoint, Resource: prm.Resource, Issuer: issuer, TokenEndpoint: asm.TokenEndpoint,
		Grant: a.cfg.Grant, Scopes: a.scopes(r, c.scope, prm.ScopesSupported, asm)}
	return a.grant(ctx, r, asm, n)
}

// tryRefresh refreshes r's token when that can answer the refusal: a 401
// (not a step-up) with a refresh token of the authorization code grant.
// done is set when it worked; a failed refresh is logged and a new grant
// follows, unless ctx ended.
func (a *Authorizer) tryRefresh(ctx context.Context, r *Record, asm *oauthex.AuthServerMeta, stepUp bool) (done bool, err error) {
	if r == nil || stepUp || r.Token == nil || r.Token.RefreshToken == "" || r.Grant != AuthorizationCode {
		return false, nil
	}
	r.TokenEndpoint = asm.TokenEndpoint
	err = a.refresh(ctx, r)
	switch {
	case err == nil:
		return true, nil
	case ctx.Err() != nil:
		return true, ctx.Err()
	}
	a.cfg.Logger.Info("oauth: the token could not be refreshed; signing in again", "endpoint", a.endpoint, "reason", err.Error())
	return false, nil
}

// scopes are those a new grant asks: the challenge's, else what the
// resource supports; with the record's kept; offline_access only when a
// refresh token is wanted and the authorization server offers it.
func (a *Authorizer) scopes(r *Record, challenged, supported []string, asm *oauthex.AuthServerMeta) []string {
	scopes := challenged
	if len(scopes) == 0 {
		scopes = supported
	}
	if r != nil {
		scopes = union(r.Scopes, scopes)
	}
	scopes = slices.DeleteFunc(slices.Clone(scopes), func(s string) bool { return s == "offline_access" })
	if a.cfg.RequestRefreshToken && a.cfg.Grant == AuthorizationCode && slices.Contains(asm.ScopesSupported, "offline_access") {
		scopes = append(scopes, "offline_access")
	}
	return scopes
}

// grant gets n a new token by the configured grant (r, the old record,
// lends its registered client to the authorization code grant), checks
// it and saves n.
func (a *Authorizer) grant(ctx context.Context, r *Record, asm *oauthex.AuthServerMeta, n *Record) error {
	var prev *Client
	if r != nil {
		prev = &r.Client
	}
	var tok *oauth2.Token
	var err error
	switch a.cfg.Grant {
	case ClientCredentials:
		n.Client = Client{ID: a.cfg.ClientID, Secret: a.cfg.ClientSecret, Kind: ClientPreRegistered,
			AuthMethod: secretMethod(asm.TokenEndpointAuthMethodsSupported)}
		if err := a.checkClientIssuer(n.Issuer); err != nil {
			return err
		}
		tok, err = a.clientCredentials(ctx, n)
	default:
		tok, err = a.authorizationCode(ctx, asm, n, prev)
	}
	if err != nil {
		return err
	}
	if err := checkToken(tok, n.Resource, string(a.cfg.Grant)); err != nil {
		return err
	}
	n.Token = tok
	return a.save(ctx, n)
}

// checkClientIssuer refuses pre-registered credentials for another issuer.
func (a *Authorizer) checkClientIssuer(issuer string) error {
	if a.cfg.ClientIssuer != "" && a.cfg.ClientIssuer != issuer {
		return fmt.Errorf("%w: the pre-registered client is for %s, but the server now names %s", ErrNoRegistration, a.cfg.ClientIssuer, issuer)
	}
	return nil
}

// authorizationCode runs the authorization code grant with PKCE for n,
// registering first when needed; n.Client is set.
func (a *Authorizer) authorizationCode(ctx context.Context, asm *oauthex.AuthServerMeta, n *Record, prev *Client) (*oauth2.Token, error) {
	if a.cfg.Browser == nil {
		return nil, ErrNoBrowser
	}
	redirect, err := a.cfg.Browser.RedirectURL(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := url.Parse(redirect); err != nil || !(loopbackRedirect(redirect) || strings.HasPrefix(redirect, "https://")) {
		return nil, &InsecureEndpointError{Name: "redirect URI", URL: redirect}
	}
	client, err := a.client(ctx, asm, prev, redirect)
	if err != nil {
		return nil, err
	}
	n.Client = client
	verifier := oauth2.GenerateVerifier()
	state := rand.Text()
	conf := a.oauth2Config(n, asm.AuthorizationEndpoint, redirect)
	authURL := conf.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("resource", n.Resource))
	q, err := a.cfg.Browser.Authorize(ctx, &AuthorizationRequest{URL: authURL, Endpoint: a.endpoint, Resource: n.Resource,
		Issuer: n.Issuer, Scopes: slices.Clone(n.Scopes), RedirectURL: redirect, State: state})
	if err != nil {
		return nil, err
	}
	if err := checkResponse(q, state, n.Issuer, asm.AuthorizationResponseIssParameterSupported); err != nil {
		return nil, err
	}
	tok, err := conf.Exchange(context.WithValue(ctx, oauth2.HTTPClient, a.post), q.Get("code"),
		oauth2.VerifierOption(verifier), oauth2.SetAuthURLParam("resource", n.Resource))
	if err != nil {
		return nil, tokenError(ctx, "authorization_code", err, q.Get("code"), verifier, conf.ClientSecret)
	}
	return a.onClock(tok), nil
}

// checkResponse validates an authorization response before its code goes
// anywhere: its state, then its iss by simple string comparison (RFC 9207
// §2.4, the table of basic/authorization.mdx §Authorization Response
// Validation), then its error. On an iss mismatch the error's text is not
// shown: it may come from an attacker.
func checkResponse(q url.Values, state, issuer string, issSupported bool) error {
	if q.Get("state") != state {
		return ErrStateMismatch
	}
	iss, hasIss := q["iss"]
	switch {
	case hasIss && (len(iss) != 1 || iss[0] != issuer):
		return &IssuerMismatchError{Where: "authorization response", Expected: issuer, Got: strings.Join(iss, ", ")}
	case !hasIss && issSupported:
		return ErrIssuerMissing
	}
	if e := q.Get("error"); e != "" {
		return &AuthorizationError{Code: e, Description: q.Get("error_description")}
	}
	if q.Get("code") == "" {
		return &AuthorizationError{Code: "invalid_response", Description: "the authorization response has no code"}
	}
	return nil
}

// oauth2Config is the x/oauth2 configuration for n's client.
func (a *Authorizer) oauth2Config(n *Record, authURL, redirect string) *oauth2.Config {
	style := oauth2.AuthStyleInParams
	secret := n.Client.Secret
	if n.Client.Kind == ClientPreRegistered {
		secret = a.cfg.ClientSecret // never stored: the configuration has it
	}
	switch n.Client.AuthMethod {
	case "client_secret_basic":
		style = oauth2.AuthStyleInHeader
	case "none":
		secret = ""
	}
	return &oauth2.Config{ClientID: n.Client.ID, ClientSecret: secret, RedirectURL: redirect, Scopes: n.Scopes,
		Endpoint: oauth2.Endpoint{AuthURL: authURL, TokenURL: n.TokenEndpoint, AuthStyle: style}}
}

// tokenRequest sends a token request of grant with params through
// x/oauth2's client credentials code path, which takes extra parameters
// and an overridden grant_type: x/oauth2's refresher cannot send the
// resource parameter (RFC 8707 §2.2).
func (a *Authorizer) tokenRequest(ctx context.Context, n *Record, grant string, params url.Values) (*oauth2.Token, error) {
	conf := a.oauth2Config(n, "", "")
	cc := &clientcredentials.Config{ClientID: conf.ClientID, ClientSecret: conf.ClientSecret, TokenURL: n.TokenEndpoint,
		AuthStyle: conf.Endpoint.AuthStyle, EndpointParams: params}
	if grant == string(ClientCredentials) {
		cc.Scopes = n.Scopes
	}
	tok, err := cc.Token(context.WithValue(ctx, oauth2.HTTPClient, a.post))
	if err != nil {
		return nil, tokenError(ctx, grant, err, conf.ClientSecret, params.Get("refresh_token"))
	}
	return a.onClock(tok), nil
}

// clientCredentials gets a token with the client credentials grant.
func (a *Authorizer) clientCredentials(ctx context.Context, n *Record) (*oauth2.Token, error) {
	return a.tokenRequest(ctx, n, string(ClientCredentials), url.Values{"resource": {n.Resource}})
}

// refresh exchanges r's refresh token for a new token and saves it; the
// refresh token is kept when the server sends no new one.
func (a *Authorizer) refresh(ctx context.Context, r *Record) error {
	tok, err := a.tokenRequest(ctx, r, "refresh_token", url.Values{
		"grant_type": {"refresh_token"}, "refresh_token": {r.Token.RefreshToken}, "resource": {r.Resource}})
	if err != nil {
		return err
	}
	if err := checkToken(tok, r.Resource, "refresh_token"); err != nil {
		return err
	}
	if tok.RefreshToken == "" {
		tok.RefreshToken = r.Token.RefreshToken
	}
	n := *r
	n.Token = tok
	return a.save(ctx, &n)
}

// tokenError turns an x/oauth2 error into a TokenError without the
// response body, or keeps a transport error (which names only the URL).
// The server's words lose any of the secrets sent, should it echo them.
func tokenError(ctx context.Context, grant string, err error, sent ...string) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		te := &TokenError{Grant: grant, Code: redact(re.ErrorCode, sent), Description: redact(re.ErrorDescription, sent)}
		if re.Response != nil && (re.Response.StatusCode < 200 || re.Response.StatusCode > 299) {
			te.Status = re.Response.StatusCode
		}
		return te
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("oauth: the %s request to %s failed: %w", grant, ue.URL, ue.Err)
	}
	// x/oauth2's own messages ("server response missing access_token",
	// a JSON error) quote no response values.
	return &TokenError{Grant: grant, Description: strings.TrimPrefix(err.Error(), "oauth2: ")}
}

// redact replaces every secret of secrets in s (and its form-encoded
// spelling) with "[redacted]".
func redact(s string, secrets []string) string {
	for _, v := range secrets {
		if len(v) < 4 {
			continue
		}
		s = strings.ReplaceAll(s, v, "[redacted]")
		s = strings.ReplaceAll(s, url.QueryEscape(v), "[redacted]")
	}
	return s
}

// onClock moves t's expiry, which x/oauth2 computes from expires_in
// with the wall clock, onto the configured clock.
func (a *Authorizer) onClock(t *oauth2.Token) *oauth2.Token {
	if !t.Expiry.IsZero() {
		t.Expiry = a.cfg.Now().Add(time.Until(t.Expiry)).Round(time.Second)
	}
	return t
}

// checkToken refuses a token response this client cannot or must not use:
// no access token, a type other than Bearer, or a JWT access token whose
// aud does not name the resource (RFC 8707; RFC 9068 §3).
func checkToken(t *oauth2.Token, resource, grant string) error {
	if t.AccessToken == "" {
		return &TokenError{Grant: grant, Description: "the response has no access_token"}
	}
	if !strings.EqualFold(t.Type(), "Bearer") {
		return &TokenError{Grant: grant, Description: fmt.Sprintf("token_type %q is not Bearer", clip(t.TokenType, 40))}
	}
	if aud, ok := jwtAudience(t.AccessToken); ok && !slices.ContainsFunc(aud, func(s string) bool { return s == resource || sameResource(s, resource) }) {
		return &AudienceError{Resource: resource, Audience: aud}
	}
	return nil
}

// sameResource compares two resource identifiers in canonical form
// (scheme and host case, default port, a trailing slash).
func sameResource(a, b string) bool {
	ca, err1 := canonical(a)
	cb, err2 := canonical(b)
	if err1 != nil || err2 != nil {
		return false
	}
	return strings.TrimSuffix(ca.String(), "/") == strings.TrimSuffix(cb.String(), "/")
}

// jwtAudience reads the aud claim of a token that is a JWT (three
// base64url parts, a JSON header with alg, a JSON payload), without
// verifying it: only to notice a token meant for someone else. ok is false
// for an opaque token or one without aud.
func jwtAudience(tok string) (aud []string, ok bool) {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return nil, false
	}
	var header struct {
		Alg string `json:"alg"`
	}
	h, err := base64.RawURLEncoding.DecodeString(parts[0])
	if err != nil || json.Unmarshal(h, &header) != nil || header.Alg == "" {
		return nil, false
	}
	p, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return nil, false
	}
	var claims struct {
		Aud json.RawMessage `json:"aud"`
	}
	if json.Unmarshal(p, &claims) != nil || len(claims.Aud) == 0 || string(claims.Aud) == "null" {
		return nil, false
	}
	var one string
	if json.Unmarshal(claims.Aud, &one) == nil {
		return []string{one}, true
	}
	var many []string
	if json.Unmarshal(claims.Aud, &many) == nil {
		return many, true
	}
	return []string{string(claims.Aud)}, true // neither: matches no resource
}

// secretMethod picks the token endpoint authentication method for a
// client with a secret: client_secret_basic, else client_secret_post,
// from what the server lists (client_secret_basic when it lists nothing,
// RFC 8414 §2's default).
func secretMethod(supported []string) string {
	if len(supported) == 0 || slices.Contains(supported, "client_secret_basic") {
		return "client_secret_basic"
	}
	if slices.Contains(supported, "client_secret_post") {
		return "client_secret_post"
	}
	return "client_secret_basic"
}

// client returns the client registration to use at asm's issuer, in the
// order of basic/authorization/client-registration.mdx: pre-registered,
// client ID metadata document, the stored dynamic registration when it
// has redirect, a new dynamic registration.
func (a *Authorizer) client(ctx context.Context, asm *oauthex.AuthServerMeta, prev *Client, redirect string) (Client, error) {
	if a.cfg.ClientID != "" {
		if err := a.checkClientIssuer(asm.Issuer); err != nil {
			return Client{}, err
		}
		c := Client{ID: a.cfg.ClientID, Secret: a.cfg.ClientSecret, Kind: ClientPreRegistered, AuthMethod: "none"}
		if c.Secret != "" {
			c.AuthMethod = secretMethod(asm.TokenEndpointAuthMethodsSupported)
		}
		return c, nil
	}
	if a.cfg.ClientMetadataURL != "" && asm.ClientIDMetadataDocumentSupported {
		return Client{ID: a.cfg.ClientMetadataURL, Kind: ClientMetadataDocument, AuthMethod: "none"}, nil
	}
	if prev != nil && prev.Kind == ClientDynamic && slices.ContainsFunc(prev.RedirectURIs, func(u string) bool { return sameRedirect(u, redirect) }) {
		return *prev, nil
	}
	if asm.RegistrationEndpoint == "" || a.cfg.NoDynamicRegistration {
		return Client{}, fmt.Errorf("%w: %s supports neither client ID metadata documents (for this client) nor dynamic client registration; register a client there and configure its id", ErrNoRegistration, asm.Issuer)
	}
	return a.register(ctx, asm, redirect)
}

// register registers this client at asm's registration endpoint (RFC
// 7591), as a native application when the redirect URI is loopback
// (client-registration.mdx §Application Type and Redirect URI
// Constraints).
func (a *Authorizer) register(ctx context.Context, asm *oauthex.AuthServerMeta, redirect string) (Client, error) {
	appType := "web"
	if loopbackRedirect(redirect) {
		appType = "native"
	}
	grants := []string{"authorization_code"}
	if a.cfg.RequestRefreshToken && (len(asm.GrantTypesSupported) == 0 || slices.Contains(asm.GrantTypesSupported, "refresh_token")) {
		grants = append(grants, "refresh_token")
	}
	method := ""
	switch sup := asm.TokenEndpointAuthMethodsSupported; {
	case len(sup) == 0:
	case slices.Contains(sup, "none"):
		method = "none" // a public client: nothing to keep secret
	default:
		method = secretMethod(sup)
	}
	meta := &oauthex.ClientRegistrationMetadata{RedirectURIs: []string{redirect}, TokenEndpointAuthMethod: method,
		GrantTypes: grants, ResponseTypes: []string{"code"}, ClientName: a.cfg.ClientName, ApplicationType: appType}
	resp, err := oauthex.RegisterClient(ctx, asm.RegistrationEndpoint, meta, a.post)
	if err != nil {
		if ctx.Err() != nil {
			return Client{}, ctx.Err()
		}
		return Client{}, &RegistrationError{Endpoint: asm.RegistrationEndpoint, Err: err}
	}
	c := Client{ID: resp.ClientID, Secret: resp.ClientSecret, Kind: ClientDynamic, RedirectURIs: []string{redirect},
		AuthMethod: resp.TokenEndpointAuthMethod}
	switch {
	case c.AuthMethod == "none", c.AuthMethod == "client_secret_basic", c.AuthMethod == "client_secret_post":
	case c.AuthMethod != "":
		return Client{}, &RegistrationError{Endpoint: asm.RegistrationEndpoint,
			Err: fmt.Errorf("the server assigned token_endpoint_auth_method %q, which this client does not support", clip(c.AuthMethod, 40))}
	case method != "" && (method == "none" || c.Secret != ""):
		c.AuthMethod = method
	case c.Secret != "":
		c.AuthMethod = "client_secret_basic" // RFC 7591 §2's default
	default:
		c.AuthMethod = "none"
	}
	if c.AuthMethod != "none" && c.Secret == "" {
		return Client{}, &RegistrationError{Endpoint: asm.RegistrationEndpoint,
			Err: fmt.Errorf("the server assigned %s but no client_secret", c.AuthMethod)}
	}
	if c.AuthMethod == "none" {
		c.Secret = ""
	}
	return c, nil
}

// SignOut forgets everything stored for the endpoint: token and client
// registration. The authorization server is not told (no revocation).
func (a *Authorizer) SignOut(ctx context.Context) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.cfg.Store.Delete(ctx, a.endpoint); err != nil {
		return err
	}
	a.rec, a.loaded = nil, true
	return nil
}

// ForgetToken drops the stored token but keeps the client registration,
// so the next refusal signs in again without registering again.
func (a *Authorizer) ForgetToken(ctx context.Context) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	r, err := a.load(ctx)
	if err != nil || r == nil || r.Token == nil {
		return err
	}
	return a.dropToken(ctx, r)
}

// Session is what the Authorizer holds for its endpoint, without secrets.
type Session struct {
	// SignedIn: there is an access token (perhaps expired).
	SignedIn bool
	Issuer   string
	Resource string
	// Client describes the registration (id, kind, method).
	Client string
	Scopes []string
	// Expiry is the access token's, zero when unknown.
	Expiry time.Time
	// Refreshable: a refresh token is kept.
	Refreshable bool
}

// Session returns what is stored for the endpoint; the zero Session when
// nothing is.
func (a *Authorizer) Session(ctx context.Context) (Session, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	r, err := a.load(ctx)
	if err != nil || r == nil {
		return Session{}, err
	}
	s := Session{Issuer: r.Issuer, Resource: r.Resource, Client: r.Client.String(), Scopes: slices.Clone(r.Scopes)}
	if r.Token != nil && r.Token.AccessToken != "" {
		s.SignedIn, s.Expiry, s.Refreshable = true, r.Token.Expiry, r.Token.RefreshToken != ""
	}
	return s, nil
}

// union returns a's scopes followed by those of b it lacks.
func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// containsAll reports whether have holds every scope of want.
func containsAll(have, want []string) bool {
	for _, s := range want {
		if !slices.Contains(have, s) {
			return false
		}
	}
	return true
}
