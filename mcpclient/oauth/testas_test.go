package oauth

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpserver"
	"github.com/mcp-elicit/elicit/streamhttp"
)

// testAS is an authorization server for the tests: the conformance
// suite's mock in behaviour, with knobs for the hostile cases. Every
// secret it hands out (codes, tokens, client secrets) is kept in secrets,
// so tests can look for them where they must not be.
type testAS struct {
	t   *testing.T
	srv *httptest.Server
	URL string // origin
	// Prefix is the issuer's path ("" or e.g. "/tenant1").
	Prefix string

	mu sync.Mutex
	// Knobs.
	metaIssuer    string   // served as issuer; "" = the real one
	issMode       string   // "correct" (default), "wrong", "omit", "normalized"
	issSupported  *bool    // nil = true
	pkce          []string // code_challenge_methods_supported; nil = S256
	authMethods   []string // token_endpoint_auth_methods_supported; nil = none
	noDCR         bool
	cimd          bool
	scopes        []string // scopes_supported
	grantTypes    []string
	regMethod     string // token_endpoint_auth_method in the registration answer
	regSecret     bool
	tokenEndpoint string // overrides the metadata's
	jwtAud        string // issue JWT access tokens with this aud ("" = opaque tokens; "=resource" = the resource asked)
	tokenType     string // "" = Bearer
	expiresIn     int
	refresh       bool     // issue refresh tokens
	denyUser      bool     // answer access_denied
	preID, preSec string   // a pre-registered client
	refuseTokens  bool     // refuse every token request, quoting it
	withhold      []string // scopes never granted
	metaRedirect  string   // the metadata location redirects here

	// Observations.
	registrations []map[string]any
	authzRequests []url.Values
	tokenRequests []url.Values
	tokenAuth     []string // Authorization header of each token request
	secrets       []string
	clients       map[string]string // id → secret
	codes         map[string]grant
	tokens        map[string]grant // access token → grant
	refreshTokens map[string]grant
	seq           int
}

type grant struct {
	client, challenge, resource, redirect string
	scopes                                []string
}

func newTestAS(t *testing.T, prefix string) *testAS {
	a := &testAS{t: t, Prefix: prefix, clients: map[string]string{}, codes: map[string]grant{}, tokens: map[string]grant{}, refreshTokens: map[string]grant{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-authorization-server"+prefix, a.metadata)
	mux.HandleFunc("GET "+prefix+"/authorize", a.authorize)
	mux.HandleFunc("POST "+prefix+"/token", a.token)
	mux.HandleFunc("POST "+prefix+"/register", a.register)
	a.srv = httptest.NewServer(mux)
	t.Cleanup(a.srv.Close)
	a.URL = a.srv.URL
	return a
}

// Issuer is the issuer identifier.
func (a *testAS) Issuer() string { return a.URL + a.Prefix }

// next returns a new value of kind; all but client ids are secrets.
func (a *testAS) next(kind string) string {
	a.seq++
	s := fmt.Sprintf("%s-%d-%x", kind, a.seq, sha256.Sum256([]byte(fmt.Sprint(kind, a.seq, time.Now().UnixNano()))))[:len(kind)+20]
	if kind != "client" {
		a.secrets = append(a.secrets, s)
	}
	return s
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (a *testAS) metadata(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.metaRedirect != "" {
		http.Redirect(w, r, a.metaRedirect, http.StatusFound)
		return
	}
	iss := a.Issuer()
	if a.metaIssuer != "" {
		iss = a.metaIssuer
	}
	m := map[string]any{
		"issuer":                   iss,
		"authorization_endpoint":   a.Issuer() + "/authorize",
		"token_endpoint":           a.Issuer() + "/token",
		"response_types_supported": []string{"code"},
	}
	if a.tokenEndpoint != "" {
		m["token_endpoint"] = a.tokenEndpoint
	}
	if !a.noDCR {
		m["registration_endpoint"] = a.Issuer() + "/register"
	}
	m["code_challenge_methods_supported"] = []string{"S256"}
	if a.pkce != nil {
		m["code_challenge_methods_supported"] = a.pkce
	}
	m["authorization_response_iss_parameter_supported"] = a.issSupported == nil || *a.issSupported
	m["token_endpoint_auth_methods_supported"] = []string{"none"}
	if a.authMethods != nil {
		m["token_endpoint_auth_methods_supported"] = a.authMethods
	}
	if a.cimd {
		m["client_id_metadata_document_supported"] = true
	}
	if a.scopes != nil {
		m["scopes_supported"] = a.scopes
	}
	if a.grantTypes != nil {
		m["grant_types_supported"] = a.grantTypes
	}
	writeJSON(w, 200, m)
}

func (a *testAS) register(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	_ = json.NewDecoder(r.Body).Decode(&body)
	a.mu.Lock()
	defer a.mu.Unlock()
	a.registrations = append(a.registrations, body)
	id := a.next("client")
	resp := map[string]any{"client_id": id, "redirect_uris": body["redirect_uris"]}
	secret := ""
	if a.regSecret {
		secret = a.next("secret")
		resp["client_secret"] = secret
	}
	if a.regMethod != "" {
		resp["token_endpoint_auth_method"] = a.regMethod
	}
	a.clients[id] = secret
	writeJSON(w, 201, resp)
}

func (a *testAS) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	a.mu.Lock()
	defer a.mu.Unlock()
	a.authzRequests = append(a.authzRequests, q)
	redirect, err := url.Parse(q.Get("redirect_uri"))
	if err != nil {
		http.Error(w, "bad redirect_uri", 400)
		return
	}
	v := redirect.Query()
	if a.denyUser {
		v.Set("error", "access_denied")
		v.Set("error_description", "the user said no")
	} else {
		code := a.next("code")
		scopes := slices.DeleteFunc(strings.Fields(q.Get("scope")), func(s string) bool { return slices.Contains(a.withhold, s) })
		a.codes[code] = grant{client: q.Get("client_id"), challenge: q.Get("code_challenge"), resource: q.Get("resource"),
			redirect: q.Get("redirect_uri"), scopes: scopes}
		v.Set("code", code)
	}
	v.Set("state", q.Get("state"))
	switch a.issMode {
	case "", "correct":
		v.Set("iss", a.Issuer())
	case "wrong":
		v.Set("iss", "https://evil.example.com")
	case "normalized":
		v.Set("iss", a.Issuer()+"/")
	}
	redirect.RawQuery = v.Encode()
	http.Redirect(w, r, redirect.String(), http.StatusFound)
}

func (a *testAS) token(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	a.mu.Lock()
	defer a.mu.Unlock()
	a.tokenRequests = append(a.tokenRequests, r.PostForm)
	a.tokenAuth = append(a.tokenAuth, r.Header.Get("Authorization"))
	id, ok := a.authenticateClient(w, r)
	if !ok {
		return
	}
	g, refused := a.grantOf(r.PostForm, id)
	if refused != "" {
		writeJSON(w, 400, map[string]string{"error": refused})
		return
	}
	tok := a.accessToken(g)
	a.tokens[tok] = g
	resp := map[string]any{"access_token": tok, "token_type": "Bearer"}
	if a.tokenType != "" {
		resp["token_type"] = a.tokenType
	}
	if a.expiresIn != 0 {
		resp["expires_in"] = a.expiresIn
	}
	if len(g.scopes) > 0 {
		resp["scope"] = strings.Join(g.scopes, " ")
	}
	if a.refresh && r.PostForm.Get("grant_type") != "client_credentials" {
		rt := a.next("refresh")
		a.refreshTokens[rt] = g
		resp["refresh_token"] = rt
	}
	writeJSON(w, 200, resp)
}

// authenticateClient checks the client's credentials (HTTP Basic or in
// the form; none for a public client when allowed) and answers 401 when
// they do not hold; a.mu is held.
func (a *testAS) authenticateClient(w http.ResponseWriter, r *http.Request) (id string, ok bool) {
	id, secret, basic := r.BasicAuth()
	if basic {
		id, _ = url.QueryUnescape(id)
		secret, _ = url.QueryUnescape(secret)
	} else {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	known, ok := a.clients[id]
	if a.cimd && strings.HasPrefix(id, "https://") {
		known, ok = "", true
	}
	if a.preID != "" && id == a.preID {
		known, ok = a.preSec, true
	}
	if a.refuseTokens {
		writeJSON(w, 401, map[string]string{"error": "invalid_client", "error_description": "echo: " + r.PostForm.Encode() + " " + r.Header.Get("Authorization")})
		return "", false
	}
	noneOK := a.authMethods == nil || slices.Contains(a.authMethods, "none")
	if !ok || (known != secret && !(secret == "" && noneOK)) {
		writeJSON(w, 401, map[string]string{"error": "invalid_client", "error_description": "echo: " + r.PostForm.Encode()})
		return "", false
	}
	return id, true
}

// grantOf reads the grant the form asks for, or the OAuth error code that
// refuses it. a.mu is held.
func (a *testAS) grantOf(form url.Values, id string) (g grant, refused string) {
	switch form.Get("grant_type") {
	case "authorization_code":
		c, found := a.codes[form.Get("code")]
		delete(a.codes, form.Get("code"))
		sum := sha256.Sum256([]byte(form.Get("code_verifier")))
		if !found || c.client != id || base64.RawURLEncoding.EncodeToString(sum[:]) != c.challenge ||
			form.Get("resource") != c.resource || form.Get("redirect_uri") != c.redirect {
			return grant{}, "invalid_grant"
		}
		return c, ""
	case "refresh_token":
		c, found := a.refreshTokens[form.Get("refresh_token")]
		if !found || c.client != id || form.Get("resource") != c.resource {
			return grant{}, "invalid_grant"
		}
		delete(a.refreshTokens, form.Get("refresh_token")) // rotation
		return c, ""
	case "client_credentials":
		return grant{client: id, resource: form.Get("resource"), scopes: strings.Fields(form.Get("scope"))}, ""
	}
	return grant{}, "unsupported_grant_type"
}

// accessToken mints an access token for g: opaque, or a JWT with the
// audience a.jwtAud names. a.mu is held.
func (a *testAS) accessToken(g grant) string {
	tok := a.next("access")
	if a.jwtAud == "" {
		return tok
	}
	aud := a.jwtAud
	if aud == "=resource" {
		aud = g.resource
	}
	h := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"RS256","typ":"at+jwt"}`))
	p, _ := json.Marshal(map[string]any{"iss": a.Issuer(), "aud": aud, "sub": "alice", "jti": tok})
	tok = h + "." + base64.RawURLEncoding.EncodeToString(p) + ".c2ln"
	a.secrets = append(a.secrets, tok)
	return tok
}

// valid returns the grant of an access token this server issued.
func (a *testAS) valid(tok string) (grant, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	g, ok := a.tokens[tok]
	return g, ok
}

// all returns a copy of the secrets handed out so far.
func (a *testAS) allSecrets() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.secrets)
}

// testRS is a protected MCP server: tools/list needs a token of its AS
// for its resource with scopes list; tools/call needs call too. It
// serves its metadata at the path-based well-known URI.
type testRS struct {
	srv      *httptest.Server
	Endpoint string
	mu       sync.Mutex
	as       *testAS
	// Knobs.
	resource     string   // PRM resource; "" = Endpoint
	prmScopes    []string // scopes_supported
	listScope    []string // scopes tools/list needs (challenge scope)
	callScope    []string // scopes tools/call needs (403 insufficient_scope)
	noHeaderMeta bool     // leave resource_metadata out of the challenge
	rootPRM      bool     // serve PRM at the root only
	seen         []string // Authorization of each MCP request
}

func newTestRS(t *testing.T, as *testAS) *testRS {
	rs := &testRS{as: as}
	s := mcpserver.New(mcp.Implementation{Name: "protected", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "ping"}, func(ctx context.Context, r *mcpserver.Request) (mcpserver.Reply, error) {
		return mcpserver.Text("pong"), nil
	})
	h := streamhttp.NewHandler(s, nil)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
		if rs.rootPRM {
			http.NotFound(w, r)
			return
		}
		rs.prm(w)
	})
	mux.HandleFunc("GET /.well-known/oauth-protected-resource", func(w http.ResponseWriter, r *http.Request) {
		if !rs.rootPRM {
			http.NotFound(w, r)
			return
		}
		rs.prm(w)
	})
	mux.Handle("/mcp", rs.gate(h))
	rs.srv = httptest.NewServer(mux)
	t.Cleanup(rs.srv.Close)
	rs.Endpoint = rs.srv.URL + "/mcp"
	return rs
}

func (rs *testRS) prm(w http.ResponseWriter) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	res := rs.resource
	if res == "" {
		res = rs.Endpoint
	}
	m := map[string]any{"resource": res, "authorization_servers": []string{rs.as.Issuer()}}
	if rs.prmScopes != nil {
		m["scopes_supported"] = rs.prmScopes
	}
	writeJSON(w, 200, m)
}

func (rs *testRS) gate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		var msg struct {
			Method string `json:"method"`
		}
		_ = json.Unmarshal(body, &msg)
		rs.mu.Lock()
		rs.seen = append(rs.seen, r.Header.Get("Authorization"))
		as, need := rs.as, rs.listScope
		if msg.Method == "tools/call" {
			need = union(rs.listScope, rs.callScope)
		}
		ch := "Bearer "
		if !rs.noHeaderMeta {
			ch += `resource_metadata="` + rs.srv.URL + `/.well-known/oauth-protected-resource/mcp"`
		}
		rs.mu.Unlock()
		fail := func(status int, extra string) {
			v := ch
			if extra != "" {
				if !strings.HasSuffix(v, " ") {
					v += ", "
				}
				v += extra
			}
			w.Header().Set("WWW-Authenticate", strings.TrimSuffix(v, " "))
			writeJSON(w, status, map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": -32600, "message": "unauthorized"}})
		}
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		g, valid := as.valid(tok)
		scope := ""
		if len(rs.listScope) > 0 {
			scope = `scope="` + strings.Join(rs.listScope, " ") + `"`
		}
		switch {
		case !ok || !valid:
			fail(401, scope)
		case !containsAll(g.scopes, need):
			fail(403, `error="insufficient_scope", scope="`+strings.Join(rs.callScope, " ")+`"`)
		default:
			next.ServeHTTP(w, r)
		}
	})
}

// testBrowser is a Browser without a user: it follows the authorization
// URL one step and reads the response from the redirect's Location.
type testBrowser struct {
	redirect string
	mu       sync.Mutex
	requests []*AuthorizationRequest
	decline  error
}

func (b *testBrowser) RedirectURL(ctx context.Context) (string, error) {
	if b.redirect == "" {
		return "http://127.0.0.1:53682/callback", nil
	}
	return b.redirect, nil
}

func (b *testBrowser) Authorize(ctx context.Context, req *AuthorizationRequest) (url.Values, error) {
	b.mu.Lock()
	b.requests = append(b.requests, req)
	b.mu.Unlock()
	if b.decline != nil {
		return nil, b.decline
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	r, err := http.NewRequestWithContext(ctx, http.MethodGet, req.URL, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(r)
	if err != nil {
		return nil, err
	}
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil {
		return nil, err
	}
	return loc.Query(), nil
}
