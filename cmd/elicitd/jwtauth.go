package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/mcp-elicit/elicit/auth"
	"github.com/mcp-elicit/elicit/auth/jwtauth"
	"github.com/mcp-elicit/elicit/connect"
)

// authConfig is how callers and page users authenticate (--auth and the
// jwt-/oidc- settings).
type authConfig struct {
	mode         string // "demo" or "jwt"
	issuer       string
	resource     string // "" = <public-url>/mcp
	algs         []string
	scopes       []string
	clientID     string
	clientSecret string // ELICIT_OIDC_CLIENT_SECRET only
}

func init() {
	addSettings(
		setting{name: "auth", def: "demo", usage: "authentication: demo (bearer token = user name, pages ask a name; loopback only) or jwt (bearer JWTs from --jwt-issuer; pages sign in there with OpenID Connect)",
			apply: func(c *config, v string) error {
				if l := strings.ToLower(v); l == "demo" || l == "jwt" {
					v = l
				} else {
					return fmt.Errorf("want demo or jwt, not %q", v)
				}
				c.auth.mode = v
				return nil
			}},
		setting{name: "jwt-issuer", def: "", usage: "--auth jwt: issuer URL of the authorization server (its /.well-known/openid-configuration gives the JWKS and the sign-in endpoints)",
			apply: func(c *config, v string) error { c.auth.issuer = v; return nil }},
		setting{name: "jwt-resource", def: "", defDoc: "<public-url>/mcp", usage: "--auth jwt: this server's resource identifier (RFC 8707); tokens' aud must contain it",
			apply: func(c *config, v string) error { c.auth.resource = v; return nil }},
		setting{name: "jwt-algs", def: "", defDoc: strings.Join(defaultJWTAlgs, ","), usage: "--auth jwt: accepted JWS algorithms, comma-separated (asymmetric only: RSnnn, PSnnn, ESnnn, EdDSA; never none or HMAC)",
			apply: func(c *config, v string) (err error) { c.auth.algs, err = splitList(v); return err }},
		setting{name: "jwt-scopes", def: "", usage: "--auth jwt: scopes every token must grant, comma-separated (403 insufficient_scope otherwise)",
			apply: func(c *config, v string) (err error) { c.auth.scopes, err = splitList(v); return err }},
		setting{name: "oidc-client-id", def: "", usage: "--auth jwt: the pages' OAuth client id at the issuer; register the redirect URI public URL + " + connect.SignInCallbackPath,
			apply: func(c *config, v string) error { c.auth.clientID = v; return nil }},
		setting{name: "oidc-client-secret", envOnly: true, def: "", defDoc: "none (public client, PKCE only)", usage: "--auth jwt: the pages' OAuth client secret",
			apply: func(c *config, v string) error { c.auth.clientSecret = v; return nil }},
	)
}

// defaultJWTAlgs are the JWS algorithms --auth jwt accepts unless
// --jwt-algs says otherwise.
var defaultJWTAlgs = []string{"RS256", "ES256"}

// splitList splits a list setting at commas and white space; an empty
// entry (",," or a leading or trailing comma) is refused, not skipped, as
// it is most likely a value lost in editing. An empty v is no list.
func splitList(v string) ([]string, error) {
	if strings.TrimSpace(v) == "" {
		return nil, nil
	}
	var out []string
	for part := range strings.SplitSeq(v, ",") {
		f := strings.Fields(part)
		if len(f) == 0 {
			return nil, fmt.Errorf("empty entry in %q: want names separated by commas", v)
		}
		out = append(out, f...)
	}
	return out, nil
}

// check validates the jwt settings once publicURL is known.
func (a *authConfig) check(publicURL string) error {
	if a.mode != "jwt" {
		// Refused rather than ignored: an operator who set one expects
		// tokens to be checked.
		var set []string
		for _, s := range []struct {
			name string
			set  bool
		}{
			{"--jwt-issuer", a.issuer != ""}, {"--jwt-resource", a.resource != ""}, {"--jwt-algs", len(a.algs) > 0},
			{"--jwt-scopes", len(a.scopes) > 0}, {"--oidc-client-id", a.clientID != ""}, {"ELICIT_OIDC_CLIENT_SECRET", a.clientSecret != ""},
		} {
			if s.set {
				set = append(set, s.name)
			}
		}
		if len(set) > 0 {
			them := "them"
			if len(set) == 1 {
				them = "it"
			}
			return fmt.Errorf("--auth %s does not use %s: remove %s or pass --auth jwt", a.mode, strings.Join(set, ", "), them)
		}
		return nil
	}
	if len(a.algs) == 0 {
		a.algs = defaultJWTAlgs
	}
	if a.resource == "" {
		a.resource = publicURL + "/mcp"
	}
	switch {
	case a.issuer == "":
		return errors.New("--auth jwt needs --jwt-issuer")
	case a.clientID == "":
		return errors.New("--auth jwt needs --oidc-client-id (the URL-mode pages sign users in at the issuer)")
	}
	if err := auth.ValidIssuer(a.issuer); err != nil {
		return fmt.Errorf("--jwt-issuer: %w", err)
	}
	return nil
}

// authSetup is what the server needs from the auth settings.
type authSetup struct {
	mcp    auth.Authenticator
	signIn connect.IdentityProvider // nil: the demo sign-in form
	// routes are public handlers to mount, by pattern (the protected
	// resource metadata).
	routes map[string]http.Handler
}

// discoveryTimeout bounds fetching the issuer's metadata at start-up.
const discoveryTimeout = 30 * time.Second

// newAuth builds the authenticator, the pages' sign-in and the metadata
// routes. With --auth jwt it fetches the issuer's discovery document, so
// an unreachable or misconfigured issuer stops start-up with the reason.
func newAuth(cfg *config, now func() time.Time) (*authSetup, error) {
	a := &cfg.auth
	if a.mode != "jwt" {
		return &authSetup{mcp: auth.DemoBearer{Realm: "elicitd"}}, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), discoveryTimeout)
	defer cancel()
	j, err := jwtauth.NewJWT(ctx, jwtauth.JWTOptions{Issuer: a.issuer, Resource: a.resource, Algorithms: a.algs, Scopes: a.scopes, Now: now})
	if err != nil {
		return nil, fmt.Errorf("--auth jwt: %w", err)
	}
	o, err := jwtauth.NewOIDC(ctx, jwtauth.OIDCOptions{Issuer: a.issuer, ClientID: a.clientID, ClientSecret: a.clientSecret,
		RedirectURL: cfg.publicURL + connect.SignInCallbackPath, Algorithms: a.algs, Now: now})
	if err != nil {
		return nil, fmt.Errorf("--auth jwt: pages sign-in: %w", err)
	}
	meta := auth.MetadataHandler(j.Metadata())
	return &authSetup{mcp: j, signIn: o, routes: map[string]http.Handler{
		auth.MetadataPath(a.resource):           meta,
		"/.well-known/oauth-protected-resource": meta,
	}}, nil
}
