package mcpclient_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"sync"

	"github.com/mcp-elicit/elicit/auth"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpclient"
	"github.com/mcp-elicit/elicit/mcpserver"
	"github.com/mcp-elicit/elicit/streamhttp"
)

// vaultToken is an Authorizer for a token the program fetches itself (from
// a secret manager, say): none at first, one fetched on the server's 401,
// after which the client sends the request again. Package mcpclient/oauth
// is the Authorizer that signs a user in with OAuth 2.1 instead.
type vaultToken struct {
	mu    sync.Mutex
	token string
	fetch func(ctx context.Context) (string, error)
}

func (a *vaultToken) Token(ctx context.Context) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.token, nil
}

func (a *vaultToken) Authorize(ctx context.Context, ch *mcpclient.Challenge) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if ch.Token != a.token {
		return nil // another request already got a newer token: just retry
	}
	fmt.Printf("HTTP %d, challenge %q: fetching a token\n", ch.StatusCode, ch.WWWAuthenticate)
	tok, err := a.fetch(ctx)
	if err != nil {
		return err // the request fails with an *mcpclient.AuthError
	}
	a.token = tok
	return nil
}

// Options.Authorizer gives each request its bearer token and answers the
// server's 401 (or 403 insufficient_scope) before the request is sent
// again, at most Options.MaxAuthorizations times.
func ExampleAuthorizer() {
	s := mcpserver.New(mcp.Implementation{Name: "whoami", Version: "1.0.0"}, nil)
	s.AddTool(&mcp.Tool{Name: "whoami", Description: "Names the caller."}, func(ctx context.Context, req *mcpserver.Request) (mcpserver.Reply, error) {
		return mcpserver.Text("You are " + req.Principal + "."), nil
	})
	// The demo authenticator: the bearer token is the user name.
	srv := httptest.NewServer(streamhttp.NewHandler(s, &streamhttp.Options{Auth: auth.DemoBearer{Realm: "example"}}))
	defer srv.Close()

	a := &vaultToken{fetch: func(context.Context) (string, error) { return "alice", nil }}
	c := mcpclient.New(srv.URL, &mcpclient.Options{Authorizer: a})
	res, err := c.CallTool(context.Background(), "whoami", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Content[0].Text)
	// Output:
	// HTTP 401, challenge "Bearer realm=\"example\"": fetching a token
	// You are alice.
}
