package connect_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-elicit/elicit/auth"
	"github.com/mcp-elicit/elicit/connect"
	"github.com/mcp-elicit/elicit/reqstate/keyring"
	"github.com/mcp-elicit/elicit/store"
	"github.com/mcp-elicit/elicit/store/sqlite"
)

// ---- test plumbing ----------------------------------------------------------

// syncBuffer is a goroutine-safe log sink.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *syncBuffer) lines() []string {
	return strings.Split(strings.TrimSpace(b.String()), "\n")
}

// clock is an adjustable time source.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// exchange is one recorded request/response.
type exchange struct {
	method, url string
	status      int
	header      http.Header
	body        string
}

// recorder is a RoundTripper that keeps a copy of every exchange, so tests
// can assert a secret never came back in a URL, header or body.
type recorder struct {
	next http.RoundTripper
	mu   sync.Mutex
	log  []exchange
}

func (rec *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := rec.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	rec.mu.Lock()
	rec.log = append(rec.log, exchange{req.Method, req.URL.String(), resp.StatusCode, resp.Header.Clone(), string(body)})
	rec.mu.Unlock()
	return resp, nil
}

func (rec *recorder) exchanges() []exchange {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]exchange(nil), rec.log...)
}

type harness struct {
	t     *testing.T
	svc   *connect.Service
	store store.Store
	srv   *httptest.Server
	logs  *syncBuffer
	clock *clock
	rec   *recorder

	mu         sync.Mutex
	mismatches []connect.IdentityMismatch // from Options.OnIdentityMismatch
	conflicts  []connect.CookieConflict   // from Options.OnCookieConflict
}

func (h *harness) identityMismatches() []connect.IdentityMismatch {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]connect.IdentityMismatch(nil), h.mismatches...)
}

var t0 = time.Date(2026, 7, 28, 9, 0, 0, 0, time.UTC)

func newHarness(t *testing.T) *harness { t.Helper(); return newHarnessWith(t, nil) }

// newHarnessWith lets configure adjust the Options (BaseURL is set) before
// the Service is made.
func newHarnessWith(t *testing.T, configure func(*connect.Options)) *harness {
	t.Helper()
	dir := t.TempDir()
	st, err := sqlite.Open(filepath.Join(dir, "elicit.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	key, err := keyring.LoadOrCreateMasterKey(filepath.Join(dir, "data"))
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, store: st, logs: &syncBuffer{}, clock: &clock{t: t0}}
	var handler http.Handler
	mux := http.NewServeMux()
	mux.Handle("/ui/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) }))
	mux.Handle("/connect/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) }))
	h.srv = httptest.NewServer(mux)
	t.Cleanup(h.srv.Close)
	opts := connect.Options{
		Store:     st,
		MasterKey: key,
		BaseURL:   h.srv.URL,
		Logger:    slog.New(slog.NewJSONHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Now:       h.clock.Now,
		OnIdentityMismatch: func(_ context.Context, m *connect.IdentityMismatch) {
			h.mu.Lock()
			h.mismatches = append(h.mismatches, *m)
			h.mu.Unlock()
		},
		OnCookieConflict: func(_ context.Context, c *connect.CookieConflict) {
			h.mu.Lock()
			h.conflicts = append(h.conflicts, *c)
			h.mu.Unlock()
		},
	}
	if configure != nil {
		configure(&opts)
	}
	h.svc, err = connect.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	handler = h.svc.Handler()
	h.rec = &recorder{next: h.srv.Client().Transport}
	return h
}

// client is one browser: its own cookie jar, and redirects are returned
// rather than followed so tests can inspect them.
func (h *harness) client() *http.Client {
	jar, err := cookiejar.New(nil)
	if err != nil {
		h.t.Fatal(err)
	}
	return &http.Client{
		Jar:           jar,
		Transport:     h.rec,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

func (h *harness) do(c *http.Client, req *http.Request) (*http.Response, string) {
	h.t.Helper()
	resp, err := c.Do(req)
	if err != nil {
		h.t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatal(err)
	}
	checkSecurityHeaders(h.t, resp)
	return resp, string(body)
}

func (h *harness) get(c *http.Client, path string) (*http.Response, string) {
	h.t.Helper()
	req, err := http.NewRequest(http.MethodGet, h.abs(path), nil)
	if err != nil {
		h.t.Fatal(err)
	}
	return h.do(c, req)
}

func (h *harness) post(c *http.Client, path string, form url.Values) (*http.Response, string) {
	h.t.Helper()
	req, err := http.NewRequest(http.MethodPost, h.abs(path), strings.NewReader(form.Encode()))
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return h.do(c, req)
}

func (h *harness) abs(path string) string {
	if strings.HasPrefix(path, "http") {
		return path
	}
	return h.srv.URL + path
}

var (
	csrfRE = regexp.MustCompile(`name="csrf" value="([^"]*)"`)
	nextRE = regexp.MustCompile(`name="next" value="([^"]*)"`)
)

func field(t *testing.T, re *regexp.Regexp, body string) string {
	t.Helper()
	m := re.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no %s in page:\n%s", re, body)
	}
	return htmlUnescape(m[1])
}

func htmlUnescape(s string) string {
	return strings.NewReplacer("&amp;", "&", "&#43;", "+", "&#34;", `"`, "&#39;", "'", "&lt;", "<", "&gt;", ">").Replace(s)
}

// login signs c in as user via the login form and returns where it was
// redirected.
func (h *harness) login(c *http.Client, user, next string) string {
	h.t.Helper()
	resp, body := h.get(c, "/ui/login?next="+url.QueryEscape(next))
	if resp.StatusCode != http.StatusOK {
		h.t.Fatalf("GET login: %d", resp.StatusCode)
	}
	resp, _ = h.post(c, "/ui/login", url.Values{
		"username": {user},
		"csrf":     {field(h.t, csrfRE, body)},
		"next":     {field(h.t, nextRE, body)},
	})
	if resp.StatusCode != http.StatusSeeOther {
		h.t.Fatalf("POST login as %s: status %d, want 303", user, resp.StatusCode)
	}
	return resp.Header.Get("Location")
}

// sessionID returns the session cookie c holds for /ui/ ("" if none).
func (h *harness) sessionID(c *http.Client) string {
	u, _ := url.Parse(h.srv.URL + "/ui/")
	for _, ck := range c.Jar.Cookies(u) {
		if ck.Name == h.svc.CookieName(connect.SessionCookie) {
			return ck.Value
		}
	}
	return ""
}

// sessionCSRF returns the signed-in user's session CSRF token, read from
// the home page's sign-out form.
func (h *harness) sessionCSRF(c *http.Client) string {
	h.t.Helper()
	resp, body := h.get(c, "/ui/")
	if resp.StatusCode != http.StatusOK {
		h.t.Fatalf("GET /ui/: %d", resp.StatusCode)
	}
	return field(h.t, csrfRE, body)
}

func (h *harness) startFlow(principal string) *store.Flow {
	h.t.Helper()
	f, err := h.svc.StartFlow(context.Background(), principal, "billing_key")
	if err != nil {
		h.t.Fatal(err)
	}
	return f
}

func flowPath(f *store.Flow) string { return "/ui/set_api_key?flow=" + f.ID }

func (h *harness) wantNoSecret(principal string) {
	h.t.Helper()
	ok, err := h.svc.HasSecret(context.Background(), principal, "billing_key")
	if err != nil || ok {
		h.t.Fatalf("HasSecret(%s) = %v, %v; want nothing stored", principal, ok, err)
	}
}

func (h *harness) wantPending(f *store.Flow) {
	h.t.Helper()
	got, err := h.svc.Flow(context.Background(), f.ID)
	if err != nil || got.Status != store.FlowPending {
		h.t.Fatalf("flow %s = %+v, %v; want pending", f.ID, got, err)
	}
}

// assertNoLeak checks that secret appears in no log line, request URL,
// response header (Location included) or response body seen so far.
func (h *harness) assertNoLeak(secret string) {
	h.t.Helper()
	if strings.Contains(h.logs.String(), secret) {
		h.t.Errorf("secret appears in the log:\n%s", h.logs.String())
	}
	for _, x := range h.rec.exchanges() {
		if strings.Contains(x.url, secret) {
			h.t.Errorf("secret in request URL %s", x.url)
		}
		for k, vs := range x.header {
			for _, v := range vs {
				if strings.Contains(v, secret) {
					h.t.Errorf("secret in response header %s of %s %s", k, x.method, x.url)
				}
			}
		}
		if strings.Contains(x.body, secret) {
			h.t.Errorf("secret in response body of %s %s (%d)", x.method, x.url, x.status)
		}
	}
}

// auditLines returns the log lines with audit=true and the given event.
func (h *harness) auditLines(event string) []string {
	var out []string
	for _, l := range h.logs.lines() {
		if strings.Contains(l, `"audit":true`) && strings.Contains(l, `"msg":"`+event+`"`) {
			out = append(out, l)
		}
	}
	return out
}

func checkSecurityHeaders(t *testing.T, resp *http.Response) {
	t.Helper()
	want := map[string]string{
		"Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
		"X-Frame-Options":         "DENY",
		"Cache-Control":           "no-store",
		"Referrer-Policy":         "same-origin",
		"X-Content-Type-Options":  "nosniff",
	}
	for k, v := range want {
		got := resp.Header.Get(k)
		if k == "Content-Security-Policy" && strings.HasPrefix(resp.Request.URL.Path, "/connect/") {
			// The OAuth connect page also lets its form lead to the provider.
			got = providerFormAction.ReplaceAllString(got, "form-action 'self';")
		}
		if got != v {
			t.Errorf("%s %s: header %s = %q, want %q", resp.Request.Method, resp.Request.URL.Path, k, got, v)
		}
	}
	if resp.StatusCode != http.StatusSeeOther {
		if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html; charset=utf-8") && resp.StatusCode < 500 {
			t.Errorf("%s %s: Content-Type %q", resp.Request.Method, resp.Request.URL.Path, ct)
		}
	}
}

var providerFormAction = regexp.MustCompile(`form-action 'self' https?://[^;\s]+;`)

func wantStatus(t *testing.T, resp *http.Response, want int) {
	t.Helper()
	if resp.StatusCode != want {
		t.Fatalf("%s %s: status %d, want %d", resp.Request.Method, resp.Request.URL, resp.StatusCode, want)
	}
}

func wantContains(t *testing.T, body string, subs ...string) {
	t.Helper()
	for _, s := range subs {
		if !strings.Contains(body, s) {
			t.Errorf("page lacks %q:\n%s", s, body)
		}
	}
}

// ---- tests ------------------------------------------------------------------

func TestHappyPath(t *testing.T) {
	h := newHarness(t)
	const secret = "sk_live_HAPPY-path-0123456789"
	ctx := context.Background()
	f := h.startFlow("alice")
	if got, want := h.svc.FlowURL(f), h.srv.URL+"/ui/set_api_key?flow="+f.ID; got != want {
		t.Fatalf("FlowURL = %q, want %q", got, want)
	}
	alice := h.client()
	sessCookie := h.signInFromFlow(t, alice, f)

	// The form.
	resp, body := h.get(alice, flowPath(f))
	wantStatus(t, resp, http.StatusOK)
	wantContains(t, body,
		"<h1>Connect your payment provider</h1>",
		"Signed in as <strong>alice</strong>",
		`id="key-form"`, `action="/ui/set_api_key"`,
		`type="password" id="api_key" name="api_key" autocomplete="off"`,
		`name="flow" value="`+f.ID+`"`,
		`id="submit"`,
		`name="viewport"`)
	csrf := field(t, csrfRE, body)

	// Submit (with surrounding blanks, which are trimmed).
	resp, body = h.post(alice, "/ui/set_api_key", url.Values{"api_key": {"  " + secret + "\n"}, "csrf": {csrf}, "flow": {f.ID}})
	wantStatus(t, resp, http.StatusOK)
	wantContains(t, body, `id="done"`, "Done. Return to your MCP client: if it is waiting for this page, it continues by itself; otherwise choose Accept there to continue.")

	h.checkStored(t, f, secret)

	// Opening the link again says it is done.
	resp, body = h.get(alice, flowPath(f))
	wantStatus(t, resp, http.StatusOK)
	wantContains(t, body, `id="already-done"`)
	if strings.Contains(body, `id="key-form"`) {
		t.Fatal("completed flow still shows the form")
	}
	// Submitting again stores nothing new.
	resp, _ = h.post(alice, "/ui/set_api_key", url.Values{"api_key": {"sk_other_SECOND"}, "csrf": {csrf}, "flow": {f.ID}})
	wantStatus(t, resp, http.StatusConflict)
	if plain, _ := h.svc.Secret(ctx, "alice", "billing_key"); string(plain) != secret {
		t.Fatalf("second submit replaced the key: %q", plain)
	}

	h.checkAudit(t, f, sessCookie)
	h.assertNoLeak(secret)
	h.assertNoLeak("sk_other_SECOND")
}

// signInFromFlow opens f's link without a session, follows the login
// page back to it, and returns the session cookie, checking the cookie
// rules on the way: on loopback http, a secure context, every page cookie
// is __Host-, Secure, HttpOnly, SameSite=Lax, Path=/.
func (h *harness) signInFromFlow(t *testing.T, c *http.Client, f *store.Flow) *http.Cookie {
	t.Helper()
	resp, _ := h.get(c, h.svc.FlowURL(f))
	wantStatus(t, resp, http.StatusSeeOther)
	loc := resp.Header.Get("Location")
	if want := "/ui/login?next=" + url.QueryEscape(flowPath(f)); loc != want {
		t.Fatalf("Location = %q, want %q", loc, want)
	}
	resp, body := h.get(c, loc)
	wantStatus(t, resp, http.StatusOK)
	wantContains(t, body, `id="login-form"`, `method="post"`, `action="/ui/login"`, `name="username"`, `name="csrf"`)
	if got := field(t, nextRE, body); got != flowPath(f) {
		t.Fatalf("login form next = %q, want %q", got, flowPath(f))
	}
	wantPageCookie(t, resp.Cookies(), "__Host-elicit_csrf")
	resp, _ = h.post(c, "/ui/login", url.Values{"username": {"alice"}, "csrf": {field(t, csrfRE, body)}, "next": {field(t, nextRE, body)}})
	wantStatus(t, resp, http.StatusSeeOther)
	if loc := resp.Header.Get("Location"); loc != flowPath(f) {
		t.Fatalf("after login Location = %q, want %q", loc, flowPath(f))
	}
	return wantPageCookie(t, resp.Cookies(), "__Host-elicit_session")
}

// wantPageCookie returns the cookie called name, which must be HttpOnly,
// SameSite=Lax, Path=/ and Secure.
func wantPageCookie(t *testing.T, cookies []*http.Cookie, name string) *http.Cookie {
	t.Helper()
	var found *http.Cookie
	for _, c := range cookies {
		if c.Name == name {
			found = c
		}
	}
	if found == nil || !found.HttpOnly || found.SameSite != http.SameSiteLaxMode || found.Path != "/" || !found.Secure {
		t.Fatalf("%s cookie = %+v", name, found)
	}
	return found
}

// checkStored checks what completing f stored: the flow complete at t0,
// alice's secret readable through the Service and sealed in the store.
func (h *harness) checkStored(t *testing.T, f *store.Flow, secret string) {
	t.Helper()
	ctx := context.Background()
	got, err := h.svc.Flow(ctx, f.ID)
	if err != nil || got.Status != store.FlowComplete || !got.CompletedAt.Equal(t0) {
		t.Fatalf("flow after submit = %+v, %v", got, err)
	}
	if ok, err := h.svc.HasSecret(ctx, "alice", "billing_key"); !ok || err != nil {
		t.Fatalf("HasSecret = %v, %v", ok, err)
	}
	plain, err := h.svc.Secret(ctx, "alice", "billing_key")
	if err != nil || string(plain) != secret {
		t.Fatalf("Secret = %q, %v; want %q", plain, err, secret)
	}
	raw, err := h.store.GetSecret(ctx, "alice", "billing_key")
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(raw, []byte(secret)) || bytes.Contains(raw, []byte("sk_live")) {
		t.Fatal("raw stored blob contains the key in clear")
	}
	if len(raw) != 12+len(secret)+16 {
		t.Fatalf("blob is %d bytes, want nonce(12)+ciphertext(%d)+tag(16)", len(raw), len(secret))
	}
}

// checkAudit checks one audit line per step of f's happy path, each
// naming alice (and the flow), and no session id in the log.
func (h *harness) checkAudit(t *testing.T, f *store.Flow, sessCookie *http.Cookie) {
	t.Helper()
	for _, ev := range []string{"flow_started", "login", "flow_completed"} {
		lines := h.auditLines(ev)
		if len(lines) != 1 {
			t.Fatalf("audit %q lines = %d, want 1:\n%s", ev, len(lines), h.logs.String())
		}
		if ev != "login" && !strings.Contains(lines[0], f.ID) {
			t.Errorf("audit %q lacks the flow id: %s", ev, lines[0])
		}
		if !strings.Contains(lines[0], `"principal":"alice"`) {
			t.Errorf("audit %q lacks the principal: %s", ev, lines[0])
		}
	}
	// Session ids are credentials too: not logged.
	if strings.Contains(h.logs.String(), sessCookie.Value) {
		t.Error("session id appears in the log")
	}
}

func TestOtherUserOpensLink(t *testing.T) {
	h := newHarness(t)
	f := h.startFlow("alice")
	bob := h.client()
	if loc := h.login(bob, "bob", flowPath(f)); loc != flowPath(f) {
		t.Fatalf("login redirect = %q", loc)
	}
	resp, body := h.get(bob, flowPath(f))
	wantStatus(t, resp, http.StatusForbidden)
	wantContains(t, body, "This request was made for a different account. Nothing was stored.", `id="logout"`)
	if strings.Contains(body, `id="key-form"`) || strings.Contains(body, "alice") {
		t.Fatalf("403 page shows the form or the other account's name:\n%s", body)
	}
	h.wantNoSecret("alice")
	h.wantNoSecret("bob")
	h.wantPending(f)

	lines := h.auditLines("flow_refused_other_user")
	if len(lines) != 1 {
		t.Fatalf("flow_refused_other_user lines = %d:\n%s", len(lines), h.logs.String())
	}
	wantContains(t, lines[0], `"flow_id":"`+f.ID+`"`, `"flow_principal":"alice"`, `"session_principal":"bob"`, `"level":"WARN"`)
	if got, want := h.identityMismatches(), []connect.IdentityMismatch{{FlowID: f.ID, Purpose: "billing_key", FlowPrincipal: "alice", SessionPrincipal: "bob", Method: "GET"}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("OnIdentityMismatch got %+v, want %+v", got, want)
	}

	// Bob signs out from the 403 page and is offered a login that returns
	// to the link, so alice (on a shared browser) can finish.
	resp, _ = h.post(bob, "/ui/logout", url.Values{"csrf": {field(t, csrfRE, body)}, "next": {field(t, nextRE, body)}})
	wantStatus(t, resp, http.StatusSeeOther)
	if loc, want := resp.Header.Get("Location"), "/ui/login?next="+url.QueryEscape(flowPath(f)); loc != want {
		t.Fatalf("logout Location = %q, want %q", loc, want)
	}
}

func TestOtherUserPostsToFlow(t *testing.T) {
	h := newHarness(t)
	const secret = "sk_live_BOB-attempt"
	ctx := context.Background()
	f := h.startFlow("alice")
	bob := h.client()
	h.login(bob, "bob", "/ui/")
	bobCSRF := h.sessionCSRF(bob) // bob's own, valid token

	resp, body := h.post(bob, "/ui/set_api_key", url.Values{"api_key": {secret}, "csrf": {bobCSRF}, "flow": {f.ID}})
	wantStatus(t, resp, http.StatusForbidden)
	wantContains(t, body, "different account", "Nothing was stored.")
	h.wantNoSecret("alice")
	h.wantNoSecret("bob")
	h.wantPending(f)
	if n := len(h.auditLines("flow_refused_other_user")); n != 1 {
		t.Fatalf("flow_refused_other_user lines = %d", n)
	}
	if m := h.identityMismatches(); len(m) != 1 || m[0].Method != "POST" || m[0].SessionPrincipal != "bob" {
		t.Fatalf("OnIdentityMismatch got %+v", m)
	}
	h.assertNoLeak(secret)

	// Alice can still finish her own flow.
	alice := h.client()
	h.login(alice, "alice", flowPath(f))
	_, body = h.get(alice, flowPath(f))
	resp, _ = h.post(alice, "/ui/set_api_key", url.Values{"api_key": {"sk_alice"}, "csrf": {field(t, csrfRE, body)}, "flow": {f.ID}})
	wantStatus(t, resp, http.StatusOK)
	if plain, err := h.svc.Secret(ctx, "alice", "billing_key"); err != nil || string(plain) != "sk_alice" {
		t.Fatalf("Secret = %q, %v", plain, err)
	}
	h.wantNoSecret("bob")
}

func TestCSRF(t *testing.T) {
	h := newHarness(t)
	const secret = "sk_live_CSRF-attempt"
	f := h.startFlow("alice")
	alice := h.client()
	h.login(alice, "alice", "/ui/")
	good := h.sessionCSRF(alice)

	otherBrowser := h.client()
	h.login(otherBrowser, "alice", "/ui/")
	otherSession := h.sessionCSRF(otherBrowser) // valid token, but of another session

	cases := []struct {
		name string
		csrf []string
	}{
		{"missing", nil},
		{"empty", []string{""}},
		{"wrong", []string{"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}},
		{"other session's token", []string{otherSession}},
		{"prefix", []string{good[:20]}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			form := url.Values{"api_key": {secret}, "flow": {f.ID}}
			if tc.csrf != nil {
				form["csrf"] = tc.csrf
			}
			resp, body := h.post(alice, "/ui/set_api_key", form)
			wantStatus(t, resp, http.StatusForbidden)
			// The page says what is known, not a guess at where the form came from.
			wantContains(t, body, "security token does not match your current sign-in")
			if strings.Contains(body, "did not come from this site") {
				t.Errorf("a bad csrf field blamed on another site: %s", body)
			}
			h.wantNoSecret("alice")
			h.wantPending(f)
		})
	}
	// CSRF token in the query string instead of the body does not count.
	resp, _ := h.post(alice, "/ui/set_api_key?csrf="+url.QueryEscape(good)+"&flow="+f.ID, url.Values{"api_key": {secret}})
	wantStatus(t, resp, http.StatusForbidden)
	h.wantNoSecret("alice")

	if n := len(h.auditLines("csrf_rejected")); n != len(cases)+1 {
		t.Errorf("csrf_rejected audit lines = %d, want %d", n, len(cases)+1)
	}

	// Logout with a bad token keeps the session.
	resp, _ = h.post(alice, "/ui/logout", url.Values{"csrf": {"nope"}})
	wantStatus(t, resp, http.StatusForbidden)
	resp, _ = h.get(alice, "/ui/")
	wantStatus(t, resp, http.StatusOK)
	h.assertNoLeak(secret)
}

func TestLoginCSRF(t *testing.T) {
	h := newHarness(t)
	c := h.client()
	_, body := h.get(c, "/ui/login")
	tok := field(t, csrfRE, body)
	cases := []struct {
		name string
		form url.Values
		jar  bool // keep the cookie
	}{
		{"missing field", url.Values{"username": {"alice"}}, true},
		{"wrong field", url.Values{"username": {"alice"}, "csrf": {"x" + tok[1:]}}, true},
		{"no cookie", url.Values{"username": {"alice"}, "csrf": {tok}}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cl := c
			if !tc.jar {
				cl = h.client()
			}
			resp, body := h.post(cl, "/ui/login", tc.form)
			wantStatus(t, resp, http.StatusForbidden)
			wantContains(t, body, `id="login-form"`, "does not match the sign-in cookie of this browser")
			for _, ck := range resp.Cookies() {
				if ck.Name == h.svc.CookieName(connect.SessionCookie) && ck.MaxAge >= 0 {
					t.Fatal("session cookie set despite bad CSRF")
				}
			}
		})
	}
	resp, _ := h.get(c, "/ui/")
	wantStatus(t, resp, http.StatusSeeOther)
	if n := len(h.auditLines("login")); n != 0 {
		t.Fatalf("login audited %d times", n)
	}
}

func TestLoginRejectsBadNames(t *testing.T) {
	h := newHarness(t)
	c := h.client()
	for _, name := range []string{"", "   ", "a b", "alice<script>", strings.Repeat("x", 65), "ålice", "bob\x00"} {
		_, body := h.get(c, "/ui/login?next=/ui/x")
		resp, body := h.post(c, "/ui/login", url.Values{"username": {name}, "csrf": {field(t, csrfRE, body)}, "next": {"/ui/x"}})
		wantStatus(t, resp, http.StatusBadRequest)
		wantContains(t, body, `id="login-form"`, `role="alert"`, `name="next" value="/ui/x"`)
		if strings.Contains(body, "<script>") {
			t.Fatal("user name echoed unescaped")
		}
	}
	resp, _ := h.get(c, "/ui/")
	wantStatus(t, resp, http.StatusSeeOther)
}

func TestNoSession(t *testing.T) {
	h := newHarness(t)
	const secret = "sk_live_NO-session"
	f := h.startFlow("alice")
	c := h.client()

	resp, _ := h.get(c, flowPath(f))
	wantStatus(t, resp, http.StatusSeeOther)
	if loc, want := resp.Header.Get("Location"), "/ui/login?next="+url.QueryEscape(flowPath(f)); loc != want {
		t.Fatalf("Location = %q, want %q", loc, want)
	}
	// Even a bogus flow id: the login comes first, revealing nothing.
	resp, _ = h.get(c, "/ui/set_api_key?flow=nope")
	wantStatus(t, resp, http.StatusSeeOther)

	resp, _ = h.post(c, "/ui/set_api_key", url.Values{"api_key": {secret}, "csrf": {"x"}, "flow": {f.ID}})
	wantStatus(t, resp, http.StatusSeeOther)
	if loc, want := resp.Header.Get("Location"), "/ui/login?next="+url.QueryEscape(flowPath(f)); loc != want {
		t.Fatalf("POST Location = %q, want %q", loc, want)
	}
	h.wantNoSecret("alice")
	h.wantPending(f)

	// A forged session cookie is no session.
	u, _ := url.Parse(h.srv.URL + "/ui/")
	c.Jar.SetCookies(u, []*http.Cookie{{Name: h.svc.CookieName(connect.SessionCookie), Value: strings.Repeat("A", 43), Path: "/", Secure: true}})
	resp, _ = h.get(c, flowPath(f))
	wantStatus(t, resp, http.StatusSeeOther)
	resp, _ = h.get(c, "/ui/")
	wantStatus(t, resp, http.StatusSeeOther)
	h.assertNoLeak(secret)
}

func TestOpenRedirect(t *testing.T) {
	h := newHarness(t)
	cases := []struct {
		next, want string
	}{
		{"//evil.com", "/ui/"},
		{"https://evil.com", "/ui/"},
		{"https://evil.com/ui/", "/ui/"},
		{"/elsewhere", "/ui/"},
		{"", "/ui/"},
		{"/ui", "/ui/"},
		{"//evil.com/ui/", "/ui/"},
		{"/ui/../evil", "/ui/"},
		{"/ui/%2e%2e/evil", "/ui/"},
		{"/ui/\\evil.com", "/ui/"},
		{"/\\evil.com", "/ui/"},
		{"javascript:alert(1)", "/ui/"},
		{"/ui/\r\nSet-Cookie: x=y", "/ui/"},
		{" /ui/", "/ui/"},
		{"/ui/set_api_key?flow=0123456789abcdef0123456789abcdef", "/ui/set_api_key?flow=0123456789abcdef0123456789abcdef"},
		{"/ui/", "/ui/"},
		{"/ui/x#frag", "/ui/x"},
	}
	for _, tc := range cases {
		t.Run(tc.next, func(t *testing.T) {
			c := h.client()
			// The login form only carries a safe next...
			_, body := h.get(c, "/ui/login?next="+url.QueryEscape(tc.next))
			if got := field(t, nextRE, body); got != tc.want {
				t.Errorf("form next = %q, want %q", got, tc.want)
			}
			// ...and a forged POST is checked again.
			resp, _ := h.post(c, "/ui/login", url.Values{"username": {"alice"}, "csrf": {field(t, csrfRE, body)}, "next": {tc.next}})
			wantStatus(t, resp, http.StatusSeeOther)
			if loc := resp.Header.Get("Location"); loc != tc.want {
				t.Errorf("Location = %q, want %q", loc, tc.want)
			}
		})
	}
}

func TestExpiredAndUnknownFlows(t *testing.T) {
	h := newHarness(t)
	const secret = "sk_live_EXPIRED"
	f := h.startFlow("alice")
	if !f.ExpiresAt.Equal(t0.Add(connect.DefaultFlowTTL)) {
		t.Fatalf("ExpiresAt = %v, want now+15m", f.ExpiresAt)
	}
	alice := h.client()
	h.login(alice, "alice", "/ui/")
	_, body := h.get(alice, flowPath(f))
	csrf := field(t, csrfRE, body)

	h.clock.Advance(connect.DefaultFlowTTL) // exactly at expiry: expired
	for _, path := range []string{
		flowPath(f),
		"/ui/set_api_key?flow=ffffffffffffffffffffffffffffffff", // unknown
		"/ui/set_api_key?flow=not-a-flow",                       // malformed
		"/ui/set_api_key?flow=" + strings.ToUpper(f.ID),         // not lowercase
		"/ui/set_api_key", // missing
	} {
		resp, body := h.get(alice, path)
		wantStatus(t, resp, http.StatusNotFound)
		wantContains(t, body, "This link is invalid or has expired.")
	}
	resp, body := h.post(alice, "/ui/set_api_key", url.Values{"api_key": {secret}, "csrf": {csrf}, "flow": {f.ID}})
	wantStatus(t, resp, http.StatusNotFound)
	wantContains(t, body, "This link is invalid or has expired.")
	h.wantNoSecret("alice")
	h.wantPending(f)
	h.assertNoLeak(secret)
}

func TestSessionExpiry(t *testing.T) {
	h := newHarness(t)
	c := h.client()
	h.login(c, "alice", "/ui/")
	resp, body := h.get(c, "/ui/")
	wantStatus(t, resp, http.StatusOK)
	wantContains(t, body, "Signed in as <strong>alice</strong>")
	h.clock.Advance(connect.DefaultSessionTTL)
	resp, _ = h.get(c, "/ui/")
	wantStatus(t, resp, http.StatusSeeOther)
	if loc := resp.Header.Get("Location"); loc != "/ui/login?next=%2Fui%2F" {
		t.Fatalf("Location = %q", loc)
	}
}

func TestLogoutAndRelogin(t *testing.T) {
	h := newHarness(t)
	c := h.client()
	h.login(c, "alice", "/ui/")
	first := h.sessionCSRF(c)
	// Signing in again (here as bob) gives a new session; the old one ends.
	h.login(c, "bob", "/ui/")
	resp, body := h.get(c, "/ui/")
	wantStatus(t, resp, http.StatusOK)
	wantContains(t, body, "Signed in as <strong>bob</strong>")
	second := field(t, csrfRE, body)
	if first == second {
		t.Fatal("re-login kept the session CSRF token")
	}
	resp, _ = h.post(c, "/ui/logout", url.Values{"csrf": {second}})
	wantStatus(t, resp, http.StatusSeeOther)
	if loc := resp.Header.Get("Location"); loc != "/ui/login" {
		t.Fatalf("Location = %q", loc)
	}
	cleared := false
	for _, ck := range resp.Cookies() {
		if ck.Name == h.svc.CookieName(connect.SessionCookie) && ck.MaxAge < 0 {
			cleared = true
		}
	}
	if !cleared {
		t.Fatal("logout did not clear the session cookie")
	}
	resp, _ = h.get(c, "/ui/")
	wantStatus(t, resp, http.StatusSeeOther)
	if n := len(h.auditLines("logout")); n != 1 {
		t.Fatalf("logout audit lines = %d", n)
	}
	// Logging out without a session is harmless.
	resp, _ = h.post(h.client(), "/ui/logout", nil)
	wantStatus(t, resp, http.StatusSeeOther)
}

func TestSessionCookieReplayAfterLogout(t *testing.T) {
	h := newHarness(t)
	c := h.client()
	h.login(c, "alice", "/ui/")
	sid := h.sessionID(c)
	resp, _ := h.post(c, "/ui/logout", url.Values{"csrf": {h.sessionCSRF(c)}})
	wantStatus(t, resp, http.StatusSeeOther)
	thief := h.client()
	u, _ := url.Parse(h.srv.URL + "/ui/")
	thief.Jar.SetCookies(u, []*http.Cookie{{Name: h.svc.CookieName(connect.SessionCookie), Value: sid, Path: "/", Secure: true}})
	resp, _ = h.get(thief, "/ui/")
	wantStatus(t, resp, http.StatusSeeOther)
}

func TestKeyValidation(t *testing.T) {
	h := newHarness(t)
	f := h.startFlow("alice")
	alice := h.client()
	h.login(alice, "alice", "/ui/")
	_, body := h.get(alice, flowPath(f))
	csrf := field(t, csrfRE, body)

	long := "sk_" + strings.Repeat("L", connect.MaxSecretLen) // 4099 bytes
	ctrl := "sk_live_ctrl\x01char"
	for _, tc := range []struct{ name, key string }{
		{"empty", ""},
		{"blank", " \t\r\n "},
		{"too long", long},
		{"control character", ctrl},
		{"invalid utf-8", "sk_\xff\xfe"},
		{"bidi override", "sk_live_\u202eabc"},
		{"line separator", "sk_live_\u2028abc"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := h.post(alice, "/ui/set_api_key", url.Values{"api_key": {tc.key}, "csrf": {csrf}, "flow": {f.ID}})
			wantStatus(t, resp, http.StatusBadRequest)
			wantContains(t, body, `id="key-form"`, `role="alert"`)
			if strings.Contains(body, `value="sk_`) {
				t.Fatal("form echoes the key")
			}
			h.wantNoSecret("alice")
			h.wantPending(f)
		})
	}
	// A body over 64 KiB is refused before anything else.
	resp, _ := h.post(alice, "/ui/set_api_key", url.Values{"api_key": {strings.Repeat("B", 70<<10)}, "csrf": {csrf}, "flow": {f.ID}})
	wantStatus(t, resp, http.StatusRequestEntityTooLarge)
	h.wantNoSecret("alice")

	// Exactly MaxSecretLen bytes is accepted.
	max := strings.Repeat("M", connect.MaxSecretLen)
	resp, _ = h.post(alice, "/ui/set_api_key", url.Values{"api_key": {max}, "csrf": {csrf}, "flow": {f.ID}})
	wantStatus(t, resp, http.StatusOK)
	plain, err := h.svc.Secret(context.Background(), "alice", "billing_key")
	if err != nil || string(plain) != max {
		t.Fatalf("Secret len %d, %v", len(plain), err)
	}
	h.assertNoLeak(long)
	h.assertNoLeak(ctrl)
	h.assertNoLeak(max)
}

func TestMethodsAndPaths(t *testing.T) {
	h := newHarness(t)
	c := h.client()
	cases := []struct {
		method, path string
		status       int
		allow        string
	}{
		{http.MethodPut, "/ui/set_api_key", http.StatusMethodNotAllowed, "GET, HEAD, POST"},
		{http.MethodDelete, "/ui/login", http.StatusMethodNotAllowed, "GET, HEAD, POST"},
		{http.MethodPatch, "/ui/", http.StatusMethodNotAllowed, "GET, HEAD"},
		{http.MethodPost, "/ui/", http.StatusMethodNotAllowed, "GET, HEAD"},
		{http.MethodGet, "/ui/logout", http.StatusMethodNotAllowed, "POST"},
		{http.MethodOptions, "/ui/logout", http.StatusMethodNotAllowed, "POST"},
		{http.MethodGet, "/ui/nope", http.StatusNotFound, ""},
		{http.MethodGet, "/ui/set_api_key/extra", http.StatusNotFound, ""},
	}
	for _, tc := range cases {
		req, _ := http.NewRequest(tc.method, h.srv.URL+tc.path, nil)
		resp, _ := h.do(c, req)
		if resp.StatusCode != tc.status || resp.Header.Get("Allow") != tc.allow {
			t.Errorf("%s %s = %d Allow %q, want %d Allow %q", tc.method, tc.path, resp.StatusCode, resp.Header.Get("Allow"), tc.status, tc.allow)
		}
	}
	// HEAD is served wherever GET is (RFC 9110 §9.3.2), without a body.
	resp, err := c.Head(h.srv.URL + "/ui/login")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || len(body) != 0 {
		t.Errorf("HEAD = %d with %d body bytes", resp.StatusCode, len(body))
	}
}

func TestSecureCookiesOverHTTPS(t *testing.T) {
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	svc, err := connect.New(connect.Options{Store: st, MasterKey: make([]byte, 32), BaseURL: "https://mcp.example.com/", Logger: slog.New(slog.DiscardHandler),
		InsecureDemoSignIn: true})
	if err != nil {
		t.Fatal(err)
	}
	h := svc.Handler()
	rr := httptest.NewRecorder()
	h.ServeHTTP(rr, httptest.NewRequest(http.MethodGet, "https://mcp.example.com/ui/login", nil))
	res := rr.Result()
	if len(res.Cookies()) != 1 || !res.Cookies()[0].Secure || res.Cookies()[0].Name != "__Host-elicit_csrf" {
		t.Fatalf("login CSRF cookie = %+v, want Secure __Host-elicit_csrf", res.Cookies())
	}
	tok := res.Cookies()[0].Value

	req := httptest.NewRequest(http.MethodPost, "https://mcp.example.com/ui/login", strings.NewReader(url.Values{"username": {"alice"}, "csrf": {tok}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(&http.Cookie{Name: "__Host-elicit_csrf", Value: tok})
	rr = httptest.NewRecorder()
	h.ServeHTTP(rr, req)
	if rr.Code != http.StatusSeeOther {
		t.Fatalf("login = %d", rr.Code)
	}
	var sess *http.Cookie
	for _, c := range rr.Result().Cookies() {
		if c.Name == "__Host-elicit_session" {
			sess = c
		}
	}
	if sess == nil || !sess.Secure || !sess.HttpOnly || sess.MaxAge != int(connect.DefaultSessionTTL.Seconds()) {
		t.Fatalf("session cookie = %+v", sess)
	}
	f, err := svc.StartFlow(context.Background(), "alice", "billing_key")
	if err != nil {
		t.Fatal(err)
	}
	if got := svc.FlowURL(f); got != "https://mcp.example.com/ui/set_api_key?flow="+f.ID {
		t.Fatalf("FlowURL = %q (trailing slash of BaseURL not dropped?)", got)
	}
}

func TestNewValidation(t *testing.T) {
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	key := make([]byte, 32)
	cases := []struct {
		name string
		opts connect.Options
	}{
		{"nil store", connect.Options{MasterKey: key, BaseURL: "http://127.0.0.1:3000"}},
		{"nil key", connect.Options{Store: st, BaseURL: "http://127.0.0.1:3000"}},
		{"short key", connect.Options{Store: st, MasterKey: key[:16], BaseURL: "http://127.0.0.1:3000"}},
		{"long key", connect.Options{Store: st, MasterKey: make([]byte, 33), BaseURL: "http://127.0.0.1:3000"}},
		{"empty base", connect.Options{Store: st, MasterKey: key}},
		{"relative base", connect.Options{Store: st, MasterKey: key, BaseURL: "/ui"}},
		{"ftp base", connect.Options{Store: st, MasterKey: key, BaseURL: "ftp://example.com"}},
		{"no host", connect.Options{Store: st, MasterKey: key, BaseURL: "http://"}},
		{"path", connect.Options{Store: st, MasterKey: key, BaseURL: "https://example.com/mcp"}},
		{"query", connect.Options{Store: st, MasterKey: key, BaseURL: "https://example.com?x=1"}},
		{"userinfo", connect.Options{Store: st, MasterKey: key, BaseURL: "https://u:p@example.com"}},
		// Its links would be refused by every URL-mode elicitation: plain
		// http is for loopback hosts only (SEC-U-S-04).
		{"http off loopback", connect.Options{Store: st, MasterKey: key, BaseURL: "http://myhost.test:3919"}},
		{"http on a LAN address", connect.Options{Store: st, MasterKey: key, BaseURL: "http://192.0.2.7"}},
	}
	for _, tc := range cases {
		if _, err := connect.New(tc.opts); err == nil {
			t.Errorf("%s: New succeeded", tc.name)
		}
	}
	// The demo sign-in (no SignIn) takes any user name, so it is served on
	// loopback only, unless the caller accepts that.
	for _, tc := range []struct {
		base   string
		signIn connect.IdentityProvider
		demo   bool
		ok     bool
	}{
		{"http://127.0.0.1:3000", nil, false, true},
		{"http://[::1]:3000", nil, false, true},
		{"http://localhost:3000", nil, false, true},
		{"https://mcp.example.com", nil, false, false},
		{"https://192.168.1.5:3000", nil, false, false},
		{"https://0.0.0.0:8080", nil, false, false},
		{"https://localhost.evil.com", nil, false, false},
		{"https://mcp.example.com", nil, true, true},
		{"https://mcp.example.com", refusingIdP{}, false, true},
	} {
		_, err := connect.New(connect.Options{Store: st, MasterKey: key, BaseURL: tc.base, SignIn: tc.signIn, InsecureDemoSignIn: tc.demo})
		if (err == nil) != tc.ok || (err != nil && !strings.Contains(err.Error(), "InsecureDemoSignIn")) {
			t.Errorf("%s (identity provider %v, InsecureDemoSignIn %v): %v", tc.base, tc.signIn != nil, tc.demo, err)
		}
	}
	// The Service keeps its own copy of the key.
	k := bytes.Repeat([]byte{7}, 32)
	svc, err := connect.New(connect.Options{Store: st, MasterKey: k, BaseURL: "http://127.0.0.1:3000", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	f, err := svc.StartFlow(ctx, "alice", "billing_key")
	if err != nil {
		t.Fatal(err)
	}
	clear(k)
	_ = f
	if time.Since(svc.Now()) > time.Minute {
		t.Fatal("default clock is not time.Now")
	}
}

func TestStartFlowValidation(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	for _, tc := range []struct{ principal, purpose string }{
		{"", "billing_key"},
		{"a b", "billing_key"},
		{"alice", ""},
		{"alice", "bad purpose"},
		{"alice", "x\x00y"},
		{"alice", strings.Repeat("p", 65)},
	} {
		if _, err := h.svc.StartFlow(ctx, tc.principal, tc.purpose); err == nil {
			t.Errorf("StartFlow(%q, %q) succeeded", tc.principal, tc.purpose)
		}
	}
	// Flows of two users get different ids of the documented shape; a
	// user's repeated request reuses the live pending flow.
	a, b := h.startFlow("alice"), h.startFlow("bob")
	idRE := regexp.MustCompile(`^[0-9a-f]{32}$`)
	if a.ID == b.ID || !idRE.MatchString(a.ID) || !idRE.MatchString(b.ID) {
		t.Fatalf("flow ids %q, %q", a.ID, b.ID)
	}
	if again := h.startFlow("alice"); again.ID != a.ID {
		t.Fatalf("alice's second request made flow %q beside %q", again.ID, a.ID)
	}
	if a.Status != store.FlowPending || a.Principal != "alice" || a.Purpose != "billing_key" {
		t.Fatalf("flow = %+v", a)
	}
	if got := h.svc.FlowURL(nil); got != "" {
		t.Fatalf("FlowURL(nil) = %q", got)
	}
	for _, id := range []string{"", "x", strings.ToUpper(a.ID), "../" + a.ID} {
		if _, err := h.svc.Flow(ctx, id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Flow(%q) err = %v, want ErrNotFound", id, err)
		}
	}
	if _, err := h.svc.Secret(ctx, "alice", "billing_key"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Secret before any flow: %v, want ErrNotFound", err)
	}
}

func TestOtherPurposeHeading(t *testing.T) {
	h := newHarness(t)
	f, err := h.svc.StartFlow(context.Background(), "alice", "github_token")
	if err != nil {
		t.Fatal(err)
	}
	c := h.client()
	h.login(c, "alice", "/ui/")
	_, body := h.get(c, flowPath(f))
	wantContains(t, body, "github_token", `id="key-form"`)
}

func TestSecretBoundToOwner(t *testing.T) {
	// A sealed blob copied to another user's row does not decrypt (AAD).
	h := newHarness(t)
	ctx := context.Background()
	complete := func(user, key string) {
		f := h.startFlow(user)
		c := h.client()
		h.login(c, user, "/ui/")
		_, body := h.get(c, flowPath(f))
		resp, _ := h.post(c, "/ui/set_api_key", url.Values{"api_key": {key}, "csrf": {field(t, csrfRE, body)}, "flow": {f.ID}})
		wantStatus(t, resp, http.StatusOK)
	}
	complete("alice", "sk_alice_key")
	aliceBlob, err := h.store.GetSecret(ctx, "alice", "billing_key")
	if err != nil {
		t.Fatal(err)
	}
	// Plant alice's blob as mallory's through the store.
	f := &store.Flow{ID: strings.Repeat("ab", 16), Principal: "mallory", Purpose: "billing_key", Status: store.FlowPending, CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}
	if err := h.store.CreateFlow(ctx, f); err != nil {
		t.Fatal(err)
	}
	if err := h.store.CompleteFlow(ctx, f.ID, "mallory", aliceBlob, t0); err != nil {
		t.Fatal(err)
	}
	if pt, err := h.svc.Secret(ctx, "mallory", "billing_key"); err == nil {
		t.Fatalf("foreign blob decrypted: %q", pt)
	}
	if pt, err := h.svc.Secret(ctx, "alice", "billing_key"); err != nil || string(pt) != "sk_alice_key" {
		t.Fatalf("Secret(alice) = %q, %v", pt, err)
	}
}

func TestRestartKeepsSecretsReadable(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	open := func() (*connect.Service, *sqlite.Store) {
		key, err := keyring.LoadOrCreateMasterKey(dir)
		if err != nil {
			t.Fatal(err)
		}
		st, err := sqlite.Open(filepath.Join(dir, "elicit.db"))
		if err != nil {
			t.Fatal(err)
		}
		svc, err := connect.New(connect.Options{Store: st, MasterKey: key, BaseURL: "http://127.0.0.1:3000", Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		return svc, st
	}
	svc, st := open()
	f, err := svc.StartFlow(ctx, "alice", "billing_key")
	if err != nil {
		t.Fatal(err)
	}
	// Complete through the handler of a running server.
	srv := httptest.NewServer(svc.Handler())
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	resp, err := c.Get(srv.URL + "/ui/login?next=" + url.QueryEscape(flowPath(f)))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp, err = c.PostForm(srv.URL+"/ui/login", url.Values{"username": {"alice"}, "csrf": {field(t, csrfRE, string(body))}, "next": {flowPath(f)}})
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body) // followed the redirect to the form
	resp.Body.Close()
	resp, err = c.PostForm(srv.URL+"/ui/set_api_key", url.Values{"api_key": {"sk_restart"}, "csrf": {field(t, csrfRE, string(body))}, "flow": {f.ID}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	srv.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("submit = %d", resp.StatusCode)
	}
	st.Close()

	svc, st = open()
	defer st.Close()
	pt, err := svc.Secret(ctx, "alice", "billing_key")
	if err != nil || string(pt) != "sk_restart" {
		t.Fatalf("after restart Secret = %q, %v", pt, err)
	}
}

func TestConcurrentSubmissions(t *testing.T) {
	h := newHarness(t)
	f := h.startFlow("alice")
	alice := h.client()
	h.login(alice, "alice", "/ui/")
	_, body := h.get(alice, flowPath(f))
	csrf := field(t, csrfRE, body)

	oneWins(t, 8, http.StatusConflict, func(i int) (*http.Response, error) {
		form := url.Values{"api_key": {fmt.Sprintf("sk_conc_%d", i)}, "csrf": {csrf}, "flow": {f.ID}}
		return alice.PostForm(h.srv.URL+"/ui/set_api_key", form)
	})
	if n := len(h.auditLines("flow_completed")); n != 1 {
		t.Fatalf("flow_completed lines = %d", n)
	}
}

// oneWins sends n requests at once and checks that exactly one gets 200
// and every other one gets loser.
func oneWins(t *testing.T, n, loser int, send func(i int) (*http.Response, error)) {
	t.Helper()
	codes := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := send(i)
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			codes[i] = resp.StatusCode
		}()
	}
	wg.Wait()
	ok := 0
	for _, c := range codes {
		switch c {
		case http.StatusOK:
			ok++
		case loser:
		default:
			t.Errorf("status %d", c)
		}
	}
	if ok != 1 {
		t.Fatalf("%d requests succeeded, want 1 (codes %v)", ok, codes)
	}
}

// exampleStore opens a throwaway SQLite store and vault key for the
// Example functions; cleanup removes them.
func exampleStore() (store.Store, []byte, func()) {
	dir, err := os.MkdirTemp("", "connect-example")
	if err != nil {
		panic(err)
	}
	st, err := sqlite.Open(filepath.Join(dir, "elicit.db"))
	if err != nil {
		panic(err)
	}
	key, err := keyring.LoadOrCreateMasterKey(dir)
	if err != nil {
		panic(err)
	}
	return st, key, func() { st.Close(); os.RemoveAll(dir) }
}

func ExampleService_StartFlow() {
	st, key, cleanup := exampleStore()
	defer cleanup()
	svc, err := connect.New(connect.Options{
		Store:     st,
		MasterKey: key,
		BaseURL:   "http://127.0.0.1:3000",
		Logger:    slog.New(slog.DiscardHandler),
	})
	if err != nil {
		panic(err)
	}

	// In a tool handler: start a flow for the authenticated user and send
	// its URL in a URL-mode elicitation. The URL names the flow only.
	f, err := svc.StartFlow(context.Background(), "alice", "billing_key")
	if err != nil {
		panic(err)
	}
	fmt.Println(strings.TrimSuffix(svc.FlowURL(f), f.ID) + "<flow id>")
	fmt.Println(f.Status, len(f.ID), f.ExpiresAt.Sub(f.CreatedAt))
	// Output:
	// http://127.0.0.1:3000/ui/set_api_key?flow=<flow id>
	// pending 32 10m0s
}

// A form posted from another site (another port of the same host
// included) is refused before anything is read or stored, login included.
func TestCrossOriginPostsRefused(t *testing.T) {
	h := newHarness(t)
	f := h.startFlow("alice")
	alice := h.client()
	h.login(alice, "alice", "/ui/")
	_, body := h.get(alice, flowPath(f))
	csrf := field(t, csrfRE, body)
	form := url.Values{"api_key": {"sk_live_cross"}, "csrf": {csrf}, "flow": {f.ID}}
	for _, hd := range []map[string]string{
		{"Sec-Fetch-Site": "same-site", "Origin": "http://127.0.0.1:8080"},
		{"Sec-Fetch-Site": "cross-site"},
		{"Origin": "http://127.0.0.1:8080"},
		{"Origin": "http://evil.example"},
	} {
		req, _ := http.NewRequest(http.MethodPost, h.abs("/ui/set_api_key"), strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for k, v := range hd {
			req.Header.Set(k, v)
		}
		resp, _ := h.do(alice, req)
		wantStatus(t, resp, http.StatusForbidden)
		h.wantNoSecret("alice")
		h.wantPending(f)
	}
	if n := len(h.auditLines("cross_origin_refused")); n != 4 {
		t.Fatalf("%d cross_origin_refused audit lines, want 4", n)
	}
	// An opaque origin is refused whatever Sec-Fetch-Site says: a
	// sandboxed frame, or a post another site redirected here.
	for _, site := range []string{"", "same-origin", "none"} {
		req, _ := http.NewRequest(http.MethodPost, h.abs("/ui/set_api_key"), strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if site != "" {
			req.Header.Set("Sec-Fetch-Site", site)
		}
		req.Header.Set("Origin", "null")
		resp, _ := h.do(alice, req)
		wantStatus(t, resp, http.StatusForbidden)
		h.wantNoSecret("alice")
	}
	// The pages' own post (this origin, Referrer-Policy same-origin) is served.
	req, _ := http.NewRequest(http.MethodPost, h.abs("/ui/set_api_key"), strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	req.Header.Set("Origin", h.abs(""))
	resp, _ := h.do(alice, req)
	wantStatus(t, resp, http.StatusOK)
}

// refusingIdP is an identity provider that signs nobody in.
type refusingIdP struct{}

func (refusingIdP) AuthCodeURL(state, nonce, verifier string) string {
	return "https://idp.example/authorize"
}

func (refusingIdP) Exchange(ctx context.Context, code, iss, verifier, nonce string) (auth.Principal, error) {
	return auth.Principal{}, auth.ErrUnauthenticated
}

// Login CSRF with a planted double-submit pair (review N7): another port of
// the same host can set the CSRF cookie to a value it chose and post that
// value, redirected so the browser sends "Origin: null". The post is
// refused and nobody is signed in; the same post with this origin, as the
// login page's own form sends it, signs in.
func TestLoginWithOpaqueOriginRefused(t *testing.T) {
	h := newHarness(t)
	const planted = "KNOWNKNOWNKNOWNKNOWNKNOWNKNOWNKNOWNKNOWN123"
	post := func(origin, site string) *http.Response {
		form := url.Values{"username": {"mallory"}, "csrf": {planted}, "next": {"/ui/"}}
		req, _ := http.NewRequest(http.MethodPost, h.abs("/ui/login"), strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.AddCookie(&http.Cookie{Name: h.svc.CookieName(connect.LoginCSRFCookie), Value: planted})
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		if site != "" {
			req.Header.Set("Sec-Fetch-Site", site)
		}
		resp, _ := h.do(&http.Client{Transport: h.rec, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}, req)
		return resp
	}
	for _, site := range []string{"", "same-origin", "same-site"} {
		resp := post("null", site)
		wantStatus(t, resp, http.StatusForbidden)
		for _, c := range resp.Cookies() {
			if c.Name == h.svc.CookieName(connect.SessionCookie) && c.Value != "" {
				t.Fatalf("Origin null, Sec-Fetch-Site %q: a session cookie was set", site)
			}
		}
	}
	if resp := post(h.abs(""), "same-origin"); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("the login form's own post: %d, want 303", resp.StatusCode)
	}
}
