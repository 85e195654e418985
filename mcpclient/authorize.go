package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// DefaultMaxAuthorizations caps the Authorizer.Authorize calls for one
// request when Options.MaxAuthorizations is 0: a 401, then up to two
// step-ups on 403 insufficient_scope (basic/authorization.mdx §Step-Up
// Authorization Flow asks for a retry limit).
const DefaultMaxAuthorizations = 3

// ErrAuthorizeLimit is wrapped by the *AuthError of a request the server
// still refused after Options.MaxAuthorizations successful Authorize
// calls: another sign-in would not help, so the request is abandoned.
var ErrAuthorizeLimit = errors.New("mcpclient: still refused after authorizing again")

// Authorizer supplies the bearer token of every request and obtains a new
// one when the server refuses it: the client half of MCP authorization
// (basic/authorization.mdx). Package mcpclient/oauth implements it with
// OAuth 2.1 (discovery, registration, PKCE, refresh, step-up). It must be
// safe for concurrent use: the client's calls are independent.
type Authorizer interface {
	// Token returns the access token for the next request; "" sends the
	// request without Authorization (the server's 401 then starts
	// Authorize). An error ends the request, wrapped in *AuthError.
	Token(ctx context.Context) (string, error)
	// Authorize is called after an HTTP 401, or a 403 whose Bearer
	// challenge has error="insufficient_scope", with the challenge. It
	// gets a token the server should accept (possibly after a user's
	// sign-in); nil means "retry the request". Its error ends the request,
	// wrapped in the *AuthError (AuthError.Err).
	Authorize(ctx context.Context, ch *Challenge) error
}

// Challenge is a refusal the Authorizer may answer (RFC 6750 §3, RFC 9728
// §5.1).
type Challenge struct {
	// Endpoint is the MCP endpoint URL the client was given.
	Endpoint string
	// StatusCode is 401 or 403.
	StatusCode int
	// WWWAuthenticate is the response's WWW-Authenticate value, several
	// header lines joined with ", ": e.g. `Bearer resource_metadata="…",
	// scope="files:read"`. Parse it as RFC 9110 §11.6.1 challenges.
	WWWAuthenticate string
	// Token is the access token the refused request carried, "" for
	// none: an Authorizer shared by concurrent requests compares it with
	// its current token to sign in only once.
	Token string
	// RPC is the JSON-RPC error in the body, if any.
	RPC *RPCError
}

// InsufficientScope reports whether the challenge is a Bearer challenge
// with error="insufficient_scope" (RFC 6750 §3.1): more scope, not another
// user, is needed.
func (c *Challenge) InsufficientScope() bool { return insufficientScope(c.WWWAuthenticate) }

// insufficientScope looks for error="insufficient_scope" in a Bearer
// challenge, quoted or not, in any letter case of the parameter name.
func insufficientScope(v string) bool {
	if !bearerChallenge(v) {
		return false
	}
	l := strings.ToLower(v)
	return strings.Contains(l, `error="insufficient_scope"`) || strings.Contains(l, "error=insufficient_scope")
}

// wantsAuthorization reports whether an Authorizer may answer ae: any 401,
// and a 403 that asks for more scope. Another 403 is a refusal no token
// changes.
func (ae *AuthError) wantsAuthorization() bool {
	return ae.StatusCode == http.StatusUnauthorized ||
		(ae.StatusCode == http.StatusForbidden && insufficientScope(ae.WWWAuthenticate))
}

// postAuthorized posts out with the bearer token of Options.Token or of
// the Authorizer, and on a refusal the Authorizer answers, retries: at
// most maxAuth Authorize calls per request.
func (c *Client) postAuthorized(ctx context.Context, out *outgoing, version string) (json.RawMessage, error) {
	if c.authorizer == nil {
		out.bearer = c.token
		return c.post(ctx, out, version)
	}
	for n := 0; ; n++ {
		tok, err := c.authorizer.Token(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, &AuthError{Err: err}
		}
		out.bearer = tok
		res, err := c.post(ctx, out, version)
		var ae *AuthError
		if !errors.As(err, &ae) || !ae.wantsAuthorization() {
			return res, err
		}
		if n >= c.maxAuth {
			ae.Err = fmt.Errorf("%w (%d times)", ErrAuthorizeLimit, n)
			return nil, ae
		}
		ch := &Challenge{Endpoint: c.endpoint, StatusCode: ae.StatusCode, WWWAuthenticate: ae.WWWAuthenticate, Token: tok, RPC: ae.RPC}
		if err := c.authorizer.Authorize(ctx, ch); err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			ae.Err = err
			return nil, ae
		}
	}
}
