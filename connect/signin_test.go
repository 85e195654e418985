package connect_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/mcp-elicit/elicit/auth/jwtauth"
	"github.com/mcp-elicit/elicit/connect"
	"github.com/mcp-elicit/elicit/internal/fakeidp"
)

// oidcHarness is a harness whose pages sign in through a fake issuer.
func oidcHarness(t *testing.T) (*harness, *fakeidp.Server) {
	t.Helper()
	idp := fakeidp.Start(t)
	h := newHarnessWith(t, func(o *connect.Options) {
		idp.AddClient(fakeidp.Client{ID: "pages", Secret: "s3cret-client", RedirectURL: o.BaseURL + connect.SignInCallbackPath})
		// The ID token is judged by the issuer's real clock, not the
		// harness's fixed one.
		oc, err := jwtauth.NewOIDC(context.Background(), jwtauth.OIDCOptions{Issuer: idp.URL, ClientID: "pages", ClientSecret: "s3cret-client",
			RedirectURL: o.BaseURL + connect.SignInCallbackPath})
		if err != nil {
			t.Fatal(err)
		}
		o.SignIn = oc
	})
	return h, idp
}

// idpLogin follows GET /ui/login?next=... to the issuer, signs in there as
// user and returns the callback URL the issuer redirected to.
func (h *harness) idpLogin(c *http.Client, user, next string) string {
	h.t.Helper()
	resp, _ := h.get(c, "/ui/login?next="+url.QueryEscape(next))
	authz := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusSeeOther || !strings.Contains(authz, "/authorize?") {
		h.t.Fatalf("GET /ui/login: %d to %q, want 303 to the issuer", resp.StatusCode, authz)
	}
	u, _ := url.Parse(authz)
	q := u.Query()
	for _, k := range []string{"state", "nonce", "code_challenge"} {
		if len(q.Get(k)) < 43 {
			h.t.Fatalf("authorization request %s = %q", k, q.Get(k))
		}
	}
	if q.Get("code_challenge_method") != "S256" || q.Get("client_id") != "pages" || q.Get("scope") != "openid" {
		h.t.Fatalf("authorization request %v", q)
	}
	q.Set("username", user)
	resp, err := c.PostForm(u.Scheme+"://"+u.Host+u.Path, q)
	if err != nil {
		h.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		h.t.Fatalf("issuer sign-in: %d", resp.StatusCode)
	}
	return resp.Header.Get("Location")
}

func TestSignInOIDC(t *testing.T) {
	h, idp := oidcHarness(t)
	f := h.startFlow(idp.URL + "#alice")

	// alice signs in at the issuer and lands back on the flow page.
	alice := h.client()
	cb := h.idpLogin(alice, "alice", flowPath(f))
	resp, _ := h.get(alice, cb)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != flowPath(f) {
		t.Fatalf("callback: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	resp, body := h.get(alice, flowPath(f))
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `id="key-form"`) {
		t.Fatalf("flow page for alice: %d\n%s", resp.StatusCode, body)
	}

	// The code is single use: replaying the callback (with a new sign-in
	// cookie from another start) does not sign in again.
	replay := h.client()
	h.idpLogin(replay, "mallory", "/ui/")
	resp, _ = h.get(replay, cb)
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("replayed callback in another browser: %d, want 403 (state)", resp.StatusCode)
	}

	// bob signs in and is refused alice's flow; nothing is stored.
	bob := h.client()
	resp, _ = h.get(bob, h.idpLogin(bob, "bob", flowPath(f)))
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("bob callback: %d", resp.StatusCode)
	}
	resp, body = h.get(bob, flowPath(f))
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "wrong-account") {
		t.Fatalf("flow page for bob: %d\n%s", resp.StatusCode, body)
	}
	csrf := field(t, csrfRE, body)
	resp, _ = h.post(bob, "/ui/set_api_key", url.Values{"flow": {f.ID}, "csrf": {csrf}, "api_key": {"sk_bob_key_123"}})
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("bob's key post: %d", resp.StatusCode)
	}
	h.wantPending(f)
	h.wantNoSecret(idp.URL + "#alice")
	h.wantNoSecret(idp.URL + "#bob")
	if !strings.Contains(h.logs.String(), `"session_principal":"`+idp.URL+`#bob"`) {
		t.Errorf("refusal not audited with bob's principal:\n%s", h.logs)
	}
	h.assertNoLeak("s3cret-client")
}

func TestSignInOIDCRefusals(t *testing.T) {
	h, _ := oidcHarness(t)
	// callback signs in at the issuer as alice, then returns the callback
	// query the issuer sent, changed by edit.
	callback := func(c *http.Client, edit func(url.Values)) *http.Response {
		cb, _ := url.Parse(h.idpLogin(c, "alice", "/ui/"))
		q := cb.Query()
		edit(q)
		resp, _ := h.get(c, connect.SignInCallbackPath+"?"+q.Encode())
		return resp
	}
	tests := []struct {
		name   string
		run    func(c *http.Client) *http.Response
		status int
	}{
		{"callback without a sign-in", func(c *http.Client) *http.Response {
			resp, _ := h.get(c, connect.SignInCallbackPath+"?code=x&state=y")
			return resp
		}, http.StatusBadRequest},
		{"state mismatch", func(c *http.Client) *http.Response {
			return callback(c, func(q url.Values) { q.Set("state", strings.Repeat("A", 43)) })
		}, http.StatusForbidden},
		{"issuer error", func(c *http.Client) *http.Response {
			return callback(c, func(q url.Values) { q.Del("code"); q.Set("error", "access_denied") })
		}, http.StatusForbidden},
		{"other iss", func(c *http.Client) *http.Response {
			return callback(c, func(q url.Values) { q.Set("iss", "https://evil.example") })
		}, http.StatusForbidden},
		{"bad code", func(c *http.Client) *http.Response {
			return callback(c, func(q url.Values) { q.Set("code", "forged") })
		}, http.StatusForbidden},
		{"demo form closed", func(c *http.Client) *http.Response {
			resp, _ := h.post(c, "/ui/login", url.Values{"username": {"alice"}})
			return resp
		}, http.StatusNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := h.client()
			resp := tt.run(c)
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tt.status)
			}
			if r, _ := h.get(c, "/ui/"); r.StatusCode != http.StatusSeeOther {
				t.Errorf("signed in after a refused sign-in: GET /ui/ %d", r.StatusCode)
			}
		})
	}
}

func ExampleOptions_signIn() {
	idp, err := fakeidp.New() // stands in for the real issuer
	if err != nil {
		panic(err)
	}
	defer idp.Close()
	const base = "https://mcp.example.com"
	idp.AddClient(fakeidp.Client{ID: "pages", RedirectURL: base + connect.SignInCallbackPath})
	st, key, cleanup := exampleStore()
	defer cleanup()

	// The pages sign users in at the issuer that also issues the MCP
	// endpoint's access tokens (jwtauth.JWT), so both name a user the same way.
	oc, err := jwtauth.NewOIDC(context.Background(), jwtauth.OIDCOptions{
		Issuer: idp.URL, ClientID: "pages", RedirectURL: base + connect.SignInCallbackPath,
	})
	if err != nil {
		panic(err)
	}
	svc, err := connect.New(connect.Options{Store: st, MasterKey: key, BaseURL: base, SignIn: oc, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		panic(err)
	}
	rec := httptest.NewRecorder()
	svc.Handler().ServeHTTP(rec, httptest.NewRequest("GET", base+"/ui/login?next=/ui/", nil))
	fmt.Println(rec.Code, strings.HasPrefix(rec.Header().Get("Location"), idp.URL+"/authorize?"))
	// Output:
	// 303 true
}
