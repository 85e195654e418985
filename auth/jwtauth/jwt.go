package jwtauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	jose "github.com/go-jose/go-jose/v4"

	"github.com/mcp-elicit/elicit/auth"
)

// DefaultAlgorithms are the JWS algorithms JWT and OIDC accept when their
// options name none.
var DefaultAlgorithms = []string{"RS256", "ES256"}

// DefaultLeeway is the clock skew allowed on a token's exp, nbf and iat
// when the options leave it 0.
const DefaultLeeway = time.Minute

// asymmetricAlgs are the algorithms an allow-list may name. "none" and the
// HMAC algorithms are never accepted: an HMAC key would have to be shared
// with the issuer, and accepting HS256 next to RS256 invites the classic
// key-confusion forgery (the public key used as the HMAC secret).
var asymmetricAlgs = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}

// JWTOptions configure a JWT authenticator.
type JWTOptions struct {
	// Issuer is the authorization server's issuer identifier, exactly as in
	// its tokens' iss claim; Issuer + "/.well-known/openid-configuration"
	// must serve its metadata with jwks_uri (OpenID Connect Discovery). See
	// auth.ValidIssuer. Required.
	Issuer string
	// Resource is this protected resource's identifier, the canonical URL of
	// the MCP endpoint such as "https://mcp.example.com/mcp" (RFC 8707, RFC
	// 9728 §2 "resource"): a token is accepted only if its aud lists it
	// (SEC-U-S-11). Required; https, or http on a loopback host.
	Resource string
	// Algorithms is the allow-list of JWS alg values; nil means
	// DefaultAlgorithms. Only asymmetric algorithms (RS*, PS*, ES*, EdDSA)
	// may be named: "none" and HS* are refused by NewJWT.
	Algorithms []string
	// Scopes, if any, must all be granted by a token (its scope claim,
	// space-separated, or scp, a string or an array); a token lacking one
	// gets 403 with error="insufficient_scope". They are also published as
	// scopes_supported in the metadata.
	Scopes []string
	// Leeway is the clock skew allowed on exp, nbf and iat: a token is
	// accepted until exp + Leeway, from nbf - Leeway, and with an iat up
	// to Leeway ahead. 0 means DefaultLeeway and a negative value none.
	Leeway time.Duration
	// HTTPClient fetches the discovery document and the JWKS; nil means a
	// client with a 10-second timeout.
	HTTPClient *http.Client
	// Now is the clock for exp, nbf and iat; nil means time.Now.
	Now func() time.Time
}

// JWT authenticates OAuth 2.0 bearer access tokens that are JWTs signed by
// one issuer (MCP basic/authorization; RFC 6750, RFC 9068): it checks the
// signature against the issuer's JWKS (fetched on first use, cached, and
// fetched again when a token names an unknown key), the algorithm against
// the allow-list, iss, aud (= Resource), exp, nbf and iat with leeway, and
// the required scopes. The principal is the issuer plus the sub claim. It is
// safe for concurrent use.
type JWT struct {
	issuer    string
	resource  string
	scopes    []string
	verifier  *verifier
	metaURL   string
	challenge string
}

// NewJWT checks opts and fetches the issuer's discovery document (bounded
// by ctx). It fails on an invalid issuer or resource, a forbidden or
// unknown algorithm, an invalid scope, an unreachable issuer, or metadata
// whose issuer differs from Issuer.
func NewJWT(ctx context.Context, opts JWTOptions) (*JWT, error) {
	if err := auth.ValidIssuer(opts.Issuer); err != nil {
		return nil, err
	}
	if err := validResource(opts.Resource); err != nil {
		return nil, err
	}
	for _, s := range opts.Scopes {
		if !validScopeToken(s) {
			return nil, fmt.Errorf("auth: invalid scope %q", s)
		}
	}
	v, err := newVerifier(ctx, opts.Issuer, opts.Resource, opts.Algorithms, opts.Leeway, opts.HTTPClient, opts.Now)
	if err != nil {
		return nil, err
	}
	j := &JWT{issuer: opts.Issuer, resource: opts.Resource, scopes: slices.Clone(opts.Scopes), verifier: v,
		metaURL: auth.MetadataURL(opts.Resource)}
	j.challenge = `Bearer resource_metadata="` + j.metaURL + `"`
	if len(j.scopes) > 0 {
		j.challenge += `, scope="` + strings.Join(j.scopes, " ") + `"`
	}
	return j, nil
}

// Challenge is the WWW-Authenticate value for a request without a token:
// `Bearer resource_metadata="<MetadataURL>"`, plus scope="..." when scopes
// are required (RFC 9728 §5.1, RFC 6750 §3).
func (j *JWT) Challenge() string { return j.challenge }

// Authenticate verifies the request's bearer token. Failures are *Error: 401
// without an error code when there is no bearer token, 400
// invalid_request for several Authorization headers, 401 invalid_token for
// a malformed, forged, expired, not yet valid (nbf), future-dated (iat),
// foreign (iss or aud) or badly signed token,
// 403 insufficient_scope for a missing scope, 503 (auth.ErrIssuerUnavailable)
// when the issuer's keys cannot be fetched.
func (j *JWT) Authenticate(r *http.Request) (auth.Principal, error) {
	token, err := auth.BearerToken(r.Header)
	switch {
	case errors.Is(err, auth.ErrNoBearer):
		return auth.Principal{}, &auth.Error{Status: http.StatusUnauthorized, Challenge: j.challenge, Reason: err.Error()}
	case errors.Is(err, auth.ErrManyAuthorization):
		return auth.Principal{}, j.fail(http.StatusBadRequest, "invalid_request", err.Error())
	case err != nil:
		return auth.Principal{}, j.fail(http.StatusUnauthorized, "invalid_token", err.Error())
	}
	var ff fetchFailure
	t, err := j.verifier.verify(context.WithValue(r.Context(), fetchFailureKey{}, &ff), token)
	if ff.err != nil {
		return auth.Principal{}, &auth.Error{Status: http.StatusServiceUnavailable, Reason: ff.err.Error()}
	}
	if err != nil {
		return auth.Principal{}, j.fail(http.StatusUnauthorized, "invalid_token", verifyReason(err))
	}
	if !auth.ValidSubject(t.Subject) {
		return auth.Principal{}, j.fail(http.StatusUnauthorized, "invalid_token", "sub claim missing or not 1-255 visible ASCII characters")
	}
	if len(j.scopes) > 0 {
		granted, err := tokenScopes(t)
		if err != nil {
			return auth.Principal{}, j.fail(http.StatusUnauthorized, "invalid_token", err.Error())
		}
		for _, s := range j.scopes {
			if !slices.Contains(granted, s) {
				return auth.Principal{}, j.fail(http.StatusForbidden, "insufficient_scope", "scope "+s+" not granted")
			}
		}
	}
	return auth.Principal{Issuer: j.issuer, Subject: t.Subject}, nil
}

// fail builds the *auth.Error for a refused token with an RFC 6750 error code.
func (j *JWT) fail(status int, code, reason string) *auth.Error {
	c := `Bearer error="` + code + `", resource_metadata="` + j.metaURL + `"`
	if len(j.scopes) > 0 {
		c += `, scope="` + strings.Join(j.scopes, " ") + `"`
	}
	return &auth.Error{Status: status, Challenge: c, Reason: reason}
}

// verifyReason turns a go-oidc verification error into a log reason. Those
// messages name claims, keys and algorithms, never the token itself.
func verifyReason(err error) string {
	var exp *oidc.TokenExpiredError
	if errors.As(err, &exp) {
		return "token expired at " + exp.Expiry.UTC().Format(time.RFC3339)
	}
	return err.Error()
}

// tokenScopes reads the granted scopes: "scope" (RFC 9068 §2.2.3, a
// space-separated string) or, from some issuers, "scp" (a string or an
// array of strings).
func tokenScopes(t *oidc.IDToken) ([]string, error) {
	var c struct {
		Scope *string         `json:"scope"`
		Scp   json.RawMessage `json:"scp"`
	}
	if err := t.Claims(&c); err != nil {
		return nil, errors.New("scope claims unreadable")
	}
	if c.Scope != nil {
		return strings.Fields(*c.Scope), nil
	}
	if len(c.Scp) == 0 {
		return nil, nil
	}
	var one string
	if json.Unmarshal(c.Scp, &one) == nil {
		return strings.Fields(one), nil
	}
	var many []string
	if json.Unmarshal(c.Scp, &many) == nil {
		return many, nil
	}
	return nil, errors.New("scp claim is neither a string nor an array of strings")
}

// verifier is a go-oidc verifier with the provider it came from.
type verifier struct {
	provider *oidc.Provider
	verifier *oidc.IDTokenVerifier
	client   *http.Client
	leeway   time.Duration
	now      func() time.Time
}

// verify is go-oidc's Verify plus the time claims it is lax about: it
// lets nbf run 5 minutes ahead whatever the leeway, and does not look at
// iat. A token valid only from more than leeway ahead, or issued more
// than leeway in the future, is refused (RFC 7519 §4.1.5, §4.1.6). The
// error names the claim and its time, never the token.
func (v *verifier) verify(ctx context.Context, raw string) (*oidc.IDToken, error) {
	t, err := v.verifier.Verify(ctx, raw)
	if err != nil {
		return nil, err
	}
	var c struct {
		NotBefore *float64 `json:"nbf"`
	}
	if err := t.Claims(&c); err != nil {
		return nil, errors.New("token claims unreadable")
	}
	latest := v.now().Add(v.leeway)
	if c.NotBefore != nil && *c.NotBefore > float64(latest.Unix()) {
		return nil, fmt.Errorf("token not valid before %s (nbf)", strconv.FormatFloat(*c.NotBefore, 'f', -1, 64))
	}
	if t.IssuedAt.After(latest) {
		return nil, fmt.Errorf("token issued in the future, at %s (iat)", t.IssuedAt.UTC().Format(time.RFC3339))
	}
	return t, nil
}

// newVerifier discovers issuer and returns a verifier for tokens whose aud
// holds audience, signed with one of algs (nil: DefaultAlgorithms).
func newVerifier(ctx context.Context, issuer, audience string, algs []string, leeway time.Duration, client *http.Client, now func() time.Time) (*verifier, error) {
	if len(algs) == 0 {
		algs = DefaultAlgorithms
	}
	for _, a := range algs {
		if !slices.Contains(asymmetricAlgs, a) {
			return nil, fmt.Errorf("auth: algorithm %q not allowed (one of %s)", a, strings.Join(asymmetricAlgs, ", "))
		}
	}
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Second}
	}
	if leeway == 0 {
		leeway = DefaultLeeway
	} else if leeway < 0 {
		leeway = 0
	}
	if now == nil {
		now = time.Now
	}
	p, err := oidc.NewProvider(oidc.ClientContext(ctx, client), issuer)
	if err != nil {
		return nil, fmt.Errorf("auth: discovering issuer %s: %w", issuer, err)
	}
	var meta struct {
		JWKSURI string `json:"jwks_uri"`
	}
	if err := p.Claims(&meta); err != nil || meta.JWKSURI == "" {
		return nil, fmt.Errorf("auth: issuer %s publishes no jwks_uri", issuer)
	}
	// Our key set rather than go-oidc's remote one, which fetches the JWKS
	// again after every signature that fails to verify (keyset.go).
	ks := &keySet{url: meta.JWKSURI, client: client, now: now}
	for _, a := range algs {
		ks.algs = append(ks.algs, jose.SignatureAlgorithm(a))
	}
	v := oidc.NewVerifier(issuer, ks, &oidc.Config{
		ClientID:             audience,
		SupportedSigningAlgs: slices.Clone(algs),
		// go-oidc refuses a token once exp is before Now: judging expiry
		// against a clock running leeway behind allows that much skew.
		Now: func() time.Time { return now().Add(-leeway) },
	})
	return &verifier{provider: p, verifier: v, client: client, leeway: leeway, now: now}, nil
}

// validResource checks a resource identifier (RFC 8707 §2): an absolute
// https URL (http on loopback) without fragment or query.
func validResource(res string) error {
	if err := auth.ValidIssuer(res); err != nil {
		return errors.New("auth: resource must be an absolute https URL (http only on loopback) without query or fragment")
	}
	return nil
}

// validScopeToken: scope-token = 1*( %x21 / %x23-5B / %x5D-7E ) (RFC 6749 §3.3).
func validScopeToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x21 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}
