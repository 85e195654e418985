package jwtauth_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mcp-elicit/elicit/auth"
	"github.com/mcp-elicit/elicit/auth/jwtauth"
	"github.com/mcp-elicit/elicit/internal/fakeidp"
)

const redirect = "http://127.0.0.1:3000/ui/login/callback"

// code runs the authorization step at the fake issuer as user and
// returns the code and iss of the redirect.
func code(t *testing.T, o *jwtauth.OIDC, user, state, nonce, verifier string) (string, string) {
	t.Helper()
	u, _ := url.Parse(o.AuthCodeURL(state, nonce, verifier))
	q := u.Query()
	q.Set("username", user)
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.PostForm(u.Scheme+"://"+u.Host+u.Path, q)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || resp.StatusCode != http.StatusFound || loc.Query().Get("state") != state {
		t.Fatalf("authorize: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	return loc.Query().Get("code"), loc.Query().Get("iss")
}

func TestOIDCExchange(t *testing.T) {
	idp := fakeidp.Start(t)
	idp.AddClient(fakeidp.Client{ID: "pages", Secret: "client-secret", RedirectURL: redirect})
	o, err := jwtauth.NewOIDC(context.Background(), jwtauth.OIDCOptions{Issuer: idp.URL, ClientID: "pages", ClientSecret: "client-secret", RedirectURL: redirect})
	if err != nil {
		t.Fatal(err)
	}
	verifier := strings.Repeat("v", 43)
	tests := []struct {
		name  string
		hook  func(*fakeidp.Claims, *fakeidp.Alg)
		nonce string // given to Exchange; "" means the one sent
		iss   string // "" means the callback's
		verif string // "" means the one sent
		ok    bool
	}{
		{name: "valid", ok: true},
		{name: "nonce differs", nonce: "other-nonce"},
		{name: "PKCE verifier differs", verif: strings.Repeat("w", 43)},
		{name: "callback names another issuer", iss: "https://evil.example"},
		{name: "ID token for another client", hook: func(c *fakeidp.Claims, _ *fakeidp.Alg) { c.Audience = []string{"other"} }},
		{name: "ID token azp of another client", hook: func(c *fakeidp.Claims, _ *fakeidp.Alg) {
			c.Audience, c.AZP = []string{"pages", "other"}, "other"
		}},
		{name: "ID token expired", hook: func(c *fakeidp.Claims, _ *fakeidp.Alg) { c.Expiry = time.Now().Add(-time.Hour) }},
		{name: "ID token not valid yet", hook: func(c *fakeidp.Claims, _ *fakeidp.Alg) { c.NotBefore = time.Now().Add(3 * time.Minute) }},
		{name: "ID token issued in the future", hook: func(c *fakeidp.Claims, _ *fakeidp.Alg) { c.IssuedAt = time.Now().Add(3 * time.Minute) }},
		{name: "ID token alg none", hook: func(_ *fakeidp.Claims, a *fakeidp.Alg) { *a = fakeidp.None }},
		{name: "ID token HMAC with the public key", hook: func(_ *fakeidp.Claims, a *fakeidp.Alg) { *a = fakeidp.HS256PublicKey }},
		{name: "ID token from another issuer", hook: func(c *fakeidp.Claims, _ *fakeidp.Alg) { c.Issuer = "https://evil.example" }},
		{name: "ID token without nonce", hook: func(c *fakeidp.Claims, _ *fakeidp.Alg) { c.Nonce = "" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			idp.SetIDTokenHook(tt.hook)
			defer idp.SetIDTokenHook(nil)
			cd, iss := code(t, o, "alice", "state-1", "nonce-1", verifier)
			if iss != idp.URL {
				t.Fatalf("iss %q", iss)
			}
			nonce, v := "nonce-1", verifier
			if tt.nonce != "" {
				nonce = tt.nonce
			}
			if tt.iss != "" {
				iss = tt.iss
			}
			if tt.verif != "" {
				v = tt.verif
			}
			p, err := o.Exchange(context.Background(), cd, iss, v, nonce)
			if tt.ok != (err == nil) {
				t.Fatalf("got %+v, %v", p, err)
			}
			if err != nil {
				if strings.Contains(err.Error(), cd) || strings.Contains(err.Error(), "client-secret") {
					t.Errorf("error leaks the code or secret: %v", err)
				}
				return
			}
			if p != (auth.Principal{Issuer: idp.URL, Subject: "alice"}) {
				t.Errorf("principal %+v", p)
			}
			// The code is single use.
			if _, err := o.Exchange(context.Background(), cd, iss, v, nonce); err == nil {
				t.Error("code redeemed twice")
			}
		})
	}
}
