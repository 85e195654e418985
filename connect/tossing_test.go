package connect_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcp-elicit/elicit/connect"
	"github.com/mcp-elicit/elicit/store"
	"github.com/mcp-elicit/elicit/store/sqlite"
)

// tempStore is a fresh SQLite store, closed when tb ends.
func tempStore(tb testing.TB) store.Store {
	tb.Helper()
	st, err := sqlite.Open(filepath.Join(tb.TempDir(), "db"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	return st
}

// plant puts a cookie into c's jar as another origin of the same host
// would (cookies ignore the port): name=value under path.
func (h *harness) plant(c *http.Client, name, value, path string) {
	h.t.Helper()
	u, _ := url.Parse(h.srv.URL + path)
	c.Jar.SetCookies(u, []*http.Cookie{{Name: name, Value: value, Path: path}})
}

// wantCookieConflict checks a refusal for repeated cookies: 400, the
// page's explanation, no form, and every copy of the cookie expired.
func wantCookieConflict(t *testing.T, resp *http.Response, body string) {
	t.Helper()
	wantStatus(t, resp, http.StatusBadRequest)
	wantContains(t, body, `id="cookie-conflict"`, "more than one sign-in cookie", "Nothing was stored", "Clear the cookies of 127.0.0.1")
	if strings.Contains(body, `<form`) {
		t.Errorf("the refusal holds a form:\n%s", body)
	}
}

// TestCookieTossing is the attack: mallory, on another port of the same
// host, plants her own live session id under the path of the key page
// (or of /connect/), where the browser sends it before alice's own; alice
// opens mallory's link. She must be refused, not shown the page as
// mallory, and nothing may be stored for anyone.
func TestCookieTossing(t *testing.T) {
	h := newOAuthHarness(t)
	mallory := h.client()
	h.login(mallory, "mallory", "/ui/")
	msid := h.sessionID(mallory)
	keyFlow := h.startFlow("mallory")
	oauthFlow := h.startOAuthFlow("mallory")
	const key = "sk_live_ALICE_KEY_123"

	for _, tc := range []struct {
		name, plantPath, link, post string
	}{
		{"key page", "/ui/set_api_key", flowPath(keyFlow), "/ui/set_api_key"},
		{"connect page", "/connect/", "/connect/" + oauthFlow.ID, "/connect/" + oauthFlow.ID},
		{"connect page, exact path", "/connect/" + oauthFlow.ID, "/connect/" + oauthFlow.ID, "/connect/" + oauthFlow.ID},
	} {
		t.Run(tc.name, func(t *testing.T) {
			alice := h.client()
			h.login(alice, "alice", "/ui/")
			h.plant(alice, connect.SessionCookie, msid, tc.plantPath)
			resp, body := h.get(alice, tc.link)
			wantCookieConflict(t, resp, body)
			if strings.Contains(body, "mallory") {
				t.Fatalf("alice was shown mallory's page:\n%s", body)
			}
			expired := map[string]bool{}
			for _, c := range resp.Cookies() {
				if c.MaxAge < 0 {
					expired[c.Name+" "+c.Path] = true
				}
			}
			for _, want := range []string{"elicit_session /", "elicit_session " + tc.plantPath, "__Host-elicit_session /"} {
				if !expired[want] {
					t.Errorf("not expired: %s (got %v)", want, resp.Header["Set-Cookie"])
				}
			}
			// The refusal signed alice out. Signed in again and planted
			// again, a POST with mallory's form token is refused the same
			// way.
			h.login(alice, "alice", "/ui/")
			h.plant(alice, connect.SessionCookie, msid, tc.plantPath)
			_, mbody := h.get(mallory, tc.link)
			resp, body = h.post(alice, tc.post, url.Values{"csrf": {field(t, csrfRE, mbody)}, "flow": {keyFlow.ID}, "api_key": {key}})
			wantCookieConflict(t, resp, body)
			h.wantNoSecret("mallory")
			h.wantNoSecret("alice")
			h.wantPending(keyFlow)
			h.wantPending(oauthFlow)
			if n := h.provider.AuthorizeRequests(); n != 0 {
				t.Fatalf("%d authorize requests reached the provider", n)
			}
			h.assertNoLeak(key)
		})
	}
	lines := h.auditLines("cookie_conflict_refused")
	if len(lines) != 6 || !strings.Contains(lines[0], `"cookies":"elicit_session"`) || !strings.Contains(lines[0], `"path":"/ui/set_api_key"`) {
		t.Fatalf("%d cookie_conflict_refused audit lines, want 6:\n%s", len(lines), strings.Join(lines, "\n"))
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.conflicts) != 6 || !slices.Equal(h.conflicts[0].Cookies, []string{connect.SessionCookie}) ||
		h.conflicts[0].Path != "/ui/set_api_key" || h.conflicts[0].Method != "GET" || h.conflicts[1].Method != "POST" {
		t.Fatalf("OnCookieConflict got %+v", h.conflicts)
	}
}

// Every cookie the pages set, in every spelling, is refused when it comes
// twice; a lone cookie under a name not in use is not a conflict.
func TestRepeatedCookies(t *testing.T) {
	tok := func(c byte) string { return strings.Repeat(string(c), 43) }
	tests := []struct {
		name, base, path, cookie string
		conflict                 bool
	}{
		{"session twice (a partitioned copy)", "https://mcp.example.com", "/ui/", "__Host-elicit_session=" + tok('a') + "; __Host-elicit_session=" + tok('b'), true},
		{"session and an unprefixed one", "https://mcp.example.com", "/ui/", "elicit_session=" + tok('a') + "; __Host-elicit_session=" + tok('b'), true},
		{"session and a __Secure- one", "https://mcp.example.com", "/connect/" + strings.Repeat("0", 32), "__Secure-elicit_session=" + tok('a') + "; __Host-elicit_session=" + tok('b'), true},
		{"login CSRF twice", "https://mcp.example.com", "/ui/login", "elicit_csrf=" + tok('a') + "; __Host-elicit_csrf=" + tok('b'), true},
		{"sign-in twice", "https://mcp.example.com", "/ui/login/callback", "elicit_signin=x; __Host-elicit_signin=y", true},
		{"loopback http: session twice", "http://127.0.0.1:3000", "/ui/set_api_key", "__Host-elicit_session=" + tok('a') + "; __Host-elicit_session=" + tok('b'), true},
		{"loopback http: an unprefixed one beside", "http://localhost:3000", "/ui/", "__Host-elicit_session=" + tok('a') + "; elicit_session=" + tok('b'), true},
		{"one session", "https://mcp.example.com", "/ui/", "__Host-elicit_session=" + tok('a'), false},
		{"a lone old unprefixed session", "https://mcp.example.com", "/ui/", "elicit_session=" + tok('a'), false},
		{"two old unprefixed sessions", "https://mcp.example.com", "/ui/", "elicit_session=" + tok('a') + "; elicit_session=" + tok('b'), false},
		{"one of each cookie", "https://mcp.example.com", "/ui/", "__Host-elicit_session=" + tok('a') + "; __Host-elicit_csrf=" + tok('b') + "; __Host-elicit_signin=x", false},
		{"other cookies", "https://mcp.example.com", "/ui/", "theme=dark; theme=light; __Host-elicit_session=" + tok('a'), false},
	}
	st := tempStore(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logs := &syncBuffer{}
			svc, err := connect.New(connect.Options{Store: st, MasterKey: make([]byte, 32), BaseURL: tt.base,
				Logger: slog.New(slog.NewJSONHandler(logs, nil)), InsecureDemoSignIn: true})
			if err != nil {
				t.Fatal(err)
			}
			req := httptest.NewRequest(http.MethodGet, tt.base+tt.path, nil)
			req.Header.Set("Cookie", tt.cookie)
			rec := httptest.NewRecorder()
			svc.Handler().ServeHTTP(rec, req)
			body, _ := io.ReadAll(rec.Body)
			refused := rec.Code == http.StatusBadRequest && strings.Contains(string(body), `id="cookie-conflict"`)
			if refused != tt.conflict {
				t.Fatalf("%d, refused = %v, want %v\n%s", rec.Code, refused, tt.conflict, body)
			}
			if refused != strings.Contains(logs.String(), `"msg":"cookie_conflict_refused"`) {
				t.Fatalf("audit line present = %v:\n%s", !refused, logs.String())
			}
			if !refused {
				return
			}
			// Each spelling the request carried is expired where a browser
			// accepts the deletion: __Host- only at Path=/ with Secure.
			for _, c := range rec.Result().Cookies() {
				if c.MaxAge >= 0 {
					t.Errorf("a refusal set a cookie: %+v", c)
				}
				if strings.HasPrefix(c.Name, connect.HostPrefix) && (c.Path != "/" || !c.Secure) {
					t.Errorf("an expiry the browser would ignore: %+v", c)
				}
			}
		})
	}
}

// The session cookie names and attributes by origin: __Host- and Secure
// on every origin New accepts; plain http off loopback is refused, as its
// flow links would be (and browsers would not take the cookies).
func TestCookieNames(t *testing.T) {
	st := tempStore(t)
	for base, want := range map[string]string{
		"https://mcp.example.com":   "__Host-elicit_session",
		"http://127.0.0.1:3000":     "__Host-elicit_session",
		"http://127.1.2.3:3000":     "__Host-elicit_session",
		"http://localhost:3000":     "__Host-elicit_session",
		"http://app.localhost:3000": "__Host-elicit_session",
		"http://[::1]:3000":         "__Host-elicit_session",
		"http://mcp.example.com":    "",
		"http://192.168.1.5:3000":   "",
		"http://localhost.evil.com": "",
	} {
		svc, err := connect.New(connect.Options{Store: st, MasterKey: make([]byte, 32), BaseURL: base, Logger: slog.New(slog.DiscardHandler), InsecureDemoSignIn: true})
		if want == "" {
			if err == nil {
				t.Errorf("%s: New accepted plain http off loopback", base)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if got := svc.CookieName(connect.SessionCookie); got != want {
			t.Errorf("%s: CookieName = %q, want %q", base, got, want)
		}
		rec := httptest.NewRecorder()
		svc.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, base+"/ui/login", nil))
		cs := rec.Result().Cookies()
		secure := strings.HasPrefix(want, connect.HostPrefix)
		if len(cs) != 1 || cs[0].Name != svc.CookieName(connect.LoginCSRFCookie) || cs[0].Secure != secure || cs[0].Path != "/" || !cs[0].HttpOnly {
			t.Errorf("%s: login CSRF cookie %+v", base, cs)
		}
	}
}

// FuzzCookieHeader: whatever Cookie header a page request carries, the
// handler answers without a server error, a refusal sets nothing but
// expiries, and two copies of the session cookie are always refused.
func FuzzCookieHeader(f *testing.F) {
	svc, err := connect.New(connect.Options{Store: tempStore(f), MasterKey: make([]byte, 32), BaseURL: "http://127.0.0.1:3000", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		f.Fatal(err)
	}
	tok := strings.Repeat("a", 43)
	for _, seed := range []string{"", "__Host-elicit_session=" + tok, "elicit_session=" + tok + "; __Host-elicit_session=" + tok,
		"=__Host-elicit_session=x", "__HOST-elicit_session=x; __Host-elicit_csrf=y", "a=b;;; ;=;__Secure-elicit_signin=\"q\""} {
		f.Add(seed, "/ui/set_api_key")
		f.Add(seed, "/connect/x;y/z")
	}
	h := svc.Handler()
	f.Fuzz(func(t *testing.T, cookie, path string) {
		u := &url.URL{Scheme: "http", Host: "127.0.0.1:3000", Path: "/ui/" + path}
		req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1:3000/ui/", nil)
		req.URL = u
		req.Header.Set("Cookie", cookie)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%q at %q: %d", cookie, path, rec.Code)
		}
		refused := strings.Contains(rec.Body.String(), `id="cookie-conflict"`)
		if refused {
			for _, c := range rec.Result().Cookies() {
				if c.MaxAge >= 0 {
					t.Fatalf("%q: a refusal set %+v", cookie, c)
				}
			}
		}
		if n := len(req.CookiesNamed(svc.CookieName(connect.SessionCookie))); n > 1 && !refused {
			t.Fatalf("%q: %d session cookies served", cookie, n)
		}
	})
}
