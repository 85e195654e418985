package oauth_test

import (
	"context"
	"fmt"
	"os"

	"github.com/mcp-elicit/elicit/mcpclient"
	"github.com/mcp-elicit/elicit/mcpclient/oauth"
)

// A host on the user's computer: the token cache in the user's
// configuration directory, the authorization response on a loopback
// redirect, and the user asked before their browser is sent anywhere.
func Example() {
	const endpoint = "https://mcp.example.com/mcp"
	store, err := oauth.UserFileStore("example-host")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	lb := &oauth.Loopback{Open: func(ctx context.Context, req *oauth.AuthorizationRequest) error {
		// A real host shows req.URL in full with its domain (package
		// consent), asks, and opens the browser only after a yes.
		fmt.Printf("Sign in to %s at %s:\n  %s\n", req.Resource, req.Issuer, req.URL)
		return nil
	}}
	defer lb.Close()
	a, err := oauth.New(endpoint, &oauth.Config{Browser: lb, Store: store, RequestRefreshToken: true,
		ClientName: "example host"})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	c := mcpclient.New(endpoint, &mcpclient.Options{Authorizer: a})
	tools, err := c.ListTools(context.Background()) // signs in on the server's 401
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	fmt.Println(len(tools), "tools")
}

// A program acting on its own behalf: the client credentials grant with
// pre-registered credentials; no user, no browser.
func ExampleConfig_clientCredentials() {
	a, err := oauth.New("https://mcp.example.com/mcp", &oauth.Config{Grant: oauth.ClientCredentials,
		ClientID: "reporting-bot", ClientSecret: os.Getenv("REPORTING_BOT_SECRET")})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	_ = mcpclient.New("https://mcp.example.com/mcp", &mcpclient.Options{Authorizer: a})
}
