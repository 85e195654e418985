package legacy_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-elicit/elicit/auth"
	"github.com/mcp-elicit/elicit/elicit"
	"github.com/mcp-elicit/elicit/internal/mcptest"
	"github.com/mcp-elicit/elicit/legacy"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpclient"
	"github.com/mcp-elicit/elicit/mcpserver"
	"github.com/mcp-elicit/elicit/streamhttp"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// nameSchema's email format is checked by elicit's validation, not by
// go-sdk's client, so a go-sdk client can send an answer the handler finds
// invalid.
const nameSchema = `{"type":"object","properties":{"name":{"type":"string","format":"email"}},"required":["name"]}`

// newServer registers the tools the tests call; obs, if given, observes
// the rounds.
func newServer(polls *atomic.Int32, obs ...mcpserver.Observer) *mcpserver.Server {
	o := &mcpserver.Options{Logger: quiet, Instructions: "test instructions"}
	if len(obs) > 0 {
		o.Observer = obs[0]
	}
	s := mcpserver.New(mcp.Implementation{Name: "legacy-test", Version: "1"}, o)
	s.AddTool(&mcp.Tool{Name: "echo", Description: "echo"}, func(_ context.Context, req *mcpserver.Request) (mcpserver.Reply, error) {
		return mcpserver.Text("principal=" + req.Principal), nil
	})
	s.AddTool(&mcp.Tool{Name: "version"}, func(ctx context.Context, req *mcpserver.Request) (mcpserver.Reply, error) {
		v, ok := legacy.ClientVersion(ctx)
		return mcpserver.Text(fmt.Sprintf("%s %v", v, ok)), nil
	})
	// ask_name: a form asked until valid (an email address),
	// with the re-ask rules of mcpserver.
	s.AddTool(&mcp.Tool{Name: "ask_name", Description: "form"}, func(_ context.Context, req *mcpserver.Request) (mcpserver.Reply, error) {
		switch a := req.Elicitation("name"); a.Outcome {
		case elicit.Accepted:
			return mcpserver.Text(fmt.Sprintf("hello %v (round %d)", a.Content["name"], req.Round)), nil
		case elicit.Declined, elicit.Cancelled:
			return mcpserver.ToolError("no name: " + a.Outcome.String()), nil
		}
		return mcpserver.Ask().ElicitForm("name", "Your name?", json.RawMessage(nameSchema)), nil
	})
	s.AddTool(&mcp.Tool{Name: "roots"}, func(_ context.Context, req *mcpserver.Request) (mcpserver.Reply, error) {
		if r, ok := req.Roots("r"); ok {
			return mcpserver.Text(fmt.Sprintf("%d roots, first %s", len(r.Roots), r.Roots[0].URI)), nil
		}
		return mcpserver.Ask().ListRoots("r"), nil
	})
	// later: state-only "come back later" twice, then done.
	s.AddTool(&mcp.Tool{Name: "later"}, func(_ context.Context, req *mcpserver.Request) (mcpserver.Reply, error) {
		if req.Round < 2 {
			polls.Add(1)
			return mcpserver.Ask().WithState([]byte{byte(req.Round)}), nil
		}
		return mcpserver.Text(fmt.Sprintf("done after %d rounds", req.Round)), nil
	})
	s.AddTool(&mcp.Tool{Name: "forever"}, func(_ context.Context, req *mcpserver.Request) (mcpserver.Reply, error) {
		return mcpserver.Ask(), nil
	})
	// page_forever: a URL-mode page that is never finished.
	s.AddTool(&mcp.Tool{Name: "page_forever"}, func(_ context.Context, req *mcpserver.Request) (mcpserver.Reply, error) {
		return mcpserver.Ask().ElicitURL("page", "Open the page", "https://example.com/page"), nil
	})
	return s
}

type testServer struct {
	url   string
	polls atomic.Int32
}

func start(t testing.TB, authn auth.Authenticator, opts *legacy.Options) *testServer {
	t.Helper()
	ts := &testServer{}
	s := newServer(&ts.polls)
	if opts == nil {
		opts = &legacy.Options{}
	}
	opts.Logger = quiet
	opts.StatePoll = time.Millisecond
	h := legacy.NewHandler(s, streamhttp.NewHandler(s, &streamhttp.Options{Auth: authn, Logger: quiet, MaxBodyBytes: 4096}), opts)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	ts.url = srv.URL
	return ts
}

// connect opens a 2025-11-25 session.
func connect(t testing.TB, ctx context.Context, url string, caps *sdk.ClientCapabilities, opts *sdk.ClientOptions) *sdk.ClientSession {
	t.Helper()
	if opts == nil {
		opts = &sdk.ClientOptions{}
	}
	opts.Capabilities = caps
	c := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, opts)
	if caps != nil && caps.RootsV2 != nil {
		c.AddRoots(&sdk.Root{URI: "file:///work"})
	}
	cs, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: url, DisableStandaloneSSE: true, MaxRetries: -1},
		&sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func text(r *sdk.CallToolResult) string {
	if len(r.Content) == 0 {
		return ""
	}
	if tc, ok := r.Content[0].(*sdk.TextContent); ok {
		return tc.Text
	}
	return ""
}

// TestBridgeRounds: the handler's rounds as a 2025 client sees them.
func TestBridgeRounds(t *testing.T) {
	form := &sdk.ClientCapabilities{Elicitation: &sdk.ElicitationCapabilities{Form: &sdk.FormElicitationCapabilities{}}}
	roots := &sdk.ClientCapabilities{RootsV2: &sdk.RootCapabilities{}}
	for _, tc := range []struct {
		name, tool string
		caps       *sdk.ClientCapabilities
		answers    []map[string]any // form answers in order, nil = decline
		want       string
		wantAsked  int
		wantPrefix bool
	}{
		{"valid first time", "ask_name", form, []map[string]any{{"name": "ann@example.com"}}, "hello ann@example.com (round 1)", 1, false},
		// The invalid answer reaches the handler as sent (go-sdk's own
		// server-side check is bypassed), which asks again with the problem.
		{"invalid, then valid", "ask_name", form, []map[string]any{{"name": "bart"}, {"name": "bart@example.com"}}, "hello bart@example.com (round 2)", 2, false},
		{"invalid past the re-ask cap", "ask_name", form,
			[]map[string]any{{"name": "a"}, {"name": "b"}, {"name": "c"}}, "Stopped: the answer to \"name\" was still not valid", 3, true},
		{"decline", "ask_name", form, []map[string]any{nil}, "no name: declined", 1, false},
		{"roots", "roots", roots, nil, "1 roots, first file:///work", 0, false},
		{"state-only rounds", "later", nil, nil, "done after 2 rounds", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := start(t, nil, nil)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			var asked []string
			opts := &sdk.ClientOptions{
				ElicitationHandler: func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
					asked = append(asked, req.Params.Message)
					a := tc.answers[len(asked)-1]
					if a == nil {
						return &sdk.ElicitResult{Action: "decline"}, nil
					}
					return &sdk.ElicitResult{Action: "accept", Content: a}, nil
				},
			}
			cs := connect(t, ctx, ts.url, tc.caps, opts)
			r, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tc.tool, Arguments: map[string]any{}})
			if err != nil {
				t.Fatal(err)
			}
			got := text(r)
			if tc.wantPrefix && !strings.HasPrefix(got, tc.want) || !tc.wantPrefix && got != tc.want {
				t.Fatalf("text %q, want %q", got, tc.want)
			}
			if len(asked) != tc.wantAsked {
				t.Fatalf("asked %d times: %q", len(asked), asked)
			}
			if len(asked) > 1 && !strings.Contains(asked[1], "Your previous answer was not accepted") {
				t.Fatalf("the re-ask does not say what was wrong: %q", asked[1])
			}
		})
	}
}

// TestBridgeRoundCap: a handler that never finishes is stopped at
// Options.MaxRounds with -32602.
func TestBridgeRoundCap(t *testing.T) {
	ts := start(t, nil, &legacy.Options{MaxRounds: 4})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs := connect(t, ctx, ts.url, nil, nil)
	_, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "forever", Arguments: map[string]any{}})
	var we *jsonrpc.Error
	if !errors.As(err, &we) || we.Code != -32602 || we.Message != "Too many rounds for one request" {
		t.Fatalf("want -32602 Too many rounds, got %v", err)
	}
}

// TestBridgePrincipalAndInstructions: the streamhttp authenticator's
// principal id reaches the handler (issuer#subject for a token, as on the
// 2026 path); instructions come from server/discover.
func TestBridgePrincipalAndInstructions(t *testing.T) {
	for _, tt := range []struct {
		authn auth.Authenticator
		want  string
	}{
		{auth.DemoBearer{Realm: "t"}, "principal=carol"},
		{issuerAuth{}, "principal=https://idp.example#carol"},
	} {
		ts := start(t, tt.authn, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		c := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, nil)
		cs, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: ts.url, DisableStandaloneSSE: true, MaxRetries: -1,
			HTTPClient: &http.Client{Transport: bearer("carol")}}, &sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		if got := cs.InitializeResult().Instructions; got != "test instructions" {
			t.Fatalf("instructions %q", got)
		}
		r, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{}})
		if err != nil || text(r) != tt.want {
			t.Fatalf("echo: %v %q, want %q", err, text(r), tt.want)
		}
	}
}

// ClientVersion tells a handler the revision of the session a 2025
// client called through, and nothing for a 2026 request.
func TestClientVersion(t *testing.T) {
	ts := start(t, nil, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, v := range []string{"2025-11-25", "2025-06-18"} {
		c := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, nil)
		cs, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: ts.url, DisableStandaloneSSE: true, MaxRetries: -1},
			&sdk.ClientSessionOptions{ProtocolVersion: v})
		if err != nil {
			t.Fatal(err)
		}
		r, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "version", Arguments: map[string]any{}})
		_ = cs.Close()
		if err != nil || text(r) != v+" true" {
			t.Errorf("%s session: %v %q", v, err, text(r))
		}
	}
	res, err := mcpclient.New(ts.url, nil).CallTool(ctx, "version", nil)
	if err != nil || res.Content[0].Text != " false" {
		t.Errorf("2026 request: %v %+v", err, res)
	}
}

// issuerAuth authenticates every request as carol at an issuer, as
// jwtauth.JWT does for a token.
type issuerAuth struct{}

func (issuerAuth) Authenticate(*http.Request) (auth.Principal, error) {
	return auth.Principal{Issuer: "https://idp.example", Subject: "carol"}, nil
}
func (issuerAuth) Challenge() string { return "" }

type bearer string

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

const listBody = `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`

var discoverBody = `{"jsonrpc":"2.0","id":2,"method":"server/discover","params":{` + mcptest.Meta(`{}`) + `}}`

// TestRouting: which era answers which request, with the endpoint's Host,
// auth and body-limit checks on both.
func TestRouting(t *testing.T) {
	ts := start(t, nil, nil)
	authed := start(t, auth.DemoBearer{Realm: "t"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	session := connect(t, ctx, ts.url, nil, nil).ID()
	for _, tc := range []struct {
		name, method, url, body string
		headers                 map[string]string
		status                  int
		want                    string // in the body or as "session" for an Mcp-Session-Id answer
	}{
		{"2026 request", "POST", ts.url, discoverBody, map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "server/discover"}, 200, `"supportedVersions"`},
		{"initialize without version header", "POST", ts.url, initBody, nil, 200, "session"},
		{"initialize with a 2025 version header", "POST", ts.url, initBody, map[string]string{"MCP-Protocol-Version": "2025-11-25"}, 200, "session"},
		{"initialize with the 2026 header", "POST", ts.url, initBody, map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "initialize"}, 400, `-32602`},
		{"no header, not initialize", "POST", ts.url, discoverBody, map[string]string{"Mcp-Method": "server/discover"}, 400, `-32020`},
		{"2025 header, no session, a 2026 body", "POST", ts.url, discoverBody, map[string]string{"MCP-Protocol-Version": "2025-11-25", "Mcp-Method": "server/discover"}, 400, `"code":-32020,"message":"Header mismatch`},
		{"2025 header, no session, tools/list", "POST", ts.url, listBody, map[string]string{"MCP-Protocol-Version": "2025-11-25"}, 400, `{"jsonrpc":"2.0","id":3,"error":{"code":-32020,"message":"no session: a 2025-11-25 client sends initialize first and then Mcp-Session-Id"}}`},
		{"2025 header and Mcp-Method, no session, tools/list", "POST", ts.url, listBody, map[string]string{"MCP-Protocol-Version": "2025-11-25", "Mcp-Method": "tools/list"}, 400, `"message":"no session: a 2025-11-25 client sends initialize first`},
		{"no headers, no session, tools/list", "POST", ts.url, listBody, nil, 400, `"message":"no session: a 2025-11-25 client sends initialize first`},
		{"no version header, Mcp-Method, no _meta", "POST", ts.url, listBody, map[string]string{"Mcp-Method": "tools/list"}, 400, `"code":-32020,"message":"Header mismatch`},
		{"unknown session", "POST", ts.url, `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`, map[string]string{"Mcp-Session-Id": "nope", "MCP-Protocol-Version": "2025-11-25"}, 404, "session not found"},
		{"GET without session", "GET", ts.url, "", nil, 405, "Method Not Allowed"},
		{"DELETE of an unknown session", "DELETE", ts.url, "", map[string]string{"Mcp-Session-Id": "nope"}, 404, "session not found"},
		{"initialize with a foreign Host", "POST", ts.url, initBody, map[string]string{"Host": "evil.example"}, 403, "Forbidden"},
		{"initialize with a foreign Origin", "POST", ts.url, initBody, map[string]string{"Origin": "http://evil.example"}, 403, "Forbidden"},
		{"session request with a foreign Origin", "POST", ts.url, `{}`, map[string]string{"Mcp-Session-Id": "x", "Origin": "http://evil.example"}, 403, "Forbidden"},
		{"initialize without credentials", "POST", authed.url, initBody, nil, 401, "Unauthorized"},
		{"initialize over the body limit", "POST", ts.url, initBody[:len(initBody)-1] + strings.Repeat(" ", 5000) + "}", nil, 413, "too large"},
		{"session request over the body limit", "POST", ts.url, `{"jsonrpc":"2.0","id":3,"method":"ping"` + strings.Repeat(" ", 5000) + "}", map[string]string{"Mcp-Session-Id": "{session}", "MCP-Protocol-Version": "2025-11-25"}, 413, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, tc.url, strings.NewReader(tc.body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			for k, v := range tc.headers {
				v = strings.ReplaceAll(v, "{session}", session)
				if k == "Host" {
					req.Host = v
					continue
				}
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.status {
				t.Fatalf("HTTP %d, want %d: %s", resp.StatusCode, tc.status, b)
			}
			if tc.want == "session" {
				if resp.Header.Get("Mcp-Session-Id") == "" || !strings.Contains(string(b), `"protocolVersion":"2025-11-25"`) {
					t.Fatalf("no 2025 session: %v %s", resp.Header, b)
				}
			} else if !strings.Contains(string(b), tc.want) {
				t.Fatalf("body %q does not contain %q", b, tc.want)
			}
		})
	}
}

// FuzzSniff: a POST without a version header that is not initialize gets
// exactly what the streamhttp handler alone answers: the body the sniffer
// read is handed on whole.
func FuzzSniff(f *testing.F) {
	for _, s := range []string{initBody, discoverBody, `{"method":"initialize"`, `[]`, `{"jsonrpc":"2.0","method":"initialize"}`, "", strings.Repeat("x", 5000)} {
		f.Add(s)
	}
	s := newServer(&atomic.Int32{})
	modern := streamhttp.NewHandler(s, &streamhttp.Options{Logger: quiet, MaxBodyBytes: 4096})
	both := legacy.NewHandler(s, modern, &legacy.Options{Logger: quiet})
	serve := func(h http.Handler, body string) (int, string) {
		req := httptest.NewRequest("POST", "http://127.0.0.1/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w.Code, w.Body.String()
	}
	f.Fuzz(func(t *testing.T, body string) {
		code, got := serve(both, body)
		var m struct {
			Method string `json:"method"`
		}
		if json.Unmarshal([]byte(body), &m) == nil && m.Method == "initialize" && len(body) <= 4096 {
			return // the legacy side's answer
		}
		wantCode, want := serve(modern, body)
		if code != wantCode || got != want {
			t.Fatalf("body %q: both eras %d %q, streamhttp alone %d %q", body, code, got, wantCode, want)
		}
	})
}
