package main

// 2025-11-25 clients against elicitd: the CLIENT of go-sdk v1.8.0 pinned
// to 2025-11-25 (ClientSessionOptions.ProtocolVersion, which makes
// Client.Connect use the initialize handshake, mcp/client.go:314-330)
// runs the same handlers as the 2026 tests, served through the legacy
// bridge on the same /mcp endpoint.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-elicit/elicit/examples/billing"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// tap records every byte the server sends to a 2025 client, as it streams
// (the SSE stream of a tools/call stays open while the server waits for
// the client's answer, so it cannot be read whole first).
type tap struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

type tapBody struct {
	io.ReadCloser
	t *tap
}

func (b tapBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.t.mu.Lock()
	b.t.buf.Write(p[:n])
	b.t.mu.Unlock()
	return n, err
}

func (t *tap) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	resp.Body = tapBody{resp.Body, t}
	return resp, nil
}

func (t *tap) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.buf.String()
}

// client2025 is a go-sdk client session pinned to 2025-11-25, with what it
// saw: the elicitation requests and the completion notifications.
type client2025 struct {
	cs        *mcp.ClientSession
	tap       *tap
	mu        sync.Mutex
	asked     []*mcp.ElicitParams
	completed chan string
}

func (c *client2025) elicitations() []*mcp.ElicitParams {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*mcp.ElicitParams(nil), c.asked...)
}

// connect2025 connects as user declaring caps (nil: form and URL); answer
// answers the n-th elicitation request (0-based). A nil answer sets no
// handler, so that go-sdk declares no elicitation.
func (e *env) connect2025(ctx context.Context, user string, caps *mcp.ClientCapabilities,
	answer func(n int, p *mcp.ElicitParams) *mcp.ElicitResult) *client2025 {
	e.t.Helper()
	c := &client2025{tap: &tap{}, completed: make(chan string, 8)}
	if caps == nil {
		caps = &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{
			Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}}}
	}
	opts := &mcp.ClientOptions{
		Capabilities: caps,
		ElicitationCompleteHandler: func(_ context.Context, req *mcp.ElicitationCompleteNotificationRequest) {
			c.completed <- req.Params.ElicitationID
		},
	}
	if answer != nil { // go-sdk declares elicitation whenever a handler is set
		opts.ElicitationHandler = func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			c.mu.Lock()
			n := len(c.asked)
			c.asked = append(c.asked, req.Params)
			c.mu.Unlock()
			return answer(n, req.Params), nil
		}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "gosdk-2025", Version: "v1.8.0"}, opts)
	cs, err := client.Connect(ctx, e.gosdkTransport(user, c.tap), &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		e.t.Fatalf("go-sdk Connect (2025-11-25): %v\nlogs:\n%s", err, e.logs.String())
	}
	e.t.Cleanup(func() { _ = cs.Close() })
	if got := cs.InitializeResult().ProtocolVersion; got != "2025-11-25" {
		e.t.Fatalf("negotiated %q, want 2025-11-25", got)
	}
	if cs.ID() == "" {
		e.t.Fatal("no Mcp-Session-Id: the 2025 client was not served by the stateful bridge")
	}
	c.cs = cs
	return c
}

// waitCompleted returns the next notifications/elicitation/complete id.
func (c *client2025) waitCompleted(t *testing.T, ctx context.Context) string {
	t.Helper()
	select {
	case id := <-c.completed:
		return id
	case <-ctx.Done():
		t.Fatal("no notifications/elicitation/complete")
		return ""
	}
}

// noState fails if anything the server sent to the 2025 client carries a
// requestState: on this side the state never leaves the server.
func (c *client2025) noState(t *testing.T) {
	t.Helper()
	if s := c.tap.String(); strings.Contains(s, "requestState") || strings.Contains(s, "inputRequests") || strings.Contains(s, "resultType") {
		t.Fatalf("a 2025 client saw 2026 MRTR fields:\n%s", s)
	}
}

func (c *client2025) call(t *testing.T, ctx context.Context, tool string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	if args == nil {
		args = map[string]any{}
	}
	r, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("tools/call %s: %v", tool, err)
	}
	return r
}

// TestLegacyConnectBilling: URL mode in its 2025 shape (elicitationId),
// the page finished during the client's prompt, then
// notifications/elicitation/complete for that id.
func TestLegacyConnectBilling(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := e.connect2025(ctx, "alice", nil, func(_ int, p *mcp.ElicitParams) *mcp.ElicitResult {
		if p.Mode == "url" && strings.HasPrefix(p.URL, e.url+"/ui/set_api_key?flow=") {
			e.connectBrowserStep(t, p.URL)
			return &mcp.ElicitResult{Action: "accept"}
		}
		return &mcp.ElicitResult{Action: "cancel"}
	})
	r := c.call(t, ctx, billing.ToolName, nil)
	if r.IsError || toolText(t, r) != billing.TextConnected {
		t.Fatalf("result: isError=%v text=%q", r.IsError, toolText(t, r))
	}
	asked := c.elicitations()
	if len(asked) != 1 || asked[0].Mode != "url" || len(asked[0].ElicitationID) != 32 || asked[0].Message == "" {
		t.Fatalf("elicitations: %+v", asked)
	}
	if id := c.waitCompleted(t, ctx); id != asked[0].ElicitationID {
		t.Fatalf("completed %q, asked %q", id, asked[0].ElicitationID)
	}
	c.noState(t)
	if strings.Contains(c.tap.String(), testKey) {
		t.Fatal("the API key reached the client")
	}
	// The connection is shared with 2026 clients: same handler, same store.
	if r := e.connect(9, "alice", ""); r.text() != billing.TextAlreadyConnected {
		t.Fatalf("2026 client after the 2025 flow: %s", r.Raw)
	}
}

// TestLegacyURLNotFinished: an accept whose page is not finished is polled
// and then asked again (the handler's own re-ask); finishing the page on
// the second prompt completes the call, and the completion names the
// second elicitation.
func TestLegacyURLNotFinished(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := e.connect2025(ctx, "alice", nil, func(n int, p *mcp.ElicitParams) *mcp.ElicitResult {
		if n == 1 {
			e.connectBrowserStep(t, p.URL)
		}
		return &mcp.ElicitResult{Action: "accept"}
	})
	r := c.call(t, ctx, billing.ToolName, nil)
	if r.IsError || toolText(t, r) != billing.TextConnected {
		t.Fatalf("result: isError=%v text=%q", r.IsError, toolText(t, r))
	}
	asked := c.elicitations()
	if len(asked) != 2 || asked[0].URL != asked[1].URL || asked[0].ElicitationID == asked[1].ElicitationID {
		t.Fatalf("want the same page asked twice with two ids, got %+v", asked)
	}
	if id := c.waitCompleted(t, ctx); id != asked[1].ElicitationID {
		t.Fatalf("completed %q, want the second elicitation %q", id, asked[1].ElicitationID)
	}
	c.noState(t)
}

// TestLegacyDeclineCancelSameTexts: decline and cancel reach the handler
// unchanged, so a 2025 client gets the very texts a 2026 client gets.
func TestLegacyDeclineCancelSameTexts(t *testing.T) {
	for _, tc := range []struct{ action, want string }{
		{"decline", billing.TextDeclined},
		{"cancel", billing.TextCancelled},
	} {
		t.Run(tc.action, func(t *testing.T) {
			e := newEnv(t)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			c := e.connect2025(ctx, "alice", nil, func(int, *mcp.ElicitParams) *mcp.ElicitResult {
				return &mcp.ElicitResult{Action: tc.action}
			})
			r := c.call(t, ctx, billing.ToolName, nil)
			got2025 := toolText(t, r)

			first := e.connect(1, "bob", "")
			r2026 := e.connect(2, "bob", answer(tc.action, first.state()))
			if !r.IsError || got2025 != tc.want || !r2026.isError() || r2026.text() != got2025 {
				t.Fatalf("2025: isError=%v %q\n2026: isError=%v %q\nwant %q", r.IsError, got2025, r2026.isError(), r2026.text(), tc.want)
			}
			if n := len(c.elicitations()); n != 1 {
				t.Fatalf("asked %d times after a %s", n, tc.action)
			}
			c.noState(t)
		})
	}
}

// TestLegacyReportFlow: export_report (form) and then send_report (URL,
// then a form confirmation: two input rounds in one 2025 call).
func TestLegacyReportFlow(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := e.connect2025(ctx, "alice", nil, func(_ int, p *mcp.ElicitParams) *mcp.ElicitResult {
		switch {
		case p.Mode == "url":
			e.connectBrowserStep(t, p.URL)
			return &mcp.ElicitResult{Action: "accept"}
		case strings.Contains(p.Message, "2026-Q2") && strings.Contains(p.Message, "bob@example.com"):
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"send": true}}
		case strings.Contains(p.Message, "sales report for 2026-Q2"):
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"detail": "detailed", "label": "Q2 revenue"}}
		}
		return &mcp.ElicitResult{Action: "cancel"}
	})
	r := c.call(t, ctx, "export_report", map[string]any{"period": "2026-Q2", "dataset": "sales"})
	sc, _ := r.StructuredContent.(map[string]any)
	draft, _ := sc["draft_id"].(string)
	if r.IsError || draft == "" || sc["sent"] != false {
		t.Fatalf("export_report: isError=%v %v %q", r.IsError, r.StructuredContent, toolText(t, r))
	}
	r = c.call(t, ctx, "send_report", map[string]any{"draft_id": draft, "recipient": "bob@example.com"})
	if r.IsError || !strings.HasPrefix(toolText(t, r), "Sent draft ") || !strings.Contains(toolText(t, r), "bob@example.com") {
		t.Fatalf("send_report: isError=%v %q", r.IsError, toolText(t, r))
	}
	var modes []string
	for _, p := range c.elicitations() {
		modes = append(modes, p.Mode)
	}
	if strings.Join(modes, ",") != "form,url,form" {
		t.Fatalf("elicitation modes %v, want form,url,form", modes)
	}
	if id := c.waitCompleted(t, ctx); id != c.elicitations()[1].ElicitationID {
		t.Fatalf("completed %q, want the URL elicitation", id)
	}
	c.noState(t)
	if strings.Contains(c.tap.String(), "rk_TESTKEY") || strings.Contains(c.tap.String(), testKey) {
		t.Fatal("a key reached the client")
	}
}

// TestLegacyMissingCapability: a 2025 client that declared no elicitation,
// or form only, gets the refusal a 2026 client gets: the same JSON-RPC
// code, message and data, in its session's response.
func TestLegacyMissingCapability(t *testing.T) {
	formOnly := &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}}
	reportArgs := `{"period":"2026-Q2","dataset":"sales"}`
	for _, tc := range []struct {
		name, tool, args string
		caps             *mcp.ClientCapabilities
		meta, data       string
	}{
		{"URL mode, no elicitation", billing.ToolName, `{}`, &mcp.ClientCapabilities{}, metaNone, `{"requiredCapabilities":{"elicitation":{"url":{}}}}`},
		{"URL mode, form only", billing.ToolName, `{}`, formOnly, metaForm, `{"requiredCapabilities":{"elicitation":{"url":{}}}}`},
		{"form mode, no elicitation", "export_report", reportArgs, &mcp.ClientCapabilities{}, metaNone, `{"requiredCapabilities":{"elicitation":{"form":{}}}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var answer func(int, *mcp.ElicitParams) *mcp.ElicitResult
			if tc.caps.Elicitation != nil {
				answer = func(int, *mcp.ElicitParams) *mcp.ElicitResult {
					t.Error("a client without the mode was asked")
					return &mcp.ElicitResult{Action: "cancel"}
				}
			}
			c := e.connect2025(ctx, "alice", tc.caps, answer)
			var args map[string]any
			_ = json.Unmarshal([]byte(tc.args), &args)
			_, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: tc.tool, Arguments: args})
			var we *jsonrpc.Error
			if !errors.As(err, &we) {
				t.Fatalf("want a JSON-RPC error, got %v", err)
			}
			body := strings.Replace(callBody(1, tc.tool, "", tc.meta), `"arguments":{}`, `"arguments":`+tc.args, 1)
			r := e.mcp("alice", "tools/call", tc.tool, body)
			r.wantError(t, 400, -32021)
			if int(we.Code) != r.Error.Code || we.Message != r.Error.Message || string(we.Data) != string(r.Error.Data) {
				t.Fatalf("2025: %d %q %s\n2026: %d %q %s", we.Code, we.Message, we.Data, r.Error.Code, r.Error.Message, r.Error.Data)
			}
			if string(we.Data) != tc.data {
				t.Fatalf("data %s, want %s", we.Data, tc.data)
			}
		})
	}
}

// TestLegacyStateUnreachable: a 2025 client cannot hand the server a
// requestState or answers of its own: what it puts in the 2026 fields of
// tools/call is ignored, the handler starts at round 0 and asks.
func TestLegacyStateUnreachable(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	first := e.connect(1, "alice", "") // a genuine state, of this very user and tool
	c := e.connect2025(ctx, "alice", nil, func(int, *mcp.ElicitParams) *mcp.ElicitResult {
		return &mcp.ElicitResult{Action: "cancel"}
	})
	for _, state := range []string{first.state(), "forged"} {
		r, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: billing.ToolName, Arguments: map[string]any{},
			RequestState:   state,
			InputResponses: mcp.InputResponseMap{billing.InputKey: &mcp.ElicitResult{Action: "decline"}}})
		if err != nil {
			t.Fatalf("tools/call with a requestState: %v", err)
		}
		// Cancelled by this client's own prompt, not declined by the
		// smuggled answer, and no -32602 for the forged state.
		if toolText(t, r) != billing.TextCancelled {
			t.Fatalf("text %q, want the cancel text", toolText(t, r))
		}
	}
	if n := len(c.elicitations()); n != 2 {
		t.Fatalf("asked %d times, want once per call", n)
	}
	if strings.Contains(e.logs.String(), "requestState refused") {
		t.Fatal("a 2025 client's requestState reached the state check")
	}
	c.noState(t)
}

// TestLegacySessionOfAnotherUser: a session belongs to the user who opened
// it; another user's token on it is refused (go-sdk's session binding,
// fed with the streamhttp authenticator's subject).
func TestLegacySessionOfAnotherUser(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := e.connect2025(ctx, "alice", nil, func(int, *mcp.ElicitParams) *mcp.ElicitResult { return &mcp.ElicitResult{Action: "cancel"} })
	for _, tc := range []struct {
		auth string
		want int
	}{{"Bearer bob", http.StatusForbidden}, {"", http.StatusUnauthorized}} {
		req, _ := http.NewRequestWithContext(ctx, "POST", e.url+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":5,"method":"tools/list"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		req.Header.Set("Mcp-Session-Id", c.cs.ID())
		if tc.auth != "" {
			req.Header.Set("Authorization", tc.auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Fatalf("%q on alice's session: HTTP %d, want %d", tc.auth, resp.StatusCode, tc.want)
		}
	}
}
