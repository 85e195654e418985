package oauth

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-elicit/elicit/mcpclient"
)

// session is one client of a testRS through an Authorizer.
type session struct {
	a    *Authorizer
	c    *mcpclient.Client
	logs *bytes.Buffer
}

func newSession(t *testing.T, rs *testRS, cfg Config) *session {
	t.Helper()
	logs := &bytes.Buffer{}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(logs, nil))
	}
	a, err := New(rs.Endpoint, &cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &session{a: a, c: mcpclient.New(rs.Endpoint, &mcpclient.Options{Authorizer: a}), logs: logs}
}

// listAndCall is what the conformance scenarios do: tools/list, then
// tools/call.
func (s *session) listAndCall() error {
	ctx := context.Background()
	if _, err := s.c.ListTools(ctx); err != nil {
		return err
	}
	_, err := s.c.CallTool(ctx, "ping", nil)
	return err
}

// noSecrets fails when any secret the AS issued shows in text.
func noSecrets(t *testing.T, as *testAS, where, text string) {
	t.Helper()
	for _, s := range as.allSecrets() {
		if strings.Contains(text, s) {
			t.Errorf("%s shows the secret %.12s…: %s", where, s, text)
		}
	}
}

// The whole flow with dynamic registration: PKCE S256, state, resource in
// both requests, iss checked, the token in a 0600 file, reused by the
// next run without the authorization server.
func TestAuthorizationCodeFlow(t *testing.T) {
	as := newTestAS(t, "")
	as.scopes = []string{"mcp:basic", "offline_access"}
	as.refresh = true
	rs := newTestRS(t, as)
	rs.listScope = []string{"mcp:basic"}
	store := &FileStore{Dir: filepath.Join(t.TempDir(), "oauth")}
	b := &testBrowser{}
	s := newSession(t, rs, Config{Browser: b, Store: store, RequestRefreshToken: true, ClientName: "elicit test"})
	if err := s.listAndCall(); err != nil {
		t.Fatal(err)
	}
	checkFirstGrant(t, as, rs)
	checkTokenFile(t, store, s.a.Endpoint())
	sess, err := s.a.Session(context.Background())
	if err != nil || !sess.SignedIn || !sess.Refreshable || sess.Issuer != as.Issuer() || sess.Resource != rs.Endpoint {
		t.Fatalf("session %+v %v", sess, err)
	}
	noSecrets(t, as, "Session", strings.Join([]string{sess.Client, sess.Issuer}, " "))
	rec, _ := store.Load(context.Background(), s.a.Endpoint())
	noSecrets(t, as, "Record.String", rec.String()+" "+rec.GoString()+" "+rec.Client.String())

	// A second run: the stored token, no authorization server at all.
	as.srv.Close()
	s2 := newSession(t, rs, Config{Browser: &testBrowser{decline: errors.New("must not sign in")}, Store: store})
	if err := s2.listAndCall(); err != nil {
		t.Fatalf("second run: %v", err)
	}

	// Sign-out removes the file.
	if err := s2.a.SignOut(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(store.Path(s.a.Endpoint())); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("after sign-out: %v", err)
	}
}

// checkFirstGrant checks the one registration, authorization request and
// token request of a first sign-in: a native public client, PKCE S256,
// the resource indicator, the scopes asked, no client secret.
func checkFirstGrant(t *testing.T, as *testAS, rs *testRS) {
	t.Helper()
	if len(as.registrations) != 1 || len(as.authzRequests) != 1 || len(as.tokenRequests) != 1 {
		t.Fatalf("%d registrations, %d authorization and %d token requests", len(as.registrations), len(as.authzRequests), len(as.tokenRequests))
	}
	reg := as.registrations[0]
	if reg["application_type"] != "native" || reg["client_name"] != "elicit test" || reg["token_endpoint_auth_method"] != "none" ||
		!slices.Equal(toStrings(reg["grant_types"]), []string{"authorization_code", "refresh_token"}) {
		t.Errorf("registration %v", reg)
	}
	q := as.authzRequests[0]
	if q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" || q.Get("state") == "" ||
		q.Get("resource") != rs.Endpoint || q.Get("scope") != "mcp:basic offline_access" || q.Get("response_type") != "code" {
		t.Errorf("authorization request %v", q)
	}
	f := as.tokenRequests[0]
	if f.Get("resource") != rs.Endpoint || f.Get("code_verifier") == "" || f.Get("client_secret") != "" {
		t.Errorf("token request %v", f)
	}
}

// checkTokenFile checks that the endpoint's token file is private (0600,
// in a 0700 directory).
func checkTokenFile(t *testing.T, store *FileStore, endpoint string) {
	t.Helper()
	fi, err := os.Stat(store.Path(endpoint))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v %v", fi, err)
	}
	if di, _ := os.Stat(store.Dir); di.Mode().Perm() != 0o700 {
		t.Errorf("token directory mode %v", di.Mode().Perm())
	}
}

func toStrings(v any) []string {
	var out []string
	l, _ := v.([]any)
	for _, x := range l {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}

// Step-up: the 403's scope is added to what was asked before
// (SEP-2350's union), and the registration is reused.
func TestStepUp(t *testing.T) {
	as := newTestAS(t, "")
	rs := newTestRS(t, as)
	rs.listScope = []string{"mcp:basic"}
	rs.callScope = []string{"mcp:write"}
	rs.prmScopes = []string{"mcp:profile"}
	s := newSession(t, rs, Config{Browser: &testBrowser{}})
	if err := s.listAndCall(); err != nil {
		t.Fatal(err)
	}
	if len(as.authzRequests) != 2 || len(as.registrations) != 1 {
		t.Fatalf("%d authorizations, %d registrations", len(as.authzRequests), len(as.registrations))
	}
	if got := as.authzRequests[1].Get("scope"); got != "mcp:basic mcp:write" {
		t.Fatalf("step-up scope %q", got)
	}
}

// A 403 insufficient_scope that never goes away: at most three
// authorizations, then ErrAuthorizeLimit.
func TestScopeRetryLimit(t *testing.T) {
	as := newTestAS(t, "")
	as.withhold = []string{"never"}
	rs := newTestRS(t, as)
	rs.listScope = []string{"mcp:admin"}
	rs.callScope = []string{"never"}
	s := newSession(t, rs, Config{Browser: &testBrowser{}})
	_, err := s.c.ListTools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.c.CallTool(context.Background(), "ping", nil)
	if !errors.Is(err, mcpclient.ErrAuthorizeLimit) {
		t.Fatalf("err = %v", err)
	}
	if n := len(as.authzRequests); n != 4 { // 1 for the list, 3 for the call
		t.Fatalf("%d authorization requests", n)
	}
}

// An expired token is refreshed (with the resource parameter), without
// the browser; a refresh the server refuses leads to a new sign-in.
func TestRefresh(t *testing.T) {
	as := newTestAS(t, "")
	as.refresh, as.expiresIn = true, 60
	rs := newTestRS(t, as)
	var now atomic.Int64
	now.Store(time.Now().Unix())
	clock := func() time.Time { return time.Unix(now.Load(), 0) }
	b := &testBrowser{}
	s := newSession(t, rs, Config{Browser: b, Now: clock})
	if err := s.listAndCall(); err != nil {
		t.Fatal(err)
	}
	now.Add(3600)
	if err := s.listAndCall(); err != nil {
		t.Fatal(err)
	}
	if len(b.requests) != 1 || len(as.tokenRequests) != 2 {
		t.Fatalf("%d sign-ins, %d token requests", len(b.requests), len(as.tokenRequests))
	}
	if f := as.tokenRequests[1]; f.Get("grant_type") != "refresh_token" || f.Get("resource") != rs.Endpoint {
		t.Fatalf("refresh request %v", f)
	}
	// The refresh token is revoked: a new sign-in.
	as.mu.Lock()
	clear(as.refreshTokens)
	as.mu.Unlock()
	now.Add(3600)
	if err := s.listAndCall(); err != nil {
		t.Fatal(err)
	}
	if len(b.requests) != 2 {
		t.Fatalf("%d sign-ins after a refused refresh", len(b.requests))
	}
	noSecrets(t, as, "the log", s.logs.String())
}

// The metadata names another authorization server: register there anew,
// never show it the first one's client id.
func TestMigration(t *testing.T) {
	as1, as2 := newTestAS(t, ""), newTestAS(t, "")
	rs := newTestRS(t, as1)
	s := newSession(t, rs, Config{Browser: &testBrowser{}})
	if _, err := s.c.ListTools(context.Background()); err != nil {
		t.Fatal(err)
	}
	rs.mu.Lock()
	rs.as = as2
	rs.mu.Unlock()
	if _, err := s.c.CallTool(context.Background(), "ping", nil); err != nil {
		t.Fatal(err)
	}
	if len(as2.registrations) != 1 {
		t.Fatalf("%d registrations at the new server", len(as2.registrations))
	}
	old := as1.tokenRequests[0].Get("client_id")
	for _, q := range as2.authzRequests {
		if q.Get("client_id") == old {
			t.Fatal("the first server's client id was shown to the second")
		}
	}
	sess, _ := s.a.Session(context.Background())
	if sess.Issuer != as2.Issuer() {
		t.Fatalf("session issuer %s", sess.Issuer)
	}
}

// Registration choices: pre-registered first, then a client ID metadata
// document, then dynamic registration; the token endpoint authentication
// method follows the server.
func TestClientRegistration(t *testing.T) {
	const cimdURL = "https://client.example.com/client.json"
	tests := []struct {
		name      string
		setup     func(*testAS)
		cfg       Config
		wantID    func(*testAS) string
		wantAuth  string // "basic", "post", "none"
		wantRegs  int
		wantNoReg bool
	}{
		{"pre-registered, basic", func(a *testAS) {
			a.preID, a.preSec, a.noDCR, a.authMethods = "pre-id", "pre-secret-xyz", true, []string{"client_secret_basic"}
		},
			Config{ClientID: "pre-id", ClientSecret: "pre-secret-xyz"}, func(*testAS) string { return "pre-id" }, "basic", 0, false},
		{"pre-registered beats metadata document", func(a *testAS) { a.preID, a.cimd, a.authMethods = "pre-id", true, []string{"none"} },
			Config{ClientID: "pre-id", ClientMetadataURL: cimdURL}, func(*testAS) string { return "pre-id" }, "none", 0, false},
		{"metadata document", func(a *testAS) { a.cimd = true },
			Config{ClientMetadataURL: cimdURL}, func(*testAS) string { return cimdURL }, "none", 0, false},
		{"dynamic, post", func(a *testAS) {
			a.authMethods, a.regMethod, a.regSecret = []string{"client_secret_post"}, "client_secret_post", true
		},
			Config{ClientMetadataURL: cimdURL}, nil, "post", 1, false},
		{"dynamic, basic by default", func(a *testAS) { a.authMethods, a.regSecret = []string{"client_secret_basic"}, true },
			Config{}, nil, "basic", 1, false},
		{"dynamic, secret but none supported", func(a *testAS) { a.regSecret = true },
			Config{}, nil, "none", 1, false},
		{"nothing possible", func(a *testAS) { a.noDCR = true }, Config{}, nil, "", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			as := newTestAS(t, "")
			tt.setup(as)
			rs := newTestRS(t, as)
			tt.cfg.Browser = &testBrowser{}
			s := newSession(t, rs, tt.cfg)
			err := s.listAndCall()
			if tt.wantNoReg {
				if !errors.Is(err, ErrNoRegistration) || len(as.authzRequests) != 0 {
					t.Fatalf("err = %v, %d authorization requests", err, len(as.authzRequests))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(as.registrations) != tt.wantRegs {
				t.Fatalf("%d registrations", len(as.registrations))
			}
			id := as.authzRequests[0].Get("client_id")
			if tt.wantID != nil && id != tt.wantID(as) {
				t.Errorf("client_id %q", id)
			}
			f, hdr := as.tokenRequests[0], as.tokenAuth[0]
			got := "none"
			switch {
			case strings.HasPrefix(hdr, "Basic "):
				got = "basic"
			case f.Get("client_secret") != "":
				got = "post"
			}
			if got != tt.wantAuth {
				t.Errorf("token endpoint authentication %s, want %s", got, tt.wantAuth)
			}
			rec, _ := s.a.cfg.Store.Load(context.Background(), s.a.Endpoint())
			if rec.Client.Kind == ClientPreRegistered && rec.Client.Secret != "" {
				t.Error("a pre-registered secret was stored")
			}
		})
	}
}

// The client credentials grant: no browser, the resource and the scopes
// in the token request, client_secret_basic.
func TestClientCredentials(t *testing.T) {
	as := newTestAS(t, "")
	as.preID, as.preSec, as.authMethods = "machine", "machine-secret-123", []string{"client_secret_basic"}
	rs := newTestRS(t, as)
	rs.listScope = []string{"mcp:basic"}
	s := newSession(t, rs, Config{Grant: ClientCredentials, ClientID: "machine", ClientSecret: "machine-secret-123"})
	if err := s.listAndCall(); err != nil {
		t.Fatal(err)
	}
	f := as.tokenRequests[0]
	if f.Get("grant_type") != "client_credentials" || f.Get("resource") != rs.Endpoint || f.Get("scope") != "mcp:basic" ||
		!strings.HasPrefix(as.tokenAuth[0], "Basic ") || len(as.authzRequests) != 0 {
		t.Fatalf("token request %v %q", f, as.tokenAuth[0])
	}
	if _, err := New(rs.Endpoint, &Config{Grant: ClientCredentials}); err == nil {
		t.Fatal("client credentials without a client were accepted")
	}
}

// Discovery: the well-known locations when the challenge names none, a
// path issuer's metadata by path insertion, and a PRM at the root naming
// the origin as the resource.
func TestDiscoveryLocations(t *testing.T) {
	as := newTestAS(t, "/tenant1")
	rs := newTestRS(t, as)
	rs.noHeaderMeta, rs.rootPRM = true, true
	rs.resource = strings.TrimSuffix(rs.Endpoint, "/mcp")
	s := newSession(t, rs, Config{Browser: &testBrowser{}})
	if err := s.listAndCall(); err != nil {
		t.Fatal(err)
	}
	if q := as.authzRequests[0]; q.Get("resource") != rs.resource {
		t.Fatalf("resource %q", q.Get("resource"))
	}
	want := []string{
		"https://as.example/.well-known/oauth-authorization-server/t",
		"https://as.example/.well-known/openid-configuration/t",
		"https://as.example/t/.well-known/openid-configuration",
	}
	if got := asmLocations("https://as.example/t"); !slices.Equal(got, want) {
		t.Errorf("path issuer: %v", got)
	}
	if got := asmLocations("https://as.example"); !slices.Equal(got, []string{"https://as.example/.well-known/oauth-authorization-server", "https://as.example/.well-known/openid-configuration"}) {
		t.Errorf("root issuer: %v", got)
	}
	if got := prmLocations("https://mcp.example/a/mcp", ""); !slices.Equal(got, []string{"https://mcp.example/.well-known/oauth-protected-resource/a/mcp", "https://mcp.example/.well-known/oauth-protected-resource"}) {
		t.Errorf("prm: %v", got)
	}
	if got := prmLocations("https://mcp.example/mcp", "https://m.example/x"); !slices.Equal(got, []string{"https://m.example/x"}) {
		t.Errorf("prm from the challenge: %v", got)
	}
}

func TestResourceMatches(t *testing.T) {
	ep := "https://mcp.example.com/api/mcp"
	for res, want := range map[string]bool{
		"https://mcp.example.com/api/mcp":      true,
		"HTTPS://MCP.example.com:443/api/mcp/": true,
		"https://mcp.example.com":              true,
		"https://mcp.example.com/api":          true,
		"https://mcp.example.com/ap":           false,
		"https://mcp.example.com/api/mcp/x":    false,
		"https://evil.example.com/api/mcp":     false,
		"http://mcp.example.com/api/mcp":       false,
		"https://mcp.example.com:8443/api/mcp": false,
		"https://mcp.example.com/api/mcp#f":    false,
		"https://mcp.example.com/api/mcp?x=1":  false,
		"mcp.example.com/api/mcp":              false,
		"":                                     false,
	} {
		if got := resourceMatches(res, ep); got != want {
			t.Errorf("resourceMatches(%q) = %v, want %v", res, got, want)
		}
	}
}

// Hostile authorization servers and metadata: each is refused with a
// clear error, no code reaches a token endpoint that should not get one,
// nothing is stored, and no secret shows in the error or the log.
func TestHostile(t *testing.T) {
	f := false
	tests := []struct {
		name   string
		setup  func(*testAS, *testRS)
		want   func(error) bool
		text   string // in the error
		tokens int    // token requests allowed
	}{
		{"metadata issuer mismatch", func(a *testAS, _ *testRS) { a.metaIssuer = "https://attacker.example.com" },
			isA[*IssuerMismatchError], "names issuer \"https://attacker.example.com\"", 0},
		{"metadata issuer with a trailing slash", func(a *testAS, _ *testRS) { a.metaIssuer = a.Issuer() + "/" },
			isA[*IssuerMismatchError], "names issuer", 0},
		{"resource of another server", func(_ *testAS, r *testRS) { r.resource = "https://evil.example.com/mcp" },
			isA[*ResourceMismatchError], "is for https://evil.example.com/mcp", 0},
		{"token endpoint on plain http off loopback", func(a *testAS, _ *testRS) { a.tokenEndpoint = "http://auth.example.com/token" },
			isA[*InsecureEndpointError], "token_endpoint \"http://auth.example.com/token\" is not an https URL", 0},
		{"metadata redirects to plain http off loopback", func(a *testAS, _ *testRS) { a.metaRedirect = "http://auth.example.com/meta" },
			isA[*InsecureEndpointError], "redirect \"http://auth.example.com/meta\"", 0},
		{"no PKCE S256", func(a *testAS, _ *testRS) { a.pkce = []string{"plain"} },
			is(nil), "S256", 0},
		{"iss of another server", func(a *testAS, _ *testRS) { a.issMode = "wrong" },
			isA[*IssuerMismatchError], "authorization response names issuer \"https://evil.example.com\"", 0},
		{"iss normalized", func(a *testAS, _ *testRS) { a.issMode = "normalized" },
			isA[*IssuerMismatchError], "authorization response", 0},
		{"iss missing though promised", func(a *testAS, _ *testRS) { a.issMode = "omit" },
			is(ErrIssuerMissing), "no iss", 0},
		{"iss of another server, not promised", func(a *testAS, _ *testRS) { a.issMode, a.issSupported = "wrong", &f },
			isA[*IssuerMismatchError], "evil.example.com", 0},
		{"token for another resource", func(a *testAS, _ *testRS) { a.jwtAud = "https://other.example.com/mcp" },
			isA[*AudienceError], "issued a token for https://other.example.com/mcp", 1},
		{"token of another type", func(a *testAS, _ *testRS) { a.tokenType = "DPoP" },
			isA[*TokenError], "token_type \"DPoP\" is not Bearer", 1},
		{"the user refused", func(a *testAS, _ *testRS) { a.denyUser = true },
			isA[*AuthorizationError], "access_denied: the user said no", 0},
		{"token endpoint echoes the secrets", func(a *testAS, _ *testRS) {
			a.regSecret, a.regMethod, a.authMethods, a.refuseTokens = true, "client_secret_post", []string{"client_secret_post"}, true
		}, isA[*TokenError], "invalid_client: echo: ", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			as := newTestAS(t, "")
			rs := newTestRS(t, as)
			tt.setup(as, rs)
			store := &FileStore{Dir: t.TempDir()}
			s := newSession(t, rs, Config{Browser: &testBrowser{}, Store: store})
			err := s.listAndCall()
			var ae *mcpclient.AuthError
			if !errors.As(err, &ae) || ae.StatusCode != 401 || !tt.want(err) || !strings.Contains(err.Error(), tt.text) {
				t.Fatalf("err = %v", err)
			}
			if len(as.tokenRequests) > tt.tokens {
				t.Fatalf("%d token requests", len(as.tokenRequests))
			}
			if entries, _ := os.ReadDir(store.Dir); len(entries) != 0 {
				t.Fatalf("stored: %v", entries)
			}
			noSecrets(t, as, "the error", err.Error())
			noSecrets(t, as, "the log", s.logs.String())
			for _, f := range as.tokenRequests {
				for _, k := range []string{"code", "code_verifier", "client_secret"} {
					if v := f.Get(k); len(v) > 3 && (strings.Contains(err.Error(), v) || strings.Contains(err.Error(), url.QueryEscape(v))) {
						t.Errorf("the error shows the %s", k)
					}
				}
			}
		})
	}
}

func isA[T error](err error) bool {
	var t T
	return errors.As(err, &t)
}

func is(target error) func(error) bool {
	return func(err error) bool { return target == nil || errors.Is(err, target) }
}

// A JWT access token for the resource is accepted; the audience check
// reads string and array claims and ignores opaque tokens.
func TestJWTAudience(t *testing.T) {
	as := newTestAS(t, "")
	as.jwtAud = "=resource"
	rs := newTestRS(t, as)
	if err := newSession(t, rs, Config{Browser: &testBrowser{}}).listAndCall(); err != nil {
		t.Fatal(err)
	}
	for tok, want := range map[string][]string{
		"opaque":                             nil,
		"a.b":                                nil,
		jwt(`{"alg":"none"}`, `{"aud":"x"}`): {"x"},
		jwt(`{"alg":"ES256"}`, `{"aud":["x","y"]}`): {"x", "y"},
		jwt(`{"alg":"ES256"}`, `{"sub":"a"}`):       nil,
		jwt(`{"typ":"JWT"}`, `{"aud":"x"}`):         nil,
		jwt(`{"alg":"ES256"}`, `{"aud":5}`):         {"5"},
	} {
		got, _ := jwtAudience(tok)
		if !slices.Equal(got, want) {
			t.Errorf("jwtAudience(%s) = %v, want %v", tok, got, want)
		}
	}
}

func jwt(header, payload string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(header)) + "." + base64.RawURLEncoding.EncodeToString([]byte(payload)) + ".sig"
}
