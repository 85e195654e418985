package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-elicit/elicit/elicit"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpclient"
	"github.com/mcp-elicit/elicit/mcpserver"
)

// The interop matrix: each upstream behind the gateway serves two tools,
// form (asks a name) and url (asks the user to open a page of the
// upstream's, and checks on the retry that the page was completed over
// HTTP); each client in front answers accept, decline or cancel. Every
// pair must end with the same result text.

// pages is an upstream's own web page for URL mode: /done?id=X completes
// flow X.
type pages struct {
	mu   sync.Mutex
	done map[string]bool
	url  string
}

func newPages(t *testing.T) *pages {
	p := &pages{done: map[string]bool{}}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.done[r.URL.Query().Get("id")] = true
		p.mu.Unlock()
		_, _ = w.Write([]byte("done"))
	}))
	t.Cleanup(ts.Close)
	p.url = ts.URL
	return p
}

func (p *pages) start() (id, url string) {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	id = hex.EncodeToString(b)
	return id, p.url + "/done?id=" + id
}

func (p *pages) completed(id string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.done[id]
}

// outcomeText is what every upstream answers for an outcome.
func outcomeText(action, value string) string {
	switch action {
	case mcp.ActionAccept:
		return value
	case mcp.ActionDecline:
		return "declined"
	}
	return "cancelled"
}

// elicitFlows registers form and url on an mcpserver.Server.
func elicitFlows(p *pages) func(*mcpserver.Server) {
	return func(s *mcpserver.Server) {
		mcpserver.AddTool(s, &mcp.Tool{Name: "form"}, func(_ context.Context, req *mcpserver.Request, _ struct{}) (mcpserver.Reply, any, error) {
			switch a := elicit.Decode[who](req.Elicitation("who")); a.Outcome {
			case elicit.Accepted:
				return mcpserver.Text("form:" + a.Value.Name), nil, nil
			case elicit.Declined:
				return mcpserver.Text("declined"), nil, nil
			case elicit.Cancelled:
				return mcpserver.Text("cancelled"), nil, nil
			}
			return mcpserver.Ask().ElicitFormSchema("who", "Your name?", elicit.MustFormFor[who]()), nil, nil
		})
		mcpserver.AddTool(s, &mcp.Tool{Name: "url"}, func(_ context.Context, req *mcpserver.Request, _ struct{}) (mcpserver.Reply, any, error) {
			switch a := req.Elicitation("link"); a.Outcome {
			case elicit.Accepted:
				return mcpserver.Text(fmt.Sprintf("url:%v", p.completed(string(req.State)))), nil, nil
			case elicit.Declined:
				return mcpserver.Text("declined"), nil, nil
			case elicit.Cancelled:
				return mcpserver.Text("cancelled"), nil, nil
			}
			id, url := p.start()
			return mcpserver.Ask().ElicitURL("link", "Open the page", url).WithState([]byte(id)), nil, nil
		})
	}
}

func sdkText(s string) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
}

// goSDK2025 is a go-sdk stateful server (2025-11-25 sessions) whose
// tools ask with elicitation/create over the session.
func goSDK2025(t *testing.T, p *pages) string {
	s := sdk.NewServer(&sdk.Implementation{Name: "go-sdk-2025", Version: "1.8.0"}, &sdk.ServerOptions{Logger: quietLog()})
	s.AddTool(&sdk.Tool{Name: "form", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		res, err := req.Session.Elicit(ctx, &sdk.ElicitParams{Mode: "form", Message: "Your name?",
			RequestedSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`)})
		if err != nil {
			return nil, err
		}
		name, _ := res.Content["name"].(string)
		return sdkText(outcomeText(res.Action, "form:"+name)), nil
	})
	s.AddTool(&sdk.Tool{Name: "url", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		id, url := p.start()
		res, err := req.Session.Elicit(ctx, &sdk.ElicitParams{Mode: "url", Message: "Open the page", URL: url, ElicitationID: id})
		if err != nil {
			return nil, err
		}
		return sdkText(outcomeText(res.Action, fmt.Sprintf("url:%v", p.completed(id)))), nil
	})
	ts := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, &sdk.StreamableHTTPOptions{Logger: quietLog()}))
	t.Cleanup(ts.Close)
	return ts.URL
}

// goSDK2026 is a go-sdk stateless server (the SDK's 2026-07-28 mode)
// whose tools answer input_required with their own requestState.
func goSDK2026(t *testing.T, p *pages) string {
	s := sdk.NewServer(&sdk.Implementation{Name: "go-sdk-2026", Version: "1.8.0"}, &sdk.ServerOptions{Logger: quietLog()})
	answer := func(req *sdk.CallToolRequest, key string) (*sdk.ElicitResult, bool) {
		a, ok := req.Params.InputResponses[key].(*sdk.ElicitResult)
		return a, ok
	}
	s.AddTool(&sdk.Tool{Name: "form", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		if a, ok := answer(req, "who"); ok && req.Params.RequestState == "form-asked" {
			name, _ := a.Content["name"].(string)
			return sdkText(outcomeText(a.Action, "form:"+name)), nil
		}
		return &sdk.CallToolResult{InputRequests: sdk.InputRequestMap{"who": &sdk.ElicitParams{Mode: "form", Message: "Your name?",
			RequestedSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`)}}, RequestState: "form-asked"}, nil
	})
	s.AddTool(&sdk.Tool{Name: "url", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		if a, ok := answer(req, "link"); ok && req.Params.RequestState != "" {
			return sdkText(outcomeText(a.Action, fmt.Sprintf("url:%v", p.completed(req.Params.RequestState)))), nil
		}
		id, url := p.start()
		return &sdk.CallToolResult{InputRequests: sdk.InputRequestMap{"link": &sdk.ElicitParams{Mode: "url", Message: "Open the page", URL: url, ElicitationID: id}},
			RequestState: id}, nil
	})
	ts := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, &sdk.StreamableHTTPOptions{Stateless: true, Logger: quietLog()}))
	t.Cleanup(ts.Close)
	return ts.URL
}

// user is how a client in front answers: the action, and for a URL the
// page is fetched (completed) before accepting.
type user struct{ action string }

func (u user) form() *mcp.ElicitResult {
	r := &mcp.ElicitResult{Action: u.action}
	if u.action == mcp.ActionAccept {
		r.Content = map[string]any{"name": "Ada"}
	}
	return r
}

func (u user) url(url string) error {
	if u.action != mcp.ActionAccept {
		return nil
	}
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	return resp.Body.Close()
}

// callOurs calls tool through the gateway with this module's client
// (2026-07-28).
func callOurs(ctx context.Context, gw, tool string, u user) (string, error) {
	c := mcpclient.New(gw, &mcpclient.Options{Token: "alice", Handlers: &mcpclient.Handlers{
		ElicitForm: func(context.Context, mcpclient.Asker, string, *mcp.ElicitRequestParams) (*mcp.ElicitResult, error) {
			return u.form(), nil
		},
		ElicitURL: func(_ context.Context, _ mcpclient.Asker, _ string, p *mcp.ElicitRequestParams) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: u.action}, u.url(p.URL)
		},
	}})
	res, err := c.CallTool(ctx, tool, nil)
	if err != nil {
		return "", err
	}
	return res.Content[0].Text, nil
}

// bearerTransport adds a bearer token to every request.
type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// callGoSDK calls tool through the gateway with go-sdk's client over a
// 2025-11-25 session.
func callGoSDK(ctx context.Context, gw, tool string, u user) (string, error) {
	return callGoSDKAt(ctx, Revision2025, gw, tool, u)
}

// callGoSDK2026 calls tool through the gateway with go-sdk's client at
// 2026-07-28 (stateless, its multi round-trip support answering).
func callGoSDK2026(ctx context.Context, gw, tool string, u user) (string, error) {
	return callGoSDKAt(ctx, Revision2026, gw, tool, u)
}

func callGoSDKAt(ctx context.Context, rev, gw, tool string, u user) (string, error) {
	c := sdk.NewClient(&sdk.Implementation{Name: "go-sdk-client", Version: "1.8.0"}, &sdk.ClientOptions{
		Logger: quietLog(),
		Capabilities: &sdk.ClientCapabilities{Elicitation: &sdk.ElicitationCapabilities{
			Form: &sdk.FormElicitationCapabilities{}, URL: &sdk.URLElicitationCapabilities{}}},
		ElicitationHandler: func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			if req.Params.Mode == "url" {
				return &sdk.ElicitResult{Action: u.action}, u.url(req.Params.URL)
			}
			f := u.form()
			return &sdk.ElicitResult{Action: f.Action, Content: f.Content}, nil
		},
	})
	cs, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: gw, HTTPClient: &http.Client{Transport: bearerTransport{"alice"}}, MaxRetries: -1},
		&sdk.ClientSessionOptions{ProtocolVersion: rev})
	if err != nil {
		return "", err
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tool})
	if err != nil {
		return "", err
	}
	if res.IsError {
		return "", fmt.Errorf("tool error %v", res.Content)
	}
	return res.Content[0].(*sdk.TextContent).Text, nil
}

func TestInteropMatrix(t *testing.T) {
	p := newPages(t)
	elicitURL := serveElicit(t, elicitFlows(p))
	upstreams := []struct {
		name string
		up   Upstream
	}{
		{"elicit-2026", Upstream{URL: elicitURL, Revision: Revision2026}},
		{"elicit-2025", Upstream{URL: elicitURL, Revision: Revision2025}},
		{"gosdk-2026-stateless", Upstream{URL: goSDK2026(t, p)}},
		{"gosdk-2025-stateful", Upstream{URL: goSDK2025(t, p)}},
	}
	clients := []struct {
		name string
		call func(ctx context.Context, gw, tool string, u user) (string, error)
	}{{"ours-2026", callOurs}, {"gosdk-2025", callGoSDK}, {"gosdk-2026", callGoSDK2026}}
	cases := []struct {
		tool, action, want string
	}{
		{"form", mcp.ActionAccept, "form:Ada"},
		{"url", mcp.ActionAccept, "url:true"},
		{"form", mcp.ActionDecline, "declined"},
		{"form", mcp.ActionCancel, "cancelled"},
		{"url", mcp.ActionDecline, "declined"},
	}
	for _, up := range upstreams {
		t.Run(up.name, func(t *testing.T) {
			cfg := up.up
			cfg.Name, cfg.Credentials = "up", demoTokens("alice")
			g, gw := startGateway(t, Options{Upstreams: []Upstream{cfg}})
			if up.up.Revision == "" {
				want := Revision2026
				if up.name == "gosdk-2025-stateful" {
					want = Revision2025
				}
				if got := g.byName["up"].revision(); got != want {
					t.Fatalf("found revision %q, want %q", got, want)
				}
			}
			for _, cl := range clients {
				for _, tc := range cases {
					t.Run(cl.name+"/"+tc.tool+"-"+tc.action, func(t *testing.T) {
						got, err := cl.call(context.Background(), gw, tc.tool, user{tc.action})
						if err != nil || got != tc.want {
							t.Errorf("got %q, %v; want %q", got, err, tc.want)
						}
					})
				}
			}
		})
	}
}
