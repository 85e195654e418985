package jwtauth_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcp-elicit/elicit/auth"
	"github.com/mcp-elicit/elicit/auth/jwtauth"
	"github.com/mcp-elicit/elicit/internal/fakeidp"
)

const resource = "http://127.0.0.1:3000/mcp"

func newJWT(t *testing.T, idp *fakeidp.Server, scopes ...string) *jwtauth.JWT {
	t.Helper()
	j, err := jwtauth.NewJWT(context.Background(), jwtauth.JWTOptions{Issuer: idp.URL, Resource: resource, Scopes: scopes})
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func authenticate(j *jwtauth.JWT, header ...string) (auth.Principal, error) {
	r := httptest.NewRequest("POST", "/mcp", nil)
	for _, h := range header {
		r.Header.Add("Authorization", h)
	}
	return j.Authenticate(r)
}

func TestJWT(t *testing.T) {
	idp := fakeidp.Start(t)
	j := newJWT(t, idp)
	meta := `resource_metadata="http://127.0.0.1:3000/.well-known/oauth-protected-resource/mcp"`
	good := fakeidp.Claims{Subject: "alice", Audience: []string{resource}}
	with := func(f func(*fakeidp.Claims)) fakeidp.Claims { c := good; f(&c); return c }
	tests := []struct {
		name      string
		header    []string
		status    int // 0: accepted
		challenge string
	}{
		{"RS256", []string{"Bearer " + idp.Sign(fakeidp.RS256, good)}, 0, ""},
		{"ES256", []string{"Bearer " + idp.Sign(fakeidp.ES256, good)}, 0, ""},
		{"scheme case", []string{"bearer " + idp.Sign(fakeidp.RS256, good)}, 0, ""},
		{"audience among several", []string{"Bearer " + idp.Sign(fakeidp.RS256, with(func(c *fakeidp.Claims) { c.Audience = []string{"other", resource} }))}, 0, ""},
		{"expired within leeway", []string{"Bearer " + idp.Sign(fakeidp.RS256, with(func(c *fakeidp.Claims) { c.Expiry = time.Now().Add(-30 * time.Second) }))}, 0, ""},
		{"nbf passed", []string{"Bearer " + idp.Sign(fakeidp.RS256, with(func(c *fakeidp.Claims) { c.NotBefore = time.Now().Add(-time.Hour) }))}, 0, ""},
		{"nbf within leeway", []string{"Bearer " + idp.Sign(fakeidp.RS256, with(func(c *fakeidp.Claims) { c.NotBefore = time.Now().Add(30 * time.Second) }))}, 0, ""},
		{"iat within leeway", []string{"Bearer " + idp.Sign(fakeidp.RS256, with(func(c *fakeidp.Claims) { c.IssuedAt = time.Now().Add(30 * time.Second) }))}, 0, ""},
		{"no header", nil, 401, "Bearer " + meta},
		{"basic scheme", []string{"Basic YWxpY2U6eA=="}, 401, "Bearer " + meta},
		{"two headers", []string{"Bearer a.b.c", "Bearer a.b.c"}, 400, `Bearer error="invalid_request", ` + meta},
		{"empty token", []string{"Bearer "}, 401, `Bearer error="invalid_token", ` + meta},
		{"not b64token", []string{"Bearer a b"}, 401, `Bearer error="invalid_token", ` + meta},
		{"garbage", []string{"Bearer abc"}, 401, `Bearer error="invalid_token", ` + meta},
		{"expired", []string{"Bearer " + idp.Sign(fakeidp.RS256, with(func(c *fakeidp.Claims) { c.Expiry = time.Now().Add(-2 * time.Minute) }))}, 401, `Bearer error="invalid_token", ` + meta},
		// Beyond DefaultLeeway (a minute), yet within the 5 minutes
		// go-oidc alone would allow.
		{"nbf minutes ahead", []string{"Bearer " + idp.Sign(fakeidp.RS256, with(func(c *fakeidp.Claims) { c.NotBefore = time.Now().Add(3 * time.Minute) }))}, 401, `Bearer error="invalid_token", ` + meta},
		{"nbf an hour ahead", []string{"Bearer " + idp.Sign(fakeidp.RS256, with(func(c *fakeidp.Claims) { c.NotBefore = time.Now().Add(time.Hour) }))}, 401, `Bearer error="invalid_token", ` + meta},
		{"iat minutes ahead", []string{"Bearer " + idp.Sign(fakeidp.RS256, with(func(c *fakeidp.Claims) { c.IssuedAt = time.Now().Add(3 * time.Minute) }))}, 401, `Bearer error="invalid_token", ` + meta},
		{"wrong audience", []string{"Bearer " + idp.Sign(fakeidp.RS256, with(func(c *fakeidp.Claims) { c.Audience = []string{"http://127.0.0.1:3000/other"} }))}, 401, `Bearer error="invalid_token", ` + meta},
		{"no audience", []string{"Bearer " + idp.Sign(fakeidp.RS256, with(func(c *fakeidp.Claims) { c.Audience = nil }))}, 401, `Bearer error="invalid_token", ` + meta},
		{"wrong issuer", []string{"Bearer " + idp.Sign(fakeidp.RS256, with(func(c *fakeidp.Claims) { c.Issuer = "https://evil.example" }))}, 401, `Bearer error="invalid_token", ` + meta},
		{"alg none", []string{"Bearer " + idp.Sign(fakeidp.None, good)}, 401, `Bearer error="invalid_token", ` + meta},
		{"HMAC with the public key", []string{"Bearer " + idp.Sign(fakeidp.HS256PublicKey, good)}, 401, `Bearer error="invalid_token", ` + meta},
		{"wrong key", []string{"Bearer " + idp.Sign(fakeidp.RS256OtherKey, good)}, 401, `Bearer error="invalid_token", ` + meta},
		{"no subject", []string{"Bearer " + idp.Sign(fakeidp.RS256, with(func(c *fakeidp.Claims) { c.Subject = "" }))}, 401, `Bearer error="invalid_token", ` + meta},
		{"subject with a space", []string{"Bearer " + idp.Sign(fakeidp.RS256, with(func(c *fakeidp.Claims) { c.Subject = "a b" }))}, 401, `Bearer error="invalid_token", ` + meta},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := authenticate(j, tt.header...)
			if tt.status == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if p != (auth.Principal{Issuer: idp.URL, Subject: "alice"}) || p.ID() != idp.URL+"#alice" {
					t.Fatalf("principal %+v id %q", p, p.ID())
				}
				return
			}
			var ae *auth.Error
			if !errors.As(err, &ae) {
				t.Fatalf("accepted as %+v (err %v)", p, err)
			}
			if ae.Status != tt.status || ae.Challenge != tt.challenge {
				t.Errorf("got %d %q, want %d %q (%s)", ae.Status, ae.Challenge, tt.status, tt.challenge, ae.Reason)
			}
			if !errors.Is(err, auth.ErrUnauthenticated) {
				t.Errorf("%v is not ErrUnauthenticated", err)
			}
			for _, h := range tt.header {
				if _, tok, _ := strings.Cut(h, " "); len(tok) > 8 && strings.Contains(err.Error(), tok) {
					t.Errorf("error %q contains the token", err)
				}
			}
		})
	}
	if c := j.Challenge(); c != "Bearer "+meta {
		t.Errorf("Challenge() = %q", c)
	}
}

func TestJWTScopes(t *testing.T) {
	idp := fakeidp.Start(t)
	j := newJWT(t, idp, "mcp:tools", "mcp:read")
	meta := `resource_metadata="http://127.0.0.1:3000/.well-known/oauth-protected-resource/mcp"`
	tests := []struct {
		scope  string
		status int
	}{
		{"mcp:read mcp:tools", 0},
		{"openid mcp:tools mcp:read", 0},
		{"mcp:read", 403},
		{"", 403},
	}
	for _, tt := range tests {
		tok := idp.Sign(fakeidp.RS256, fakeidp.Claims{Subject: "alice", Audience: []string{resource}, Scope: tt.scope})
		_, err := authenticate(j, "Bearer "+tok)
		var ae *auth.Error
		switch {
		case tt.status == 0 && err != nil:
			t.Errorf("%q refused: %v", tt.scope, err)
		case tt.status != 0 && (!errors.As(err, &ae) || ae.Status != 403 || !errors.Is(err, auth.ErrForbidden)):
			t.Errorf("%q: got %v, want 403", tt.scope, err)
		case tt.status != 0 && ae.Challenge != `Bearer error="insufficient_scope", `+meta+`, scope="mcp:tools mcp:read"`:
			t.Errorf("%q: challenge %q", tt.scope, ae.Challenge)
		}
	}
	if c := j.Challenge(); c != "Bearer "+meta+`, scope="mcp:tools mcp:read"` {
		t.Errorf("Challenge() = %q", c)
	}
}

func TestNewJWTRefuses(t *testing.T) {
	idp := fakeidp.Start(t)
	tests := []struct {
		name string
		opts jwtauth.JWTOptions
	}{
		{"HS256", jwtauth.JWTOptions{Issuer: idp.URL, Resource: resource, Algorithms: []string{"RS256", "HS256"}}},
		{"none", jwtauth.JWTOptions{Issuer: idp.URL, Resource: resource, Algorithms: []string{"none"}}},
		{"unknown alg", jwtauth.JWTOptions{Issuer: idp.URL, Resource: resource, Algorithms: []string{"RS257"}}},
		{"http issuer off loopback", jwtauth.JWTOptions{Issuer: "http://idp.example", Resource: resource}},
		{"issuer with fragment", jwtauth.JWTOptions{Issuer: idp.URL + "#x", Resource: resource}},
		{"issuer mismatch", jwtauth.JWTOptions{Issuer: idp.URL + "/", Resource: resource}},
		{"no resource", jwtauth.JWTOptions{Issuer: idp.URL}},
		{"resource with query", jwtauth.JWTOptions{Issuer: idp.URL, Resource: resource + "?x=1"}},
		{"scope with quote", jwtauth.JWTOptions{Issuer: idp.URL, Resource: resource, Scopes: []string{`a"b`}}},
	}
	for _, tt := range tests {
		if _, err := jwtauth.NewJWT(context.Background(), tt.opts); err == nil {
			t.Errorf("%s: accepted", tt.name)
		}
	}
}

func TestMetadata(t *testing.T) {
	idp := fakeidp.Start(t)
	j := newJWT(t, idp, "mcp:tools")
	rec := httptest.NewRecorder()
	auth.MetadataHandler(j.Metadata()).ServeHTTP(rec, httptest.NewRequest("GET", auth.MetadataPath(resource), nil))
	var m map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil || rec.Code != 200 {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	want := `{"authorization_servers":["` + idp.URL + `"],"bearer_methods_supported":["header"],"resource":"` + resource + `","scopes_supported":["mcp:tools"]}`
	if got, _ := json.Marshal(m); string(got) != want {
		t.Errorf("metadata %s\nwant     %s", got, want)
	}
	if rec.Header().Get("Access-Control-Allow-Origin") != "*" || rec.Header().Get("Content-Type") != "application/json" {
		t.Errorf("headers %v", rec.Header())
	}
	rec = httptest.NewRecorder()
	auth.MetadataHandler(j.Metadata()).ServeHTTP(rec, httptest.NewRequest("POST", "/", nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d", rec.Code)
	}
	for res, want := range map[string]string{
		"https://mcp.example.com/mcp":      "https://mcp.example.com/.well-known/oauth-protected-resource/mcp",
		"https://mcp.example.com":          "https://mcp.example.com/.well-known/oauth-protected-resource",
		"https://mcp.example.com/":         "https://mcp.example.com/.well-known/oauth-protected-resource",
		"https://mcp.example.com:8443/a/b": "https://mcp.example.com:8443/.well-known/oauth-protected-resource/a/b",
	} {
		if got := auth.MetadataURL(res); got != want {
			t.Errorf("MetadataURL(%q) = %q, want %q", res, got, want)
		}
	}
}
