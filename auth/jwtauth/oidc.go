package jwtauth

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"golang.org/x/oauth2"

	"github.com/mcp-elicit/elicit/auth"
)

// OIDCOptions configure browser sign-in through an OpenID Connect issuer.
type OIDCOptions struct {
	// Issuer is the OpenID provider's issuer identifier (see auth.ValidIssuer);
	// its discovery document gives the endpoints and the JWKS. Required.
	Issuer string
	// ClientID is this server's client id at the issuer. Required.
	ClientID string
	// ClientSecret authenticates a confidential client at the token
	// endpoint; "" for a public client, which PKCE alone protects.
	ClientSecret string
	// RedirectURL is the registered callback URL the issuer sends the
	// browser back to with the code. Required.
	RedirectURL string
	// Scopes are requested besides "openid", which is always requested.
	Scopes []string
	// Algorithms is the ID token alg allow-list; nil means
	// DefaultAlgorithms. As for JWT, "none" and HS* are refused.
	Algorithms []string
	// Leeway is the clock skew allowed on the ID token's exp, nbf and iat
	// (as JWTOptions.Leeway); 0 means DefaultLeeway, negative none.
	Leeway time.Duration
	// HTTPClient talks to the issuer; nil means a 10-second-timeout client.
	HTTPClient *http.Client
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// OIDC signs a browser in with the OpenID Connect authorization code flow
// with PKCE (OpenID Connect Core §3.1, RFC 7636): AuthCodeURL starts it,
// Exchange redeems the code and verifies the ID token (signature, alg, iss,
// aud = ClientID, azp, exp, nonce). The principal is the issuer plus the
// ID token's sub, so it matches the auth.Principal JWT gives for an access
// token from the same issuer about the same user. Safe for concurrent use.
type OIDC struct {
	issuer   string
	clientID string
	conf     oauth2.Config
	verifier *verifier
}

// NewOIDC checks opts and fetches the issuer's discovery document
// (bounded by ctx).
func NewOIDC(ctx context.Context, opts OIDCOptions) (*OIDC, error) {
	if err := auth.ValidIssuer(opts.Issuer); err != nil {
		return nil, err
	}
	if opts.ClientID == "" {
		return nil, errors.New("auth: OIDC client id is required")
	}
	if opts.RedirectURL == "" {
		return nil, errors.New("auth: OIDC redirect URL is required")
	}
	v, err := newVerifier(ctx, opts.Issuer, opts.ClientID, opts.Algorithms, opts.Leeway, opts.HTTPClient, opts.Now)
	if err != nil {
		return nil, err
	}
	o := &OIDC{issuer: opts.Issuer, clientID: opts.ClientID, verifier: v, conf: oauth2.Config{
		ClientID:     opts.ClientID,
		ClientSecret: opts.ClientSecret,
		Endpoint:     v.provider.Endpoint(),
		RedirectURL:  opts.RedirectURL,
		Scopes:       append([]string{"openid"}, slices.DeleteFunc(slices.Clone(opts.Scopes), func(s string) bool { return s == "openid" })...),
	}}
	return o, nil
}

// AuthCodeURL returns the issuer's authorization URL for one sign-in: code
// flow, state, nonce, and the S256 PKCE challenge of verifier (43–128
// characters, RFC 7636 §4.1). The caller keeps state, nonce and verifier
// bound to the browser until the callback.
func (o *OIDC) AuthCodeURL(state, nonce, verifier string) string {
	return o.conf.AuthCodeURL(state, oauth2.SetAuthURLParam("nonce", nonce), oauth2.S256ChallengeOption(verifier))
}

// Exchange finishes a sign-in after the caller has checked state: iss is
// the callback's iss parameter ("" if absent; when present it must equal
// the issuer, RFC 9207), code is redeemed with verifier at the token
// endpoint, and the returned ID token must verify and carry nonce. Errors
// never contain the code, the tokens or the client secret.
func (o *OIDC) Exchange(ctx context.Context, code, iss, verifier, nonce string) (auth.Principal, error) {
	if iss != "" && iss != o.issuer {
		return auth.Principal{}, errors.New("auth: OIDC callback names another issuer")
	}
	if code == "" {
		return auth.Principal{}, errors.New("auth: OIDC callback without code")
	}
	tok, err := o.conf.Exchange(context.WithValue(ctx, oauth2.HTTPClient, o.verifier.client), code, oauth2.VerifierOption(verifier))
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) && re.Response != nil {
			return auth.Principal{}, fmt.Errorf("auth: OIDC token request refused: HTTP %d %q", re.Response.StatusCode, re.ErrorCode)
		}
		return auth.Principal{}, errors.New("auth: OIDC token request failed")
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return auth.Principal{}, errors.New("auth: OIDC token response has no id_token")
	}
	idt, err := o.verifier.verify(ctx, raw)
	if err != nil {
		return auth.Principal{}, fmt.Errorf("auth: OIDC ID token refused: %s", verifyReason(err))
	}
	if subtle.ConstantTimeCompare([]byte(idt.Nonce), []byte(nonce)) != 1 || nonce == "" {
		return auth.Principal{}, errors.New("auth: OIDC ID token nonce does not match")
	}
	var c struct {
		AZP string `json:"azp"`
	}
	if err := idt.Claims(&c); err != nil || (len(idt.Audience) > 1 || c.AZP != "") && c.AZP != o.clientID {
		return auth.Principal{}, errors.New("auth: OIDC ID token issued to another party (azp)")
	}
	if !auth.ValidSubject(idt.Subject) {
		return auth.Principal{}, errors.New("auth: OIDC ID token sub missing or not 1-255 visible ASCII characters")
	}
	return auth.Principal{Issuer: o.issuer, Subject: idt.Subject}, nil
}
