// Package auth decides who is calling: it turns an HTTP request into a
// Principal. It is the core every transport imports, and depends on the
// standard library only.
//
// The public surface: the Authenticator interface and its errors (*Error,
// ErrUnauthenticated, ErrForbidden, ErrIssuerUnavailable); Principal, its
// ID and ParseID; WithPrincipal and FromContext; BearerToken and its
// errors; the implementations DemoBearer (token = user name, for loopback
// demos) and Anonymous (no authentication, for conformance fixtures); and
// the protected resource metadata of RFC 9728 (ProtectedResourceMetadata,
// MetadataHandler, MetadataPath, MetadataURL).
//
// OAuth 2.0 access tokens verified against an issuer's JWKS (JWT), and
// OpenID Connect sign-in of browsers for the URL-mode pages (OIDC), are
// in auth/jwtauth, with go-oidc, go-jose and x/oauth2: a server that does
// not import it does not link them.
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
)

// Principal is an authenticated caller. State, URL flows, browser
// sessions and vault secrets are bound to its ID, never to Subject alone:
// two issuers may use the same subject for different people.
type Principal struct {
	// Issuer is the issuer identifier of the token that authenticated the
	// caller (JWT, OIDC); "" for demo users and Anonymous.
	Issuer string
	// Subject is the stable user id: the demo user name, or the token's
	// sub claim, unique within Issuer ("" only for Anonymous).
	Subject string
}

// ErrForbidden means the credentials were valid but do not grant this
// request (RFC 6750 insufficient_scope); the transport answers 403.
var ErrForbidden = errors.New("auth: insufficient scope")

// ErrIssuerUnavailable means the credentials could not be checked because
// the issuer's keys could not be fetched; the transport answers 503 with
// Retry-After, so that an outage does not read as a bad token.
var ErrIssuerUnavailable = errors.New("auth: issuer unavailable")

// Error is an authentication failure together with its HTTP answer (RFC
// 6750 §3): Status 401 for a missing or invalid token, 400 for a malformed
// request, 403 for insufficient scope, 503 when the issuer cannot be
// reached; Challenge is the WWW-Authenticate value to send with it ("" for
// none). It matches ErrUnauthenticated, ErrForbidden (403) or
// ErrIssuerUnavailable (503) with errors.Is. Reason is for the server log
// and never holds the token. Help, when set, tells the client in a
// sentence how to authenticate (it goes into the answer's message, so it
// holds nothing secret either).
type Error struct {
	Status    int
	Challenge string
	Reason    string
	Help      string
}

func (e *Error) Error() string { return "auth: " + e.Reason }

// Unwrap returns ErrForbidden for a 403, ErrIssuerUnavailable for a 503,
// else ErrUnauthenticated.
func (e *Error) Unwrap() error {
	switch e.Status {
	case http.StatusForbidden:
		return ErrForbidden
	case http.StatusServiceUnavailable:
		return ErrIssuerUnavailable
	}
	return ErrUnauthenticated
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

// DemoHelp is how a client authenticates to DemoBearer; a refusal carries
// it (Error.Help).
const DemoHelp = "send Authorization: Bearer <your user name>"

// Authenticate reads the bearer token as the user name. A request without
// one, or with one that is not a user name, gets an *Error: 401 with the
// challenge (error="invalid_token" when a token was sent, RFC 6750 §3.1)
// and DemoHelp.
func (d DemoBearer) Authenticate(r *http.Request) (Principal, error) {
	token, err := BearerToken(r.Header)
	switch {
	case errors.Is(err, ErrNoBearer):
		return Principal{}, &Error{Status: http.StatusUnauthorized, Challenge: d.Challenge(), Reason: "no bearer token", Help: DemoHelp}
	case err != nil || !ValidUserName(token):
		return Principal{}, &Error{Status: http.StatusUnauthorized, Challenge: d.Challenge() + `, error="invalid_token"`,
			Reason: "the bearer token is not a demo user name",
			Help:   "the bearer token must be a user name of 1 to 64 letters, digits, '.', '_' or '-': " + DemoHelp}
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
