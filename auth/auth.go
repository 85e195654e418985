// Package auth decides who is calling: it turns an HTTP request into a
// Principal. Implementations: DemoBearer (token = user name, for loopback
// demos), and Anonymous (no authentication, for conformance fixtures).
//
// MCP 2026-07-28 basic/authorization: a server that authenticates answers a
// request without valid credentials with HTTP 401 and a WWW-Authenticate
// challenge; requestState and URL flows are bound to the Principal's Subject
// (RS-S-05, ELI-S-09, SEC-U-S-06).
package auth

import (
	"context"
	"errors"
	"net/http"
	"strings"
)

// Principal is an authenticated caller.
type Principal struct {
	// Subject is the stable user id ("" only for Anonymous).
	Subject string
}

// ErrUnauthenticated means the request carried no valid credentials; the
// transport answers 401 with the Authenticator's challenge.
var ErrUnauthenticated = errors.New("auth: missing or invalid credentials")

// Authenticator authenticates one HTTP request.
type Authenticator interface {
	// Authenticate returns the caller, or an error wrapping ErrUnauthenticated.
	Authenticate(r *http.Request) (Principal, error)
	// Challenge is the WWW-Authenticate value sent with a 401.
	Challenge() string
}

type ctxKey struct{}

// WithPrincipal returns a context carrying p.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, ctxKey{}, p)
}

// FromContext returns the Principal stored by WithPrincipal, and whether there was one.
func FromContext(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(ctxKey{}).(Principal)
	return p, ok
}

// Anonymous authenticates every request as the empty principal.
type Anonymous struct{}

// Authenticate always succeeds with Principal{}.
func (Anonymous) Authenticate(*http.Request) (Principal, error) { return Principal{}, nil }

// Challenge is never used.
func (Anonymous) Challenge() string { return "" }

// DemoBearer treats "Authorization: Bearer <name>" as user <name>. It is
// for demos on loopback only: anyone can claim any name. Names are 1–64
// characters of [A-Za-z0-9._-].
type DemoBearer struct {
	// Realm names the server in the challenge.
	Realm string
}

// Authenticate reads the bearer token as the user name.
func (d DemoBearer) Authenticate(r *http.Request) (Principal, error) {
	values := r.Header.Values("Authorization")
	if len(values) != 1 {
		return Principal{}, ErrUnauthenticated // none, or ambiguous
	}
	scheme, token, ok := strings.Cut(values[0], " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return Principal{}, ErrUnauthenticated
	}
	token = strings.TrimSpace(token)
	if !ValidUserName(token) {
		return Principal{}, ErrUnauthenticated
	}
	return Principal{Subject: token}, nil
}

// Challenge returns `Bearer realm="<Realm>"`.
func (d DemoBearer) Challenge() string {
	realm := d.Realm
	if realm == "" {
		realm = "mcp"
	}
	return `Bearer realm="` + realm + `"`
}

// ValidUserName reports whether s is 1–64 characters of [A-Za-z0-9._-].
func ValidUserName(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
