package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"

	"github.com/mcp-elicit/elicit/mcpclient"
	"github.com/mcp-elicit/elicit/mcpclient/oauth"
)

// clientMetadataURL is the client ID metadata document URL the suite's
// authorization servers accept without fetching it (auth/basic-cimd).
const clientMetadataURL = "https://conformance-test.local/client-metadata.json"

// redirectURL is registered and sent; nothing listens there: the suite's
// authorization endpoint answers at once with a redirect, which
// autoBrowser reads instead of following.
const redirectURL = "http://localhost:3000/callback"

// autoBrowser is the front channel without a user: it sends the
// authorization request and takes the response from the redirect's
// Location, as the suite's authorization servers sign in no one.
type autoBrowser struct {
	log io.Writer
}

func (autoBrowser) RedirectURL(context.Context) (string, error) { return redirectURL, nil }

func (b autoBrowser) Authorize(ctx context.Context, req *oauth.AuthorizationRequest) (url.Values, error) {
	fmt.Fprintf(b.log, "authorization request to %s (scopes %v)\n", req.Issuer, req.Scopes)
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	r, err := http.NewRequestWithContext(ctx, http.MethodGet, req.URL, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(r)
	if err != nil {
		return nil, err
	}
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || loc.Host == "" {
		return nil, fmt.Errorf("the authorization endpoint answered HTTP %d without a redirect", resp.StatusCode)
	}
	return loc.Query(), nil
}

// authContext is MCP_CONFORMANCE_CONTEXT for the auth scenarios: the
// pre-registered credentials some of them hand out.
type authContext struct {
	ClientID     string `json:"client_id"`
	ClientSecret string `json:"client_secret"`
}

// authorizer makes the Authorizer of an auth/* scenario: the client
// credentials grant for auth/client-credentials-basic, the authorization
// code grant otherwise; pre-registered credentials when the context has
// them, else a client ID metadata document or dynamic registration.
func authorizer(cfg config, logger *slog.Logger) (mcpclient.Authorizer, error) {
	var ac authContext
	if cfg.context != "" {
		if err := json.Unmarshal([]byte(cfg.context), &ac); err != nil {
			return nil, fmt.Errorf("MCP_CONFORMANCE_CONTEXT: %w", err)
		}
	}
	oc := &oauth.Config{Browser: autoBrowser{log: cfg.log}, ClientID: ac.ClientID, ClientSecret: ac.ClientSecret,
		ClientMetadataURL: clientMetadataURL, ClientName: "elicit-everything-client", RequestRefreshToken: true, Logger: logger}
	if cfg.scenario == "auth/client-credentials-basic" {
		oc.Grant = oauth.ClientCredentials
	}
	return oauth.New(cfg.url, oc)
}

// authFlow: what every auth/* scenario checks: tools/list and a call of
// test-tool, signing in (and stepping up, re-registering) as the server
// asks.
func authFlow(ctx context.Context, c *mcpclient.Client, cfg config) error {
	if _, err := c.ListTools(ctx); err != nil {
		return err
	}
	r, err := c.CallTool(ctx, "test-tool", map[string]any{})
	if err != nil {
		return err
	}
	fmt.Fprintf(cfg.log, "test-tool: %s\n", text(r))
	return nil
}
