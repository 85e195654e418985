// Package fakeidp is an in-process OpenID Connect issuer for tests: a
// loopback listener (no httptest) that serves discovery, a JWKS with one RSA
// and one P-256 key, an authorize endpoint with a demo sign-in (user name
// only), a token endpoint issuing JWT access tokens (aud = the resource
// parameter) and, for the openid scope, ID tokens, for the authorization
// code flow with PKCE S256, and dynamic client registration (RFC 7591)
// whose loopback redirect URIs may take any port (RFC 8252 §7.3), as an
// MCP host's sign-in needs. Sign mints tokens directly,
// including the broken ones a resource server must refuse (alg none, HMAC
// keyed with the public key, an unknown key).
//
// It is not secure and is for tests only. It is separate from
// internal/fakeoauth (a plain OAuth provider for the connect flows), which
// has no ID tokens or JWKS.
package fakeidp

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"html/template"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// Alg selects how Sign signs a token.
type Alg string

// Signing choices for Sign.
const (
	RS256 Alg = "RS256" // the issuer's RSA key (kid "rsa-1")
	ES256 Alg = "ES256" // the issuer's P-256 key (kid "ec-1")
	// None is an unsigned token: header alg "none", empty signature.
	None Alg = "none"
	// HS256PublicKey is the key-confusion forgery: alg HS256, kid of the RSA
	// key, HMAC keyed with that public key's PEM encoding.
	HS256PublicKey Alg = "HS256-public-key"
	// RS256OtherKey is signed by an RSA key that is not in the JWKS but
	// claims the published kid.
	RS256OtherKey Alg = "RS256-other-key"
	// RS256UnknownKid is signed by that other key under a kid the JWKS
	// does not have.
	RS256UnknownKid Alg = "RS256-unknown-kid"
)

// Claims are the claims Sign puts in a token. Zero fields are omitted,
// except Issuer (default: the server's URL), Expiry (default: in one
// hour) and IssuedAt (default: now).
type Claims struct {
	Issuer   string
	Subject  string
	Audience []string
	Expiry   time.Time // zero: an hour from now
	IssuedAt time.Time // zero: now
	// NotBefore, if set, is the nbf claim (absent otherwise).
	NotBefore time.Time
	Nonce     string
	Scope     string
	AZP       string
}

// Client is a registered OAuth client.
type Client struct {
	ID          string
	Secret      string // "" for a public client
	RedirectURL string
}

// Server is the fake issuer. URL is its issuer identifier,
// http://127.0.0.1:<port>.
type Server struct {
	URL string

	rsaKey, otherKey *rsa.PrivateKey
	ecKey            *ecdsa.PrivateKey
	srv              *http.Server

	mu           sync.Mutex
	clients      map[string]Client
	codes        map[string]*grant
	jwksRequests int
	jwksDown     bool
	rsaKid       string
	idTokenHook  func(*Claims, *Alg)
	issued       []string // codes and tokens handed out (Issued)
	registered   int      // dynamic registrations (Registrations)
}

// JWKSRequests returns how many times the JWKS was fetched.
func (s *Server) JWKSRequests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.jwksRequests
}

// SetJWKSDown makes the JWKS endpoint answer 503 (an outage) or work again.
func (s *Server) SetJWKSDown(down bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.jwksDown = down
}

// RotateRSAKey replaces the RSA signing key with a new one under a new
// kid; the old key leaves the JWKS.
func (s *Server) RotateRSAKey() error {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rsaKey, s.rsaKid = k, s.rsaKid+"-next"
	return nil
}

// SetIDTokenHook makes the token endpoint pass each ID token's claims and
// algorithm through f before signing, to issue broken ID tokens.
func (s *Server) SetIDTokenHook(f func(*Claims, *Alg)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.idTokenHook = f
}

// grant is an issued, not yet redeemed authorization code.
type grant struct {
	client, redirect, user, nonce, challenge, resource string
	openid                                             bool
}

// Start generates keys, listens on 127.0.0.1 and serves until tb ends.
func Start(tb testing.TB) *Server {
	tb.Helper()
	s, err := New()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Close)
	return s
}

// New generates keys, listens on 127.0.0.1 and serves until Close (for
// Example functions, which have no testing.TB).
func New() (*Server, error) {
	s := &Server{clients: map[string]Client{}, codes: map[string]*grant{}, rsaKid: "rsa-1"}
	var err error
	if s.rsaKey, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
		return nil, err
	}
	if s.otherKey, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
		return nil, err
	}
	if s.ecKey, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s.URL = "http://" + ln.Addr().String()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", s.discovery)
	mux.HandleFunc("GET /jwks", s.jwks)
	mux.HandleFunc("GET /authorize", s.authorizePage)
	mux.HandleFunc("POST /authorize", s.authorize)
	mux.HandleFunc("POST /token", s.token)
	mux.HandleFunc("POST /register", s.register)
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// Close stops the server.
func (s *Server) Close() { _ = s.srv.Close() }

// AddClient registers c.
func (s *Server) AddClient(c Client) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clients[c.ID] = c
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (s *Server) discovery(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"issuer":                                         s.URL,
		"authorization_endpoint":                         s.URL + "/authorize",
		"token_endpoint":                                 s.URL + "/token",
		"jwks_uri":                                       s.URL + "/jwks",
		"response_types_supported":                       []string{"code"},
		"subject_types_supported":                        []string{"public"},
		"id_token_signing_alg_values_supported":          []string{"RS256", "ES256"},
		"code_challenge_methods_supported":               []string{"S256"},
		"grant_types_supported":                          []string{"authorization_code"},
		"token_endpoint_auth_methods_supported":          []string{"client_secret_basic", "client_secret_post", "none"},
		"authorization_response_iss_parameter_supported": true,
		"registration_endpoint":                          s.URL + "/register",
	})
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// pad returns b left-padded with zeros to n bytes (JWK and ES256 encodings).
func pad(b []byte, n int) []byte {
	if len(b) >= n {
		return b
	}
	return append(make([]byte, n-len(b)), b...)
}

func (s *Server) jwks(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.jwksRequests++
	rsaKey, rsaKid, down := s.rsaKey, s.rsaKid, s.jwksDown
	s.mu.Unlock()
	if down {
		http.Error(w, "down", http.StatusServiceUnavailable)
		return
	}
	ec, err := s.ecKey.PublicKey.Bytes() // 0x04 || X || Y
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"keys": []map[string]string{
		{"kty": "RSA", "kid": rsaKid, "use": "sig", "alg": "RS256",
			"n": b64(rsaKey.N.Bytes()), "e": b64(big.NewInt(int64(rsaKey.E)).Bytes())},
		{"kty": "EC", "kid": "ec-1", "use": "sig", "alg": "ES256", "crv": "P-256",
			"x": b64(ec[1:33]), "y": b64(ec[33:65])},
	}})
}

// Sign returns a compact JWS of c signed as alg says.
func (s *Server) Sign(alg Alg, c Claims) string {
	payload := map[string]any{"iss": s.URL, "exp": time.Now().Add(time.Hour).Unix(), "iat": time.Now().Unix()}
	if c.Issuer != "" {
		payload["iss"] = c.Issuer
	}
	if !c.Expiry.IsZero() {
		payload["exp"] = c.Expiry.Unix()
	}
	if !c.IssuedAt.IsZero() {
		payload["iat"] = c.IssuedAt.Unix()
	}
	if !c.NotBefore.IsZero() {
		payload["nbf"] = c.NotBefore.Unix()
	}
	if c.Subject != "" {
		payload["sub"] = c.Subject
	}
	if len(c.Audience) == 1 {
		payload["aud"] = c.Audience[0]
	} else if len(c.Audience) > 1 {
		payload["aud"] = c.Audience
	}
	if c.Nonce != "" {
		payload["nonce"] = c.Nonce
	}
	if c.Scope != "" {
		payload["scope"] = c.Scope
	}
	if c.AZP != "" {
		payload["azp"] = c.AZP
	}
	s.mu.Lock()
	rsaKey, rsaKid := s.rsaKey, s.rsaKid
	s.mu.Unlock()
	header := map[string]string{"typ": "JWT"}
	switch alg {
	case RS256, RS256OtherKey:
		header["alg"], header["kid"] = "RS256", rsaKid
	case RS256UnknownKid:
		header["alg"], header["kid"] = "RS256", "unknown-"+b64(randomBytes(6))
	case ES256:
		header["alg"], header["kid"] = "ES256", "ec-1"
	case None:
		header["alg"] = "none"
	case HS256PublicKey:
		header["alg"], header["kid"] = "HS256", rsaKid
	}
	h, _ := json.Marshal(header)
	p, _ := json.Marshal(payload)
	input := b64(h) + "." + b64(p)
	digest := sha256.Sum256([]byte(input))
	var sig []byte
	switch alg {
	case RS256:
		sig, _ = rsa.SignPKCS1v15(rand.Reader, rsaKey, crypto.SHA256, digest[:])
	case RS256OtherKey, RS256UnknownKid:
		sig, _ = rsa.SignPKCS1v15(rand.Reader, s.otherKey, crypto.SHA256, digest[:])
	case ES256:
		r, ss, _ := ecdsa.Sign(rand.Reader, s.ecKey, digest[:])
		sig = append(pad(r.Bytes(), 32), pad(ss.Bytes(), 32)...)
	case HS256PublicKey:
		der, _ := x509.MarshalPKIXPublicKey(&rsaKey.PublicKey)
		m := hmac.New(sha256.New, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
		m.Write([]byte(input))
		sig = m.Sum(nil)
	}
	return input + "." + b64(sig)
}

var loginPage = template.Must(template.New("login").Parse(`<!doctype html>
<title>Fake IdP sign-in</title>
<form method="post" action="/authorize">
{{range $k, $v := .}}<input type="hidden" name="{{$k}}" value="{{index $v 0}}">
{{end}}<label>User <input name="username" id="username"></label>
<button type="submit" id="submit">Sign in</button>
</form>`))

// authorizePage shows the demo sign-in form, carrying the request's
// parameters along.
func (s *Server) authorizePage(w http.ResponseWriter, r *http.Request) {
	if _, msg := s.checkAuthorize(r.URL.Query()); msg != "" {
		http.Error(w, msg, http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_ = loginPage.Execute(w, r.URL.Query())
}

// checkAuthorize validates an authorization request.
func (s *Server) checkAuthorize(q url.Values) (Client, string) {
	s.mu.Lock()
	c, ok := s.clients[q.Get("client_id")]
	s.mu.Unlock()
	switch {
	case !ok:
		return c, "unknown client_id"
	case !redirectMatches(c.RedirectURL, q.Get("redirect_uri")):
		return c, "redirect_uri not registered"
	case q.Get("response_type") != "code":
		return c, "response_type must be code"
	case q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "":
		return c, "PKCE S256 required"
	}
	return c, ""
}

// authorize signs the user in (any user name) and redirects back with a
// code, state and iss (RFC 9207). Without the openid scope, the token
// endpoint issues an access token only (an OAuth client such as an MCP
// host).
func (s *Server) authorize(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	q := r.PostForm
	c, msg := s.checkAuthorize(q)
	user := q.Get("username")
	if msg == "" && user == "" {
		msg = "username required"
	}
	if msg != "" {
		http.Error(w, msg, http.StatusBadRequest)
		return
	}
	code := b64(randomBytes(24))
	redirect := q.Get("redirect_uri")
	s.mu.Lock()
	s.codes[code] = &grant{client: c.ID, redirect: redirect, user: user, nonce: q.Get("nonce"),
		challenge: q.Get("code_challenge"), resource: q.Get("resource"), openid: strings.Contains(" "+q.Get("scope")+" ", " openid ")}
	s.issued = append(s.issued, code)
	s.mu.Unlock()
	v := url.Values{"code": {code}, "iss": {s.URL}}
	if st := q.Get("state"); st != "" {
		v.Set("state", st)
	}
	http.Redirect(w, r, redirect+"?"+v.Encode(), http.StatusFound)
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

// token redeems a code (once) for an ID token (aud = client id) and a JWT
// access token (aud = the resource parameter, else the client id).
func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_request"})
		return
	}
	id, secret, basic := r.BasicAuth()
	if basic {
		id, _ = url.QueryUnescape(id)
		secret, _ = url.QueryUnescape(secret)
	} else {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	s.mu.Lock()
	c, ok := s.clients[id]
	code := r.PostForm.Get("code")
	g := s.codes[code]
	delete(s.codes, code) // single use, even when the request fails
	s.mu.Unlock()
	if !ok || !hmac.Equal([]byte(secret), []byte(c.Secret)) {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_client"})
		return
	}
	if r.PostForm.Get("grant_type") != "authorization_code" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "unsupported_grant_type"})
		return
	}
	sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
	if g == nil || g.client != c.ID || r.PostForm.Get("redirect_uri") != g.redirect || b64(sum[:]) != g.challenge {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant"})
		return
	}
	aud := c.ID
	if g.resource != "" {
		aud = g.resource
	}
	idc, alg := Claims{Subject: g.user, Audience: []string{c.ID}, Nonce: g.nonce}, RS256
	s.mu.Lock()
	hook := s.idTokenHook
	s.mu.Unlock()
	if hook != nil {
		hook(&idc, &alg)
	}
	resp := map[string]any{
		"token_type":   "Bearer",
		"expires_in":   3600,
		"access_token": s.Sign(RS256, Claims{Subject: g.user, Audience: []string{aud}}),
	}
	if g.openid {
		resp["id_token"] = s.Sign(alg, idc)
	}
	s.mu.Lock()
	s.issued = append(s.issued, resp["access_token"].(string))
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, resp)
}
