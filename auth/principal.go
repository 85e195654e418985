package auth

import (
	"errors"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// MaxSubjectLen is the longest accepted sub claim, in bytes (OpenID Connect
// Core §2: at most 255 ASCII characters).
const MaxSubjectLen = 255

// MaxTokenLen bounds a bearer token, in bytes; real access tokens are a few
// kilobytes at most.
const MaxTokenLen = 16 << 10

// ID returns the string the server binds requestState, URL flows, browser
// sessions and vault secrets to: Subject when Issuer is "" (demo users,
// Anonymous), else Issuer + "#" + Subject. Neither an issuer (ValidIssuer
// refuses '#') nor a demo user name contains '#', so distinct valid
// principals never share an ID; ParseID reverses it.
func (p Principal) ID() string {
	if p.Issuer == "" {
		return p.Subject
	}
	return p.Issuer + "#" + p.Subject
}

// ParseID returns the Principal whose ID is id. It accepts a demo user name
// (ValidUserName) or Issuer + "#" + Subject with ValidIssuer(Issuer) and
// ValidSubject(Subject); "" and anything else is an error.
func ParseID(id string) (Principal, error) {
	iss, sub, ok := strings.Cut(id, "#")
	if !ok {
		if !ValidUserName(id) {
			return Principal{}, errors.New("auth: principal id is neither a user name nor issuer#subject")
		}
		return Principal{Subject: id}, nil
	}
	if err := ValidIssuer(iss); err != nil {
		return Principal{}, err
	}
	if !ValidSubject(sub) {
		return Principal{}, errors.New("auth: principal id has an invalid subject")
	}
	return Principal{Issuer: iss, Subject: sub}, nil
}

// ValidSubject reports whether sub is an acceptable sub claim: 1 to
// MaxSubjectLen visible ASCII characters (0x21–0x7e). It keeps principal
// ids printable in logs and pages, and storable in any database.
func ValidSubject(sub string) bool {
	if len(sub) == 0 || len(sub) > MaxSubjectLen {
		return false
	}
	for i := 0; i < len(sub); i++ {
		if c := sub[i]; c < 0x21 || c > 0x7e {
			return false
		}
	}
	return true
}

// ValidIssuer checks an issuer identifier (RFC 8414 §2, OpenID Connect
// Discovery §3): an absolute https URL with a host and no query, fragment or
// user info, or http on a loopback host (for tests and local issuers); at
// most 2048 bytes of visible ASCII, and no '#' (it separates issuer and
// subject in a principal id).
func ValidIssuer(iss string) error {
	if iss == "" || len(iss) > 2048 || strings.ContainsRune(iss, '#') {
		return errors.New("auth: issuer must be a URL without fragment, at most 2048 bytes")
	}
	for i := 0; i < len(iss); i++ {
		if c := iss[i]; c < 0x21 || c > 0x7e {
			return errors.New("auth: issuer must be visible ASCII")
		}
	}
	u, err := url.Parse(iss)
	switch {
	case err != nil || u.Host == "" || u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Opaque != "":
		return errors.New("auth: issuer must be an absolute URL with a host and no query or user info")
	case u.Scheme == "https":
		return nil
	case u.Scheme == "http" && isLoopbackHost(u.Hostname()):
		return nil
	}
	return errors.New("auth: issuer must be https (http only on a loopback host)")
}

func isLoopbackHost(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// BearerToken's errors, so that an Authenticator answers each as RFC 6750
// §3.1 says: 401 without an error code for ErrNoBearer, 400
// invalid_request for ErrManyAuthorization, 401 invalid_token for
// ErrMalformedBearer.
var (
	// ErrNoBearer: no Authorization header, or one with another scheme.
	ErrNoBearer = errors.New("no bearer token")
	// ErrManyAuthorization: more than one Authorization header.
	ErrManyAuthorization = errors.New("more than one Authorization header")
	// ErrMalformedBearer: a Bearer header whose token is not RFC 6750 b64token syntax.
	ErrMalformedBearer = errors.New("malformed bearer token")
)

// BearerToken returns the token of the request's single "Authorization:
// Bearer <token>" header (RFC 6750 §2.1: scheme case-insensitive, token in
// b64token syntax, at most MaxTokenLen bytes; surrounding spaces and tabs
// are ignored). It fails when there is no such header, when there are
// several Authorization headers, or when the token is malformed; the error
// never contains the token.
func BearerToken(h http.Header) (string, error) {
	values := h.Values("Authorization")
	switch len(values) {
	case 0:
		return "", ErrNoBearer
	case 1:
	default:
		return "", ErrManyAuthorization
	}
	scheme, rest, ok := strings.Cut(strings.TrimLeft(values[0], " \t"), " ")
	if !strings.EqualFold(scheme, "Bearer") {
		return "", ErrNoBearer
	}
	token := strings.Trim(rest, " \t")
	if !ok || !validB64Token(token) {
		return "", ErrMalformedBearer
	}
	return token, nil
}

// validB64Token: 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"=".
func validB64Token(t string) bool {
	if len(t) == 0 || len(t) > MaxTokenLen {
		return false
	}
	end := len(t)
	for end > 0 && t[end-1] == '=' {
		end--
	}
	if end == 0 {
		return false
	}
	for i := 0; i < end; i++ {
		c := t[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '-' || c == '.' || c == '_' || c == '~' || c == '+' || c == '/') {
			return false
		}
	}
	return true
}
