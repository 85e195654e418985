package main

// Interop: the CLIENT of github.com/modelcontextprotocol/go-sdk v1.8.0
// against elicitd over the 2026-07-28 stateless Streamable HTTP transport.
//
// go-sdk v1.8.0 speaks 2026-07-28 out of the box: its latest version is
// 2026-07-28 (mcp/shared.go:50-51), Client.Connect probes with the
// stateless server/discover RPC first (mcp/client.go:319-380, discover at
// mcp/client.go:416), and multi round-trip requests (SEP-2322) are handled
// by a client middleware installed by default (mcp/client.go:79-80,
// mcp/mrtr.go:73) that answers each inputRequests entry through
// ClientOptions.ElicitationHandler (mcp/mrtr.go:295-298) and retries with
// InputResponses + RequestState (mcp/mrtr.go:234). With
// MultiRoundTripOptions.Disabled the input_required result is returned as
// is (CallToolResult.NeedsInput, mcp/protocol.go:370) and the caller retries with the CallToolParams
// fields InputResponses/RequestState (mcp/protocol.go:219-235).
//
// Both paths are exercised below.

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-elicit/elicit/examples/billing"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// bearer adds demo auth to every request go-sdk makes.
type bearer struct {
	user string
	next http.RoundTripper
}

func (b bearer) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+b.user)
	return b.next.RoundTrip(req)
}

// gosdkTransport is go-sdk's Streamable HTTP client transport to /mcp as
// user (through next), without the standalone GET stream and retries.
func (e *env) gosdkTransport(user string, next http.RoundTripper) *mcp.StreamableClientTransport {
	return &mcp.StreamableClientTransport{
		Endpoint:             e.url + "/mcp",
		HTTPClient:           &http.Client{Transport: bearer{user: user, next: next}},
		DisableStandaloneSSE: true,
		MaxRetries:           -1,
	}
}

// gosdkConnect connects a go-sdk client as user, declaring form and URL
// elicitation. handler may be nil only when mrtr is false.
func (e *env) gosdkConnect(ctx context.Context, user string, mrtr bool,
	handler func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)) *mcp.ClientSession {
	e.t.Helper()
	opts := &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{
			Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}}},
		ElicitationHandler: handler,
	}
	if !mrtr {
		opts.MultiRoundTrip = &mcp.MultiRoundTripOptions{Disabled: true}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "gosdk-interop", Version: "v1.8.0"}, opts)
	cs, err := client.Connect(ctx, e.gosdkTransport(user, e.rec), &mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	if err != nil {
		e.t.Fatalf("go-sdk Connect: %v\nlogs:\n%s", err, e.logs.String())
	}
	e.t.Cleanup(func() { _ = cs.Close() })
	if got := cs.InitializeResult().ProtocolVersion; got != "2026-07-28" {
		e.t.Fatalf("negotiated %q, want 2026-07-28", got)
	}
	return cs
}

func toolText(t *testing.T, r *mcp.CallToolResult) string {
	t.Helper()
	if len(r.Content) == 0 {
		return ""
	}
	tc, ok := r.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("content[0] is %T", r.Content[0])
	}
	return tc.Text
}

// connectBrowserStep does the page step for the URL-mode elicitation link.
func (e *env) connectBrowserStep(t *testing.T, link string) {
	t.Helper()
	alice := e.browser()
	status, page := alice.login(e.url, link, "alice")
	if status != 200 || !strings.Contains(page, `id="key-form"`) {
		t.Fatalf("key page: %d\n%s", status, page)
	}
	status, page = alice.fillKey(e.url, page, link, testKey)
	if status != 200 || !strings.Contains(page, `id="done"`) {
		t.Fatalf("key POST: %d\n%s", status, page)
	}
}

// TestGoSDKDiscoverAndList: server/discover handshake and tools/list.
func TestGoSDKDiscoverAndList(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs := e.gosdkConnect(ctx, "alice", false, nil)
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	names := map[string]bool{}
	for _, tl := range tools.Tools {
		names[tl.Name] = true
	}
	if !names[billing.ToolName] || !names["export_report"] {
		t.Fatalf("tools/list: %v", names)
	}
}

// TestGoSDKConnectBillingManual: MRTR driven by hand with the
// CallToolParams fields.
func TestGoSDKConnectBillingManual(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs := e.gosdkConnect(ctx, "alice", false, nil)

	r1, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: billing.ToolName, Arguments: map[string]any{}})
	if err != nil {
		t.Fatalf("first tools/call: %v", err)
	}
	if !r1.NeedsInput() || r1.RequestState == "" || len(r1.InputRequests) != 1 {
		t.Fatalf("first call not input_required: %+v", r1)
	}
	ep, ok := r1.InputRequests[billing.InputKey].(*mcp.ElicitParams)
	if !ok {
		t.Fatalf("no elicitation under %q: %#v", billing.InputKey, r1.InputRequests)
	}
	if ep.Mode != "url" || ep.Message == "" || !strings.HasPrefix(ep.URL, e.url+"/ui/set_api_key?flow=") {
		t.Fatalf("elicitation: mode=%q url=%q", ep.Mode, ep.URL)
	}

	e.connectBrowserStep(t, ep.URL)

	r2, err := cs.CallTool(ctx, &mcp.CallToolParams{
		Name:           billing.ToolName,
		Arguments:      map[string]any{},
		InputResponses: mcp.InputResponseMap{billing.InputKey: &mcp.ElicitResult{Action: "accept"}},
		RequestState:   r1.RequestState,
	})
	if err != nil {
		t.Fatalf("retry: %v", err)
	}
	if r2.NeedsInput() || r2.IsError || toolText(t, r2) != billing.TextConnected {
		t.Fatalf("retry result: needsInput=%v isError=%v text=%q", r2.NeedsInput(), r2.IsError, toolText(t, r2))
	}
	if strings.Contains(e.logs.String(), testKey) {
		t.Fatal("key in the logs")
	}
}

// TestGoSDKConnectBillingAuto: MRTR through go-sdk's default middleware
// and ElicitationHandler; the handler does the page step.
func TestGoSDKConnectBillingAuto(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var calls atomic.Int32
	cs := e.gosdkConnect(ctx, "alice", true, func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		calls.Add(1)
		p := req.Params
		if p.Mode != "url" || !strings.HasPrefix(p.URL, e.url+"/ui/set_api_key?flow=") {
			t.Errorf("elicitation: mode=%q url=%q", p.Mode, p.URL)
			return &mcp.ElicitResult{Action: "cancel"}, nil
		}
		e.connectBrowserStep(t, p.URL)
		return &mcp.ElicitResult{Action: "accept"}, nil
	})
	r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: billing.ToolName, Arguments: map[string]any{}})
	if err != nil {
		t.Fatalf("tools/call: %v", err)
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("elicitation handler called %d times", n)
	}
	if r.NeedsInput() || r.IsError || toolText(t, r) != billing.TextConnected {
		t.Fatalf("result: needsInput=%v isError=%v text=%q", r.NeedsInput(), r.IsError, toolText(t, r))
	}
}

// TestGoSDKExportReport: form-mode elicitation answered through the
// ElicitationHandler; the draft is prepared and not sent.
func TestGoSDKExportReport(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var calls atomic.Int32
	cs := e.gosdkConnect(ctx, "alice", true, func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		calls.Add(1)
		p := req.Params
		if (p.Mode != "form" && p.Mode != "") || !strings.Contains(p.Message, "sales report for 2026-Q2") || p.RequestedSchema == nil {
			t.Errorf("form elicitation: mode=%q message=%q schema=%v", p.Mode, p.Message, p.RequestedSchema)
			return &mcp.ElicitResult{Action: "cancel"}, nil
		}
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"detail": "detailed", "label": "Q2 revenue"}}, nil
	})
	r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "export_report",
		Arguments: map[string]any{"period": "2026-Q2", "dataset": "sales"}})
	if err != nil {
		t.Fatalf("tools/call: %v", err)
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("elicitation handler called %d times", n)
	}
	if r.NeedsInput() || r.IsError {
		t.Fatalf("result: needsInput=%v isError=%v text=%q", r.NeedsInput(), r.IsError, toolText(t, r))
	}
	sc, _ := r.StructuredContent.(map[string]any)
	id, _ := sc["draft_id"].(string)
	if id == "" || sc["status"] != "prepared" || sc["sent"] != false || sc["detail"] != "detailed" || sc["label"] != "Q2 revenue" {
		t.Fatalf("structuredContent: %v", r.StructuredContent)
	}
	if text := toolText(t, r); !strings.Contains(text, "Draft "+id+" prepared") || !strings.Contains(text, "NOT been sent") {
		t.Fatalf("text: %q", text)
	}
}
