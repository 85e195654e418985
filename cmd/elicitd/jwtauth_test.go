package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mcp-elicit/elicit/connect"
	"github.com/mcp-elicit/elicit/internal/fakeidp"
)

const pagesSecret = "pages-client-secret-7d1e"

// newJWTEnv runs elicitd with --auth jwt against a fresh fake issuer.
func newJWTEnv(t *testing.T) (*env, *fakeidp.Server) {
	t.Helper()
	idp := fakeidp.Start(t)
	e := newEnvWith(t, func(c *config) {
		// The issuer stamps tokens with the real clock, so elicitd reads
		// the real clock too: a clock frozen at the start of the test put
		// a slow (loaded) test's tokens more than the leeway "in the
		// future" (iat) and refused them.
		c.now = time.Now
		c.auth = authConfig{mode: "jwt", issuer: idp.URL, clientID: "elicitd-pages", clientSecret: pagesSecret}
		if err := c.auth.check(c.publicURL); err != nil {
			t.Fatal(err)
		}
		idp.AddClient(fakeidp.Client{ID: "elicitd-pages", Secret: pagesSecret, RedirectURL: c.publicURL + connect.SignInCallbackPath})
	})
	return e, idp
}

// oidcLogin opens link in b, which has no session: elicitd sends it to
// its sign-in, which sends it to the issuer, where it signs in as user;
// the callback then returns it to link. It returns the page link shows.
func (b *browser) oidcLogin(base, link, user string) (int, string) {
	b.t.Helper()
	loc := b.openSignedOut(link)
	status, authz, _ := b.get(base + loc)
	if status != http.StatusSeeOther {
		b.t.Fatalf("GET %s: %d, want 303 to the issuer", loc, status)
	}
	u, _ := url.Parse(authz)
	q := u.Query()
	q.Set("username", user)
	status, cb, _ := b.post(u.Scheme+"://"+u.Host+u.Path, q)
	if status != http.StatusFound || !strings.HasPrefix(cb, base+connect.SignInCallbackPath+"?") {
		b.t.Fatalf("issuer sign-in: %d %q", status, cb)
	}
	status, back, _ := b.get(cb)
	if status != http.StatusSeeOther || base+back != link {
		b.t.Fatalf("callback: %d to %q, want %q", status, back, link)
	}
	status, _, page := b.get(link)
	return status, page
}

// TestJWTAuth: bearer JWTs on /mcp, the protected resource metadata, and
// the challenges for every kind of bad token.
func TestJWTAuth(t *testing.T) {
	e, idp := newJWTEnv(t)
	other := fakeidp.Start(t) // another issuer with its own keys
	resource := e.url + "/mcp"
	prmURL := e.url + "/.well-known/oauth-protected-resource/mcp"

	for _, path := range []string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"} {
		resp, err := http.Get(e.url + path)
		if err != nil {
			t.Fatal(err)
		}
		var m struct {
			Resource             string   `json:"resource"`
			AuthorizationServers []string `json:"authorization_servers"`
			BearerMethods        []string `json:"bearer_methods_supported"`
		}
		err = json.NewDecoder(resp.Body).Decode(&m)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 || m.Resource != resource || len(m.AuthorizationServers) != 1 || m.AuthorizationServers[0] != idp.URL ||
			len(m.BearerMethods) != 1 || m.BearerMethods[0] != "header" {
			t.Fatalf("GET %s: %d %+v %v", path, resp.StatusCode, m, err)
		}
	}

	good := fakeidp.Claims{Subject: "alice", Audience: []string{resource}}
	with := func(f func(*fakeidp.Claims)) fakeidp.Claims { c := good; f(&c); return c }
	invalid := `Bearer error="invalid_token", resource_metadata="` + prmURL + `"`
	tests := []struct {
		name      string
		token     string // "" = no Authorization header
		status    int
		challenge string
	}{
		{"valid RS256", idp.Sign(fakeidp.RS256, good), 200, ""},
		{"valid ES256", idp.Sign(fakeidp.ES256, good), 200, ""},
		{"no token", "", 401, `Bearer resource_metadata="` + prmURL + `"`},
		{"expired", idp.Sign(fakeidp.RS256, with(func(c *fakeidp.Claims) { c.Expiry = time.Now().Add(-5 * time.Minute) })), 401, invalid},
		{"wrong audience", idp.Sign(fakeidp.RS256, with(func(c *fakeidp.Claims) { c.Audience = []string{e.url + "/other"} })), 401, invalid},
		{"audience is the pages client", idp.Sign(fakeidp.RS256, with(func(c *fakeidp.Claims) { c.Audience = []string{"elicitd-pages"} })), 401, invalid},
		{"wrong issuer claim", idp.Sign(fakeidp.RS256, with(func(c *fakeidp.Claims) { c.Issuer = other.URL })), 401, invalid},
		{"another issuer's token", other.Sign(fakeidp.RS256, good), 401, invalid},
		{"alg none", idp.Sign(fakeidp.None, good), 401, invalid},
		{"HMAC keyed with the public key", idp.Sign(fakeidp.HS256PublicKey, good), 401, invalid},
		{"wrong key", idp.Sign(fakeidp.RS256OtherKey, good), 401, invalid},
		{"not a JWT", "alice", 401, invalid},
	}
	var tokens []string
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			extra := []string{}
			if tt.token == "" {
				extra = append(extra, "Authorization:")
			}
			tokens = append(tokens, tt.token)
			r := e.mcp(tt.token, "tools/list", "", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{`+metaURL+`}}`, extra...)
			if tt.status == 200 {
				if r.Status != 200 || r.Result == nil {
					t.Fatalf("refused: %d %s", r.Status, r.Raw)
				}
				return
			}
			if r.Status != tt.status {
				t.Fatalf("HTTP %d, want %d: %s", r.Status, tt.status, r.Raw)
			}
			if got := r.Header.Get("WWW-Authenticate"); got != tt.challenge {
				t.Fatalf("WWW-Authenticate %q\nwant             %q", got, tt.challenge)
			}
		})
	}
	for _, tok := range tokens {
		if len(tok) > 8 && strings.Contains(e.logs.String(), tok) {
			t.Errorf("a token appears in the log")
		}
	}
}

// TestJWTAuthPagesSameUser: alice's flow, started with alice's JWT, is
// refused to a browser signed in at the issuer as bob (403, nothing
// stored) and finished by one signed in as alice; the retry then succeeds.
func TestJWTAuthPagesSameUser(t *testing.T) {
	e, idp := newJWTEnv(t)
	aliceTok := idp.Sign(fakeidp.RS256, fakeidp.Claims{Subject: "alice", Audience: []string{e.url + "/mcp"}})
	bobTok := idp.Sign(fakeidp.RS256, fakeidp.Claims{Subject: "bob", Audience: []string{e.url + "/mcp"}})

	r := e.connect(1, aliceTok, "")
	if r.Status != 200 || r.resultType() != "input_required" {
		t.Fatalf("call: %s", r.Raw)
	}
	_, _, link := r.elicitation(t)
	state := r.state()

	// bob's browser signs in at the issuer as bob: refused, nothing stored.
	bob := e.browser()
	status, page := bob.oidcLogin(e.url, link, "bob")
	if status != http.StatusForbidden || !strings.Contains(page, `id="wrong-account"`) {
		t.Fatalf("bob on alice's page: %d\n%s", status, page)
	}
	if status, page = bob.fillKey(e.url, page, link, "sk_bob_would_be_stored"); status != http.StatusForbidden {
		t.Fatalf("bob's key POST: %d\n%s", status, page)
	}
	if !strings.Contains(e.logs.String(), "session_principal="+idp.URL+"#bob") {
		t.Errorf("the refusal is not logged with bob's principal")
	}
	if r := e.connect(2, aliceTok, answer("accept", state)); r.resultType() != "input_required" {
		t.Fatalf("after bob's attempt alice's retry must still wait: %s", r.Raw)
	}
	// bob's own token sees bob's vault: empty too.
	if r := e.connect(3, bobTok, ""); r.resultType() != "input_required" {
		t.Fatalf("bob's own call: %s", r.Raw)
	}

	// alice's browser signs in as alice and stores the key.
	alice := e.browser()
	status, page = alice.oidcLogin(e.url, link, "alice")
	if status != 200 || !strings.Contains(page, `id="key-form"`) {
		t.Fatalf("alice's key page: %d\n%s", status, page)
	}
	if status, page = alice.fillKey(e.url, page, link, testKey); status != 200 || !strings.Contains(page, `id="done"`) {
		t.Fatalf("alice's key POST: %d\n%s", status, page)
	}
	r = e.connect(4, aliceTok, answer("accept", state))
	if r.resultType() != "complete" || r.isError() || !strings.Contains(r.text(), "connected") {
		t.Fatalf("alice's retry: %s", r.Raw)
	}
	// The same subject at the same issuer is one user, whatever the token.
	alice2 := idp.Sign(fakeidp.ES256, fakeidp.Claims{Subject: "alice", Audience: []string{e.url + "/mcp"}})
	if r := e.connect(5, alice2, ""); r.resultType() != "complete" || !strings.Contains(r.text(), "already") {
		t.Fatalf("alice with another token: %s", r.Raw)
	}

	checkJWTLogs(t, e, idp.URL, map[string]string{"alice's token": aliceTok, "bob's token": bobTok, "the key": testKey, "the client secret": pagesSecret})
}

// checkJWTLogs checks the log of the same-user test: none of secrets, no
// authorization code of the two sign-in callbacks, and alice's flow under
// her issuer#subject principal.
func checkJWTLogs(t *testing.T, e *env, issuer string, secrets map[string]string) {
	t.Helper()
	logs := e.logs.String()
	for name, secret := range secrets {
		if strings.Contains(logs, secret) {
			t.Errorf("%s appears in the log", name)
		}
	}
	// No authorization code either (they travel in the callback URLs).
	e.rec.mu.Lock()
	seen := append([]string(nil), e.rec.seen...)
	e.rec.mu.Unlock()
	codes := 0
	for _, s := range seen {
		if u, err := url.Parse(strings.TrimPrefix(s, "URL ")); err == nil && strings.HasPrefix(s, "URL ") && u.Path == connect.SignInCallbackPath {
			codes++
			if c := u.Query().Get("code"); c == "" || strings.Contains(logs, c) {
				t.Errorf("callback without a code, or the code %q appears in the log", c)
			}
		}
	}
	if codes != 2 {
		t.Errorf("%d sign-in callbacks seen, want 2", codes)
	}
	if !bytes.Contains([]byte(logs), []byte("principal="+issuer+"#alice")) {
		t.Errorf("alice's flow is not logged under her issuer#subject principal")
	}
}

// TestAuthSettings: --auth and its settings through flags, environment
// and file, and the combinations refused at start.
func TestAuthSettings(t *testing.T) {
	file := writeConfig(t, `{"auth": "jwt", "jwt-issuer": "https://idp.example.com", "oidc-client-id": "pages", "jwt-scopes": "mcp:tools, mcp:read"}`)
	ok := []struct {
		name string
		args []string
		env  map[string]string
		want func(*config) bool
	}{
		{"demo by default", nil, nil, func(c *config) bool { return c.auth.mode == "demo" }},
		{"jwt from flags", []string{"--auth", "jwt", "--jwt-issuer", "https://idp.example.com", "--oidc-client-id", "pages", "--public-url", "https://mcp.example.com"}, nil,
			func(c *config) bool {
				return c.auth.mode == "jwt" && c.auth.resource == "https://mcp.example.com/mcp" && c.auth.clientID == "pages" &&
					strings.Join(c.auth.algs, ",") == "RS256,ES256" && c.auth.clientSecret == ""
			}},
		{"jwt from file, secret from env", []string{"--config", file}, map[string]string{"ELICIT_OIDC_CLIENT_SECRET": "s", "ELICIT_JWT_ALGS": "ES256"},
			func(c *config) bool {
				return c.auth.issuer == "https://idp.example.com" && c.auth.clientSecret == "s" && strings.Join(c.auth.algs, ",") == "ES256" &&
					strings.Join(c.auth.scopes, " ") == "mcp:tools mcp:read" && c.auth.resource == "http://127.0.0.1:3000/mcp"
			}},
		{"jwt off loopback needs no demo flag", []string{"--config", file, "--addr", "0.0.0.0:3000", "--public-url", "https://mcp.example.com", "--jwt-resource", "https://mcp.example.com/mcp"}, nil,
			func(c *config) bool { return c.auth.resource == "https://mcp.example.com/mcp" }},
	}
	for _, tt := range ok {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := loadConfig(tt.args, func(k string) string { return tt.env[k] }, &bytes.Buffer{})
			if err != nil {
				t.Fatal(err)
			}
			if !tt.want(cfg) {
				t.Fatalf("config = %+v", cfg.auth)
			}
		})
	}
	bad := []struct {
		name string
		args []string
		want string
	}{
		{"unknown mode", []string{"--auth", "oauth"}, "want demo or jwt"},
		{"jwt without issuer", []string{"--auth", "jwt", "--oidc-client-id", "p"}, "needs --jwt-issuer"},
		{"jwt without client id", []string{"--auth", "jwt", "--jwt-issuer", "https://idp.example.com"}, "needs --oidc-client-id"},
		{"http issuer", []string{"--auth", "jwt", "--jwt-issuer", "http://idp.example.com", "--oidc-client-id", "p"}, "--jwt-issuer"},
		{"issuer without jwt", []string{"--jwt-issuer", "https://idp.example.com"}, "--auth demo does not use --jwt-issuer: remove it or pass --auth jwt"},
		{"scopes under demo", []string{"--auth", "demo", "--jwt-scopes", "a"}, "--auth demo does not use --jwt-scopes"},
		{"algs under demo", []string{"--jwt-algs", "ES256"}, "does not use --jwt-algs"},
		{"resource under demo", []string{"--jwt-resource", "https://mcp.example.com/mcp"}, "does not use --jwt-resource"},
		{"client id under demo", []string{"--oidc-client-id", "p"}, "does not use --oidc-client-id"},
		{"client secret under demo", []string{"--auth=demo"}, "does not use ELICIT_OIDC_CLIENT_SECRET"},
		{"jwt settings in a file under demo", []string{"--config", writeConfig(t, `{"jwt-scopes": "a", "jwt-algs": "RS256"}`)}, "does not use --jwt-algs, --jwt-scopes: remove them"},
		{"demo off loopback", []string{"--addr", "0.0.0.0:3000"}, "insecure-demo-auth"},
		{"client secret in a file", []string{"--config", writeConfig(t, `{"oidc-client-secret": "x"}`)}, "ELICIT_OIDC_CLIENT_SECRET"},
		{"demo auth under jwt", []string{"--auth", "jwt", "--jwt-issuer", "https://idp.example.com", "--oidc-client-id", "p", "--insecure-demo-auth"}, "--auth jwt does not use --insecure-demo-auth"},
		{"empty alg", []string{"--auth", "jwt", "--jwt-issuer", "https://idp.example.com", "--oidc-client-id", "p", "--jwt-algs", "RS256,,ES256"}, `--jwt-algs: empty entry in "RS256,,ES256"`},
		{"trailing comma in scopes", []string{"--auth", "jwt", "--jwt-issuer", "https://idp.example.com", "--oidc-client-id", "p", "--jwt-scopes", "a,"}, "--jwt-scopes: empty entry"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			env := func(k string) string {
				if k == "ELICIT_OIDC_CLIENT_SECRET" && strings.Contains(tt.name, "secret under demo") {
					return "s3cret"
				}
				return ""
			}
			_, err := loadConfig(tt.args, env, &bytes.Buffer{})
			if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "s3cret") {
				t.Fatalf("got %v, want an error with %q", err, tt.want)
			}
		})
	}
}
