package connect_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"

	"github.com/mcp-elicit/elicit/auth"
	"github.com/mcp-elicit/elicit/connect"
	"github.com/mcp-elicit/elicit/internal/pagetest"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpclient"
	"github.com/mcp-elicit/elicit/mcpserver"
	"github.com/mcp-elicit/elicit/streamhttp"
)

// A server with one URL step: the pages and the tool take four lines. The
// client here plays the host and the user: it shows the link, the user
// finishes the page in a browser (an HTTP client with a cookie jar), and
// only then accepts.
func ExampleStep() {
	st, key, cleanup := exampleStore()
	defer cleanup()
	mux := http.NewServeMux()
	ts := httptest.NewServer(mux)
	defer ts.Close()

	flows, err := connect.New(connect.Options{Store: st, MasterKey: key, BaseURL: ts.URL, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		panic(err)
	}
	srv := mcpserver.New(mcp.Implementation{Name: "billing", Version: "1.0.0"}, nil)
	step := &connect.Step{Flows: flows, Purpose: "billing_key", Name: "your billing account"}
	step.Register(srv, &mcp.Tool{Name: "connect_billing", Description: "Connect the user's billing account."})
	mux.Handle("/ui/", flows.Handler())
	mux.Handle("/mcp", streamhttp.NewHandler(srv, &streamhttp.Options{Auth: auth.DemoBearer{Realm: "example"}}))

	client := mcpclient.New(ts.URL+"/mcp", &mcpclient.Options{Token: "alice", Handlers: &mcpclient.Handlers{
		ElicitURL: func(ctx context.Context, _ mcpclient.Asker, _ string, p *mcp.ElicitRequestParams) (*mcp.ElicitResult, error) {
			fmt.Println("the client shows:", p.Message)
			// The user, in a browser: opens the link, signs in as alice
			// (the demo form asks a user name), types the key.
			if err := pagetest.New().FinishKey(p.URL, "alice", "sk_live_example_key"); err != nil {
				return nil, err
			}
			return &mcp.ElicitResult{Action: mcp.ActionAccept}, nil
		},
	}})
	res, err := client.CallTool(context.Background(), "connect_billing", nil)
	if err != nil {
		panic(err)
	}
	fmt.Println("result:", res.Content[0].Text)
	// Output:
	// the client shows: Connect your billing account: open this page on the server, sign in, and finish there. Nothing you enter there passes through this client.
	// result: Your billing account is connected. What you entered is stored on the server and is never shown here.
}
