package oauth

import (
	"errors"
	"fmt"
	"strings"

	"github.com/mcp-elicit/elicit/internal/termtext"
)

// Sentinel errors, matched with errors.Is.
var (
	// ErrNoMetadata: the server refused the request but publishes no
	// protected resource metadata (RFC 9728) where MCP says to look, so
	// there is no authorization server to ask.
	ErrNoMetadata = errors.New("oauth: the server publishes no protected resource metadata")
	// ErrNoRegistration: no way to get a client id at this authorization
	// server: no pre-registered client for it, no client ID metadata
	// document it accepts, no dynamic client registration.
	ErrNoRegistration = errors.New("oauth: no client registration for this authorization server")
	// ErrStateMismatch: the authorization response is not the answer to
	// the request this client sent (its state differs).
	ErrStateMismatch = errors.New("oauth: the authorization response does not carry the state of the request")
	// ErrIssuerMissing: the authorization server says it puts iss in its
	// authorization responses (RFC 9207) and this one has none.
	ErrIssuerMissing = errors.New("oauth: the authorization response has no iss, which the authorization server promised")
	// ErrNoBrowser: the authorization code grant needs Config.Browser.
	ErrNoBrowser = errors.New("oauth: signing in needs a Browser")
)

// DiscoveryError: a metadata document (protected resource or
// authorization server) could not be fetched or is unusable.
type DiscoveryError struct {
	// What is "protected resource metadata" or "authorization server
	// metadata".
	What string
	// URL is the document's URL.
	URL string
	Err error
}

func (e *DiscoveryError) Error() string {
	return fmt.Sprintf("oauth: %s at %s: %v", e.What, e.URL, e.Err)
}

// Unwrap returns Err.
func (e *DiscoveryError) Unwrap() error { return e.Err }

// ResourceMismatchError: the protected resource metadata names another
// resource than the MCP endpoint in use (RFC 9728 §3.3): no token is asked
// for it, since it would be one for another server.
type ResourceMismatchError struct {
	Endpoint, Resource, MetadataURL string
}

func (e *ResourceMismatchError) Error() string {
	return fmt.Sprintf("oauth: the protected resource metadata at %s is for %s, not for %s: refusing to sign in for another server",
		e.MetadataURL, clip(e.Resource, 200), e.Endpoint)
}

// IssuerMismatchError: an issuer identifier differs from the one this
// client recorded, by simple string comparison: in the authorization
// server's metadata (RFC 8414 §3.3) or in the authorization response's
// iss (RFC 9207 §2.4, a possible mix-up attack).
type IssuerMismatchError struct {
	// Where is "metadata" or "authorization response".
	Where    string
	Expected string
	Got      string
}

func (e *IssuerMismatchError) Error() string {
	return fmt.Sprintf("oauth: the %s names issuer %q, not %q: refused", e.Where, clip(e.Got, 200), e.Expected)
}

// InsecureEndpointError: an OAuth endpoint or metadata URL is not https
// (plain http is allowed on loopback only), or is not an absolute URL.
type InsecureEndpointError struct {
	// Name says which URL: "token_endpoint", "redirect", …
	Name string
	URL  string
}

func (e *InsecureEndpointError) Error() string {
	return fmt.Sprintf("oauth: %s %q is not an https URL (http is allowed only on loopback): refused", e.Name, clip(e.URL, 200))
}

// AuthorizationError: the authorization server answered the authorization
// request with an error (RFC 6749 §4.1.2.1), e.g. access_denied when the
// user refused. Code and Description are the server's words.
type AuthorizationError struct {
	Code, Description string
}

func (e *AuthorizationError) Error() string {
	s := "oauth: the authorization server refused: " + clip(e.Code, 60)
	if e.Description != "" {
		s += ": " + clip(e.Description, 300)
	}
	return s
}

// TokenError: the token endpoint refused a token request (RFC 6749
// §5.2), or answered with no usable token. Code and Description are the
// server's words; the response body itself is never kept, as it may
// echo what was sent.
type TokenError struct {
	// Grant is the grant_type of the request.
	Grant string
	// Status is the HTTP status, 0 when the response was a 2xx.
	Status            int
	Code, Description string
}

func (e *TokenError) Error() string {
	s := "oauth: the token endpoint refused the " + e.Grant + " request"
	if e.Status != 0 {
		s += fmt.Sprintf(" (HTTP %d)", e.Status)
	}
	if e.Code != "" {
		s += ": " + clip(e.Code, 60)
	}
	if e.Description != "" {
		s += ": " + clip(e.Description, 300)
	}
	return s
}

// AudienceError: the access token says it is for another audience than
// the resource it was asked for (RFC 8707; a JWT access token's aud, RFC
// 9068): it is not sent to the server, nor stored.
type AudienceError struct {
	Resource string
	Audience []string
}

func (e *AudienceError) Error() string {
	return fmt.Sprintf("oauth: the authorization server issued a token for %s, not for %s: refused",
		clip(strings.Join(e.Audience, ", "), 300), e.Resource)
}

// RegistrationError: dynamic client registration (RFC 7591) failed.
type RegistrationError struct {
	Endpoint string
	Err      error
}

func (e *RegistrationError) Error() string {
	return fmt.Sprintf("oauth: registering this client at %s: %s", e.Endpoint, clip(e.Err.Error(), 400))
}

// Unwrap returns Err.
func (e *RegistrationError) Unwrap() error { return e.Err }

// clip quotes server text in an error (internal/termtext.Clip).
func clip(s string, n int) string { return termtext.Clip(s, n) }
