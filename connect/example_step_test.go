package connect_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"

	"github.com/mcp-elicit/elicit/auth"
	"github.com/mcp-elicit/elicit/connect"
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
			if err := finishInBrowser(p.URL, "alice", "sk_live_example_key"); err != nil {
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

var hiddenRE = regexp.MustCompile(`name="(csrf|next|flow)" value="([^"]*)"`)

// finishInBrowser is the user at the page: open the link, sign in (the
// demo form asks a user name), type the key.
func finishInBrowser(link, user, apiKey string) error {
	jar, _ := cookiejar.New(nil)
	b := &http.Client{Jar: jar} // follows redirects, as a browser does
	form := func(resp *http.Response, err error) (url.Values, error) {
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		page, _ := io.ReadAll(resp.Body)
		v := url.Values{}
		for _, m := range hiddenRE.FindAllStringSubmatch(string(page), -1) {
			v.Set(m[1], m[2])
		}
		return v, nil
	}
	login, err := form(b.Get(link)) // redirected to the sign-in form
	if err != nil {
		return err
	}
	u, _ := url.Parse(link)
	base := u.Scheme + "://" + u.Host
	login.Set("username", user)
	keyForm, err := form(b.PostForm(base+"/ui/login", login)) // and back to the key form
	if err != nil {
		return err
	}
	keyForm.Set("api_key", apiKey)
	resp, err := b.PostForm(base+"/ui/set_api_key", keyForm)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("key page: HTTP %d", resp.StatusCode)
	}
	return nil
}
