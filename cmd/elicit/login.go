package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/mcp-elicit/elicit/consent"
	"github.com/mcp-elicit/elicit/internal/termtext"
	"github.com/mcp-elicit/elicit/mcpclient"
	"github.com/mcp-elicit/elicit/mcpclient/oauth"
)

// Sign-in (MCP authorization, basic/authorization.mdx): without --token,
// a server's 401 makes elicit sign the user in with OAuth 2.1 through
// package mcpclient/oauth. The authorization URL is shown like a URL-mode
// link (consent.Terminal.SignIn) and opened only after a yes (with
// --open; else printed); the browser comes back to a loopback redirect of
// this process. Tokens and dynamic registrations are cached per server in
// the user's configuration directory (0600 files, see tokenStore);
// "elicit logout" deletes them.

// clientSecretEnv holds the secret of a --client-id that has one: never
// on the command line, where the process list shows it.
const clientSecretEnv = "ELICIT_CLIENT_SECRET"

// tokenStore is the token cache: $ELICIT_CONFIG_DIR/oauth when set, else
// elicit/oauth in the user's configuration directory (~/.config on Linux).
func tokenStore() (*oauth.FileStore, error) {
	if dir := os.Getenv("ELICIT_CONFIG_DIR"); dir != "" {
		return &oauth.FileStore{Dir: dir + string(os.PathSeparator) + "oauth"}, nil
	}
	return oauth.UserFileStore("elicit")
}

// oauthHTTPClient sends the metadata, registration and token requests:
// dialing and the whole exchange bounded, as no user waits on them.
func oauthHTTPClient() *http.Client {
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
		TLSHandshakeTimeout: 10 * time.Second,
	}}
}

// promptOut is where sign-in and other prompts go: stderr when stdout
// carries JSON.
func (h *host) promptOut() io.Writer {
	if h.opts.json {
		return h.stderr
	}
	return h.stdout
}

// terminal returns the consent terminal of this run, made on first use.
func (h *host) terminal() *consent.Terminal {
	if h.term == nil {
		out := h.promptOut()
		h.term = &consent.Terminal{In: h.stdin, Out: out, AllowOpen: h.opts.open,
			Interactive: !h.opts.plain && consent.IsTerminal(h.stdin) && consent.IsTerminal(out)}
	}
	return h.term
}

// authorizer returns the run's OAuth Authorizer (made once), whose
// sign-ins ask through the run's terminal and name who as the asker.
func (h *host) authorizer(who func() mcpclient.Asker) (*oauth.Authorizer, error) {
	if h.auth != nil {
		return h.auth, nil
	}
	store, err := tokenStore()
	if err != nil {
		return nil, err
	}
	term := h.terminal()
	lb := &oauth.Loopback{Open: func(ctx context.Context, req *oauth.AuthorizationRequest) error {
		if h.view != nil {
			h.view.pause() // the terminal is the sign-in prompt's now
		}
		return term.SignIn(ctx, who(), &consent.SignInRequest{URL: req.URL, Issuer: req.Issuer, Resource: req.Resource,
			Scopes: req.Scopes, RedirectURL: req.RedirectURL})
	}}
	h.closers = append(h.closers, lb.Close)
	a, err := oauth.New(h.opts.url, &oauth.Config{Browser: lb, Store: store, ClientID: h.opts.clientID,
		ClientSecret: os.Getenv(clientSecretEnv), ClientName: "elicit", RequestRefreshToken: true,
		HTTPClient: oauthHTTPClient(), Logger: stderrLogger(h.stderr)})
	if err != nil {
		return nil, err
	}
	h.auth = a
	return a, nil
}

// close releases what the run opened (the redirect listener).
func (h *host) close() {
	for _, c := range h.closers {
		_ = c()
	}
}

// login signs in again (the cached token is dropped first, the
// registration kept) with a tools/list that the server refuses, and says
// where the token is kept.
func (h *host) login(ctx context.Context) error {
	var c *mcpclient.Client
	a, err := h.authorizer(func() mcpclient.Asker { return c.Asker() })
	if err != nil {
		return err
	}
	if err := a.ForgetToken(ctx); err != nil {
		return err
	}
	c = h.newClient(nil, a)
	if _, err := c.ListTools(ctx); err != nil {
		return err
	}
	s, err := a.Session(ctx)
	if err != nil {
		return err
	}
	out := h.promptOut()
	if !s.SignedIn {
		fmt.Fprintf(out, "The server at %s did not ask to sign in: nothing to do.\n", termtext.Line(h.opts.url))
		return nil
	}
	fmt.Fprintf(out, "Signed in to %s at %s.\n", termtext.Line(s.Resource), termtext.Line(s.Issuer))
	if len(s.Scopes) > 0 {
		fmt.Fprintf(out, "  Scopes:  %s\n", termtext.Line(strings.Join(s.Scopes, " ")))
	}
	if !s.Expiry.IsZero() {
		exp := "expires " + s.Expiry.Local().Format(time.RFC1123)
		if s.Refreshable {
			exp += "; refreshed when needed"
		}
		fmt.Fprintf(out, "  Token:   %s\n", exp)
	}
	if st, err := tokenStore(); err == nil {
		fmt.Fprintf(out, "  Cached:  %s (delete with: elicit logout --url %s)\n", termtext.Line(st.Path(a.Endpoint())), termtext.Line(h.opts.url))
	}
	return nil
}

// logout deletes the cached token and client registration of the server.
func (h *host) logout(ctx context.Context) error {
	a, err := h.authorizer(func() mcpclient.Asker { return mcpclient.Asker{Endpoint: h.opts.url} })
	if err != nil {
		return err
	}
	// A cache file that cannot be read (damaged, or readable by others)
	// is deleted all the same.
	s, serr := a.Session(ctx)
	if err := a.SignOut(ctx); err != nil {
		return err
	}
	out := h.promptOut()
	if s.Issuer == "" && serr == nil {
		fmt.Fprintf(out, "Nothing was cached for %s.\n", termtext.Line(h.opts.url))
		return nil
	}
	fmt.Fprintf(out, "Signed out of %s: its cached token and client registration are deleted (the authorization server was not told).\n", termtext.Line(h.opts.url))
	return nil
}

// checkSignIn gets the token elicit check acts with, signing in first as
// elicit call does when the server asks; the prompts go to stderr, as
// stdout carries the report.
func checkSignIn(ctx context.Context, endpoint, clientID string, stdin io.Reader, stderr io.Writer) (string, error) {
	h := &host{opts: &options{url: endpoint, clientID: clientID, json: true}, stdin: stdin, stdout: stderr, stderr: stderr}
	defer h.close()
	var c *mcpclient.Client
	a, err := h.authorizer(func() mcpclient.Asker { return c.Asker() })
	if err != nil {
		return "", err
	}
	c = h.newClient(nil, a)
	if _, err := c.ListTools(ctx); err != nil {
		var rpc *mcpclient.RPCError
		if !errors.As(err, &rpc) { // a JSON-RPC error is past the authorization
			return "", err
		}
	}
	return a.Token(ctx)
}

// signInExplained words a refusal that a sign-in could not answer.
func signInExplained(ae *mcpclient.AuthError, endpoint string) string {
	var (
		mismatch *oauth.ResourceMismatchError
		issuer   *oauth.IssuerMismatchError
		insecure *oauth.InsecureEndpointError
		aud      *oauth.AudienceError
	)
	why := strings.TrimPrefix(ae.Err.Error(), "mcpclient: ")
	why = strings.TrimPrefix(why, "oauth: ")
	switch {
	case errors.Is(ae.Err, consent.ErrSignInDeclined):
		return fmt.Sprintf("the server at %s requires sign-in, which you declined; the request was not sent again", endpoint)
	case errors.Is(ae.Err, mcpclient.ErrAuthorizeLimit):
		return fmt.Sprintf("the server at %s still refuses after signing in again (HTTP %d): your account lacks a permission it needs", endpoint, ae.StatusCode)
	case errors.As(ae.Err, &mismatch), errors.As(ae.Err, &issuer), errors.As(ae.Err, &insecure), errors.As(ae.Err, &aud):
		return fmt.Sprintf("sign-in to %s refused for your safety: %s", endpoint, why)
	case errors.Is(ae.Err, oauth.ErrNoMetadata):
		return fmt.Sprintf("the server at %s requires authorization (HTTP %d) and offers no OAuth sign-in (no protected resource metadata): pass --token or set ELICIT_TOKEN", endpoint, ae.StatusCode)
	case errors.Is(ae.Err, oauth.ErrNoRegistration):
		return fmt.Sprintf("cannot sign in to %s: %s (pass its id with --client-id, its secret in $%s)", endpoint, why, clientSecretEnv)
	case ae.StatusCode == 0:
		return fmt.Sprintf("cannot use the cached sign-in for %s: %s", endpoint, why)
	}
	return fmt.Sprintf("sign-in to %s failed: %s", endpoint, why)
}
