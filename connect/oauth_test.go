package connect_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/mcp-elicit/elicit/connect"
	"github.com/mcp-elicit/elicit/internal/fakeoauth"
	"github.com/mcp-elicit/elicit/store"
	"github.com/mcp-elicit/elicit/store/sqlite"
)

const oauthPurpose = "calendar"

// oauthHarness is a harness with a fake provider registered for
// oauthPurpose; both share the test clock.
type oauthHarness struct {
	*harness
	provider *fakeoauth.Server
}

func newOAuthHarness(t *testing.T) *oauthHarness {
	return newOAuthHarnessTTL(t, 0)
}

// newOAuthHarnessTTL sets the provider's access token lifetime (0: its
// default).
func newOAuthHarnessTTL(t *testing.T, tokenTTL time.Duration) *oauthHarness {
	t.Helper()
	h := newHarness(t)
	p, err := fakeoauth.Start("127.0.0.1:0", &fakeoauth.Options{Now: h.clock.Now, TokenTTL: tokenTTL})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	if err := p.RegisterClient(fakeoauth.Client{ID: "srv", Secret: "srv-secret", RedirectURI: h.srv.URL + "/connect/callback"}); err != nil {
		t.Fatal(err)
	}
	if err := h.svc.AddOAuthProvider(testProvider(p)); err != nil {
		t.Fatal(err)
	}
	return &oauthHarness{harness: h, provider: p}
}

func testProvider(p *fakeoauth.Server) connect.OAuthProvider {
	return connect.OAuthProvider{Purpose: oauthPurpose, Name: "Test calendar", Config: oauth2.Config{
		ClientID: "srv", ClientSecret: "srv-secret", Scopes: []string{fakeoauth.Scope},
		Endpoint: oauth2.Endpoint{AuthURL: p.AuthURL(), TokenURL: p.TokenURL(), AuthStyle: oauth2.AuthStyleInHeader},
	}}
}

func (h *oauthHarness) startOAuthFlow(principal string) *store.Flow {
	h.t.Helper()
	f, err := h.svc.StartFlow(context.Background(), principal, oauthPurpose)
	if err != nil {
		h.t.Fatal(err)
	}
	return f
}

var requestRE = regexp.MustCompile(`name="request" value="([^"]+)"`)

// authorize runs c (signed in) through /connect/<id> and the provider's
// approval as user, and returns the callback URL, not yet visited.
func (h *oauthHarness) authorize(c *http.Client, f *store.Flow, user string) string {
	h.t.Helper()
	resp, body := h.get(c, "/connect/"+f.ID)
	wantStatus(h.t, resp, http.StatusOK)
	resp, _ = h.post(c, "/connect/"+f.ID, url.Values{"csrf": {field(h.t, csrfRE, body)}})
	wantStatus(h.t, resp, http.StatusSeeOther)
	auth := resp.Header.Get("Location")
	pc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	presp, err := pc.Get(auth)
	if err != nil {
		h.t.Fatal(err)
	}
	page, _ := io.ReadAll(presp.Body)
	presp.Body.Close()
	m := requestRE.FindSubmatch(page)
	if m == nil {
		h.t.Fatalf("provider page: %d %s", presp.StatusCode, page)
	}
	presp, err = pc.PostForm(h.provider.AuthURL(), url.Values{"request": {string(m[1])}, "username": {user}, "decision": {"approve"}})
	if err != nil {
		h.t.Fatal(err)
	}
	presp.Body.Close()
	return presp.Header.Get("Location")
}

// signedInCallback starts an OAuth flow for user, signs a new browser in
// as user and takes it through the provider; it returns the flow, the
// browser and the callback URL, not yet visited.
func (h *oauthHarness) signedInCallback(user string) (*store.Flow, *http.Client, string) {
	h.t.Helper()
	f := h.startOAuthFlow(user)
	c := h.client()
	h.login(c, user, "/ui/")
	return f, c, h.authorize(c, f, user)
}

func (h *oauthHarness) wantNoToken(principal string) {
	h.t.Helper()
	if ok, err := h.svc.HasSecret(context.Background(), principal, oauthPurpose); err != nil || ok {
		h.t.Fatalf("HasSecret(%s) = %v, %v; want nothing stored", principal, ok, err)
	}
}

func TestAddOAuthProviderValidation(t *testing.T) {
	h := newHarness(t)
	good := connect.OAuthProvider{Purpose: "cal", Config: oauth2.Config{ClientID: "c",
		Endpoint: oauth2.Endpoint{AuthURL: "https://p.example/authorize", TokenURL: "https://p.example/token"}}}
	cases := []struct {
		name string
		mod  func(p *connect.OAuthProvider)
	}{
		{"bad purpose", func(p *connect.OAuthProvider) { p.Purpose = "a b" }},
		{"no client id", func(p *connect.OAuthProvider) { p.Config.ClientID = "" }},
		{"no auth URL", func(p *connect.OAuthProvider) { p.Config.Endpoint.AuthURL = "" }},
		{"relative token URL", func(p *connect.OAuthProvider) { p.Config.Endpoint.TokenURL = "/token" }},
		{"other scheme", func(p *connect.OAuthProvider) { p.Config.Endpoint.AuthURL = "javascript:alert(1)" }},
	}
	for _, tc := range cases {
		p := good
		tc.mod(&p)
		if err := h.svc.AddOAuthProvider(p); err == nil {
			t.Errorf("%s: accepted", tc.name)
		}
	}
	if err := h.svc.AddOAuthProvider(good); err != nil {
		t.Fatal(err)
	}
	if err := h.svc.AddOAuthProvider(good); err == nil {
		t.Fatal("a purpose registered twice was accepted")
	}
	if _, err := h.svc.OAuthToken(context.Background(), "alice", "billing_key"); err == nil || errors.Is(err, store.ErrNotFound) {
		t.Fatalf("OAuthToken for a purpose without provider: %v", err)
	}
	if _, err := h.svc.OAuthToken(context.Background(), "alice", "cal"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("OAuthToken before connecting: %v, want ErrNotFound", err)
	}
}

// The key page and the OAuth page each refuse the other's flows, so no
// key can be typed in where tokens belong.
func TestOAuthAndKeyPagesKeepApart(t *testing.T) {
	h := newOAuthHarness(t)
	of, kf := h.startOAuthFlow("alice"), h.startFlow("alice")
	if got := h.svc.FlowURL(of); got != h.srv.URL+"/connect/"+of.ID {
		t.Fatalf("FlowURL = %s", got)
	}
	alice := h.client()
	h.login(alice, "alice", "/ui/")
	resp, body := h.get(alice, "/ui/set_api_key?flow="+of.ID)
	wantStatus(t, resp, http.StatusNotFound)
	csrf := h.sessionCSRF(alice)
	resp, _ = h.post(alice, "/ui/set_api_key", url.Values{"api_key": {"not-a-token"}, "csrf": {csrf}, "flow": {of.ID}})
	wantStatus(t, resp, http.StatusNotFound)
	h.wantNoToken("alice")
	resp, _ = h.get(alice, "/connect/"+kf.ID)
	wantStatus(t, resp, http.StatusNotFound)
	resp, _ = h.post(alice, "/connect/"+kf.ID, url.Values{"csrf": {csrf}})
	wantStatus(t, resp, http.StatusNotFound)
	for _, p := range []string{"/connect/", "/connect/nothex", "/connect/" + strings.Repeat("a", 33)} {
		resp, _ = h.get(alice, p)
		wantStatus(t, resp, http.StatusNotFound)
	}
	resp, _ = h.post(alice, "/connect/callback", url.Values{})
	wantStatus(t, resp, http.StatusMethodNotAllowed)
	req, _ := http.NewRequest(http.MethodHead, h.abs("/connect/callback?state="+strings.Repeat("A", 43)), nil)
	resp, _ = h.do(alice, req)
	wantStatus(t, resp, http.StatusMethodNotAllowed)
	_ = body
	if n := h.provider.AuthorizeRequests(); n != 0 {
		t.Fatalf("provider saw %d authorize requests", n)
	}
}

// Unauthenticated, /connect/<id> sends the browser to the login page and
// back; the page then shows the signed-in user and the provider.
func TestOAuthLoginRoundTrip(t *testing.T) {
	h := newOAuthHarness(t)
	f := h.startOAuthFlow("alice")
	alice := h.client()
	resp, _ := h.get(alice, "/connect/"+f.ID)
	wantStatus(t, resp, http.StatusSeeOther)
	if loc := resp.Header.Get("Location"); loc != "/ui/login?next="+url.QueryEscape("/connect/"+f.ID) {
		t.Fatalf("Location %q", loc)
	}
	if back := h.login(alice, "alice", "/connect/"+f.ID); back != "/connect/"+f.ID {
		t.Fatalf("login redirected to %q", back)
	}
	resp, body := h.get(alice, "/connect/"+f.ID)
	wantStatus(t, resp, http.StatusOK)
	wantContains(t, body, `id="whoami"`, "alice", "Test calendar", strings.TrimPrefix(h.provider.URL(), "http://"))
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "form-action 'self' "+h.provider.URL()+";") {
		t.Fatalf("CSP %q does not let the form lead to the provider", csp)
	}
}

// Of several concurrent callbacks with one state, exactly one stores.
func TestOAuthConcurrentCallbacks(t *testing.T) {
	h := newOAuthHarness(t)
	_, alice, cb := h.signedInCallback("alice")
	oneWins(t, 8, http.StatusBadRequest, func(int) (*http.Response, error) { return alice.Get(cb) })
	if n := len(h.auditLines("flow_completed")); n != 1 {
		t.Fatalf("%d flow_completed lines, want 1", n)
	}
}

// A state older than AttemptTTL is refused even though the flow lives on.
func TestOAuthAttemptExpires(t *testing.T) {
	h := newOAuthHarness(t)
	f, alice, cb := h.signedInCallback("alice")
	h.clock.Advance(connect.AttemptTTL)
	resp, body := h.get(alice, cb)
	wantStatus(t, resp, http.StatusBadRequest)
	wantContains(t, body, `id="refused"`)
	h.wantNoToken("alice")
	h.wantPending(f)
	if lines := h.auditLines("oauth_callback_refused"); len(lines) != 1 || !strings.Contains(lines[0], "expired_state") {
		t.Fatalf("audit: %v", lines)
	}
}

// After the flow completes, the stored token works against the provider;
// an expiring one is refreshed and the rotated tokens are stored, so the
// next client still works.
func TestOAuthTokenUse(t *testing.T) {
	// x/oauth2 treats a token as expired 10 s early (on the system clock),
	// so a 5-second lifetime makes every new client refresh.
	h := newOAuthHarnessTTL(t, 5*time.Second)
	h.provider.SetEvents("alice", []fakeoauth.Event{{ID: "1", Title: "Alice only"}})
	_, alice, cb := h.signedInCallback("alice")
	resp, body := h.get(alice, cb)
	wantStatus(t, resp, http.StatusOK)
	wantContains(t, body, `id="done"`)
	ctx := context.Background()
	tok, err := h.svc.OAuthToken(ctx, "alice", oauthPurpose)
	if err != nil || tok.AccessToken == "" || tok.RefreshToken == "" {
		t.Fatalf("OAuthToken: %+v, %v", tok, err)
	}
	if _, err := h.svc.OAuthToken(ctx, "bob", oauthPurpose); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("bob's token: %v", err)
	}
	get := func() string {
		t.Helper()
		c, err := h.svc.OAuthClient(ctx, "alice", oauthPurpose)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := c.Get(h.provider.EventsURL())
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return fmt.Sprint(resp.StatusCode, " ", string(b))
	}
	for i := range 3 {
		if got := get(); !strings.HasPrefix(got, "200 ") || !strings.Contains(got, "Alice only") {
			t.Fatalf("events, client %d: %s", i, got)
		}
		now, err := h.svc.OAuthToken(ctx, "alice", oauthPurpose)
		if err != nil || now.AccessToken == tok.AccessToken || now.RefreshToken == tok.RefreshToken {
			t.Fatalf("client %d: the refreshed token was not stored: %v", i, err)
		}
		h.assertNoLeak(now.AccessToken)
		tok = now
	}
	if n := len(h.auditLines("oauth_token_refreshed")); n != 3 {
		t.Fatalf("%d oauth_token_refreshed lines, want 3", n)
	}
	// The browser carried the code in the callback URL (its job); tokens
	// appear nowhere, and nothing the provider issued is in the log.
	h.assertNoLeak(tok.AccessToken)
	h.assertNoLeak(tok.RefreshToken)
	for _, s := range h.provider.Issued() {
		if strings.Contains(h.logs.String(), s) {
			t.Fatal("a code or token the provider issued is in the log")
		}
	}
}

// Session cookies of earlier versions (unprefixed, under Path=/ui or /)
// sign no one in, even holding a live session id; signing in expires
// both and sets the __Host- one.
func TestLegacyCookiePath(t *testing.T) {
	h := newHarness(t)
	alice := h.client()
	h.login(alice, "alice", "/ui/")
	sid := h.sessionID(alice)
	old := h.client()
	u, _ := url.Parse(h.srv.URL + "/ui/")
	old.Jar.SetCookies(u, []*http.Cookie{{Name: connect.SessionCookie, Value: sid, Path: "/ui"}})
	root, _ := url.Parse(h.srv.URL + "/")
	old.Jar.SetCookies(root, []*http.Cookie{{Name: connect.SessionCookie, Value: strings.Repeat("B", 43), Path: "/"}})
	resp, _ := h.get(old, "/ui/")
	wantStatus(t, resp, http.StatusSeeOther)
	resp, body := h.get(old, "/ui/login")
	resp, _ = h.post(old, "/ui/login", url.Values{"username": {"carol"}, "csrf": {field(t, csrfRE, body)}, "next": {"/ui/"}})
	wantStatus(t, resp, http.StatusSeeOther)
	expired := map[string]bool{}
	for _, c := range resp.Cookies() {
		if c.Name == connect.SessionCookie && c.MaxAge < 0 {
			expired[c.Path] = true
		}
	}
	if !expired["/ui"] || !expired["/"] {
		t.Fatalf("login did not expire the old cookies under /ui and /: %v", resp.Header["Set-Cookie"])
	}
	if resp, body := h.get(old, "/ui/"); resp.StatusCode != 200 || !strings.Contains(body, "carol") {
		t.Fatalf("after login: %d\n%s", resp.StatusCode, body)
	}
	// alice's own session is untouched by all this.
	if resp, body := h.get(alice, "/ui/"); resp.StatusCode != 200 || !strings.Contains(body, "alice") {
		t.Fatalf("alice: %d\n%s", resp.StatusCode, body)
	}
}

// FuzzCallback sends arbitrary queries to /connect/callback from a signed-in
// browser: nothing is ever stored, no page says done, and nothing panics.
func FuzzCallback(f *testing.F) {
	f.Add("code=abc&state=" + strings.Repeat("A", 43))
	f.Add("state=" + strings.Repeat("A", 43) + "&state=x")
	f.Add("error=access_denied&state=%zz")
	f.Add("code=&state=")
	dir := f.TempDir()
	st, err := sqlite.Open(filepath.Join(dir, "elicit.db"))
	if err != nil {
		f.Fatal(err)
	}
	defer st.Close()
	svc, err := connect.New(connect.Options{Store: st, MasterKey: make([]byte, 32), BaseURL: "http://127.0.0.1:1", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		f.Fatal(err)
	}
	if err := svc.AddOAuthProvider(connect.OAuthProvider{Purpose: oauthPurpose, Config: oauth2.Config{ClientID: "c",
		Endpoint: oauth2.Endpoint{AuthURL: "http://127.0.0.1:1/authorize", TokenURL: "http://127.0.0.1:1/token"}}}); err != nil {
		f.Fatal(err)
	}
	ctx := context.Background()
	now := time.Now()
	sess := &store.Session{ID: strings.Repeat("s", 43), Principal: "alice", CSRF: strings.Repeat("c", 43), CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	if err := st.CreateSession(ctx, sess); err != nil {
		f.Fatal(err)
	}
	flow, err := svc.StartFlow(ctx, "alice", oauthPurpose)
	if err != nil {
		f.Fatal(err)
	}
	h := svc.Handler()
	f.Fuzz(func(t *testing.T, query string) {
		req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1:1/connect/callback", nil)
		req.URL.RawQuery = query
		req.AddCookie(&http.Cookie{Name: svc.CookieName(connect.SessionCookie), Value: sess.ID})
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code == http.StatusOK || strings.Contains(rec.Body.String(), `id="done"`) || rec.Header().Get("Location") != "" {
			t.Fatalf("query %q: %d %q", query, rec.Code, rec.Header().Get("Location"))
		}
		if got, err := svc.Flow(ctx, flow.ID); err != nil || got.Status != store.FlowPending {
			t.Fatalf("flow after %q: %+v %v", query, got, err)
		}
	})
}

func ExampleService_AddOAuthProvider() {
	st, key, cleanup := exampleStore()
	defer cleanup()
	svc, err := connect.New(connect.Options{Store: st, MasterKey: key, BaseURL: "https://mcp.example.com", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		panic(err)
	}
	// The server is an OAuth client of a calendar provider, registered
	// there with the redirect URI https://mcp.example.com/connect/callback.
	err = svc.AddOAuthProvider(connect.OAuthProvider{
		Purpose: "calendar",
		Name:    "Example Calendar",
		Config: oauth2.Config{
			ClientID: "mcp-server", ClientSecret: "from-your-secret-store", Scopes: []string{"events.read"},
			Endpoint: oauth2.Endpoint{AuthURL: "https://calendar.example/authorize", TokenURL: "https://calendar.example/token", AuthStyle: oauth2.AuthStyleInHeader},
		},
	})
	if err != nil {
		panic(err)
	}
	// A flow for that purpose points at this server's own connect route,
	// which checks the browser user before redirecting to the provider.
	f, err := svc.StartFlow(context.Background(), "alice", "calendar")
	if err != nil {
		panic(err)
	}
	fmt.Println(strings.TrimSuffix(svc.FlowURL(f), f.ID) + "<flow id>")
	// Later, server-side only: svc.OAuthClient(ctx, "alice", "calendar")
	// calls the provider's API with alice's token.
	// Output:
	// https://mcp.example.com/connect/<flow id>
}
