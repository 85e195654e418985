package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/mcp-elicit/elicit/jsonrpc"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpclient"
	"github.com/mcp-elicit/elicit/mcpserver"
)

// failing serves fail (a JSON-RPC error with data), toolerr (a tool
// error result) and link (a URL-mode elicitation, then a text).
func failing(s *mcpserver.Server) {
	s.AddTool(&mcp.Tool{Name: "fail"}, func(context.Context, *mcpserver.Request) (mcpserver.Reply, error) {
		return nil, &jsonrpc.Error{Code: -32050, Message: "quota exceeded", Data: map[string]any{"limit": 3}}
	})
	s.AddTool(&mcp.Tool{Name: "toolerr"}, func(context.Context, *mcpserver.Request) (mcpserver.Reply, error) {
		return mcpserver.ToolError("the tool failed"), nil
	})
	s.AddTool(&mcp.Tool{Name: "link"}, func(_ context.Context, req *mcpserver.Request) (mcpserver.Reply, error) {
		if req.Round > 0 {
			return mcpserver.Text("linked"), nil
		}
		return mcpserver.Ask().ElicitURL("link", "Connect your account", "https://accounts.example.com/connect?x=1"), nil
	})
}

// An upstream's JSON-RPC error reaches the client as the same error
// (code, message, data), never as a result; a tool error stays a tool
// error result; an upstream that cannot be reached is a retryable error.
func TestUpstreamErrorStaysError(t *testing.T) {
	up := serveElicit(t, failing)
	revisions(t, func(t *testing.T, rev string) {
		_, gw := startGateway(t, Options{Upstreams: []Upstream{{Name: "a", URL: up, Credentials: demoTokens("alice"), Revision: rev}}})
		c := formClient(gw, "alice", nil)
		_, err := c.CallTool(context.Background(), "fail", nil)
		var rpc *mcpclient.RPCError
		if !errors.As(err, &rpc) || rpc.Code != -32050 || rpc.Message != "quota exceeded" || string(rpc.Data) != `{"limit":3}` {
			t.Errorf("fail: %v (%+v)", err, rpc)
		}
		res, err := c.CallTool(context.Background(), "toolerr", nil)
		if err != nil || !res.IsError || res.Content[0].Text != "the tool failed" {
			t.Errorf("toolerr: %+v, %v", res, err)
		}
	})
	t.Run("unreachable", func(t *testing.T) {
		down := serveElicit(t, failing)
		g, gw := startGateway(t, Options{Upstreams: []Upstream{{Name: "a", URL: down, Credentials: demoTokens("alice"), Revision: Revision2026}}})
		_ = g
		// Point the upstream at a closed port after the catalog was read.
		dead := httptest.NewServer(http.NotFoundHandler())
		deadURL := dead.URL + "/mcp"
		dead.Close()
		g.byName["a"].modern = mcpclient.New(deadURL, &mcpclient.Options{Authorizer: upstreamAuth{g.byName["a"]}, MaxRounds: 1})
		_, err := formClient(gw, "alice", nil).CallTool(context.Background(), "toolerr", nil)
		var rpc *mcpclient.RPCError
		if !errors.As(err, &rpc) || rpc.Code != jsonrpc.CodeInternalError || rpc.HTTPStatus != http.StatusServiceUnavailable {
			t.Errorf("unreachable upstream: %v (%+v)", err, rpc)
		}
	})
}

// claimAllCapabilities is a rogue upstream's front: it tells the server
// behind it that the client supports every elicitation mode, whatever
// the client declared, so the server asks for URL mode regardless.
func claimAllCapabilities(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var msg map[string]any
		if json.Unmarshal(body, &msg) == nil {
			if p, ok := msg["params"].(map[string]any); ok {
				all := map[string]any{"elicitation": map[string]any{"form": map[string]any{}, "url": map[string]any{}}}
				if msg["method"] == "initialize" {
					p["capabilities"] = all
				} else if m, ok := p["_meta"].(map[string]any); ok {
					m["io.modelcontextprotocol/clientCapabilities"] = all
				}
				body, _ = json.Marshal(msg)
			}
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		r.Header.Set("Content-Length", strconv.Itoa(len(body)))
		next.ServeHTTP(w, r)
	})
}

// A form-only client never receives a URL request: an honest upstream
// sees the client's own capabilities and answers -32021, which reaches
// the client unchanged; a rogue upstream that asks anyway is refused by
// the gateway with -32021. A client that declared URL mode gets the
// upstream's URL unchanged.
func TestFormOnlyClientNeverGetsURL(t *testing.T) {
	honest := serveElicit(t, failing)
	rogueSrv := httptest.NewServer(claimAllCapabilities(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.URL.Path = "/mcp"
		proxyTo(honest)(w, r)
	})))
	t.Cleanup(rogueSrv.Close)
	for _, up := range []struct{ name, url string }{{"honest", honest}, {"rogue", rogueSrv.URL + "/mcp"}} {
		t.Run(up.name, func(t *testing.T) {
			revisions(t, func(t *testing.T, rev string) {
				_, gw := startGateway(t, Options{Upstreams: []Upstream{{Name: "a", URL: up.url, Credentials: demoTokens("alice"), Revision: rev}}})
				formOnly := formClient(gw, "alice", nil)
				_, err := formOnly.CallTool(context.Background(), "link", nil)
				var mc *mcpclient.MissingCapabilityError
				if !errors.As(err, &mc) || mc.RequiredCapabilities.Elicitation == nil || mc.RequiredCapabilities.Elicitation.URL == nil {
					t.Errorf("form-only client: %v, want -32021 naming elicitation.url", err)
				}
				var got string
				both := mcpclient.New(gw, &mcpclient.Options{Token: "alice", Handlers: &mcpclient.Handlers{
					ElicitForm: noForm,
					ElicitURL: func(_ context.Context, _ mcpclient.Asker, _ string, p *mcp.ElicitRequestParams) (*mcp.ElicitResult, error) {
						got = p.URL
						return &mcp.ElicitResult{Action: mcp.ActionAccept}, nil
					}}})
				res, err := both.CallTool(context.Background(), "link", nil)
				if err != nil || res.Content[0].Text != "linked" || got != "https://accounts.example.com/connect?x=1" {
					t.Errorf("URL-capable client: %+v, %v, URL %q", res, err, got)
				}
			})
		})
	}
}

// proxyTo forwards a request to url with the standard library's reverse
// proxy semantics kept minimal: method, headers, body, and the answer
// streamed back.
func proxyTo(url string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		out, err := http.NewRequestWithContext(r.Context(), r.Method, url, r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		out.Header = r.Header.Clone()
		out.ContentLength = r.ContentLength
		resp, err := http.DefaultTransport.RoundTrip(out)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		buf := make([]byte, 32<<10)
		for {
			n, err := resp.Body.Read(buf)
			if n > 0 {
				_, _ = w.Write(buf[:n])
				if f, ok := w.(http.Flusher); ok {
					f.Flush()
				}
			}
			if err != nil {
				return
			}
		}
	}
}

// TestUpstreamRefusesGateway: an upstream that answers 401 or 403 to the
// gateway's own requests fails Start with an error naming the refusal
// (no credentials configured, or the gateway's own refused), not
// "unreachable" nor that nothing answered, and never the token.
func TestUpstreamRefusesGateway(t *testing.T) {
	const secret = "s3cret-gateway-token"
	tests := []struct {
		name   string
		status int
		creds  Credentials
		want   string
	}{
		{"none 401", http.StatusUnauthorized, nil, "refused the gateway (HTTP 401): no credentials configured"},
		{"none 403", http.StatusForbidden, nil, "refused the gateway (HTTP 403): no credentials configured"},
		{"users only", http.StatusUnauthorized, Tokens{"alice": "a"}, "no credentials configured for the gateway's own requests"},
		{"own refused", http.StatusUnauthorized, Tokens{CatalogPrincipal: secret}, "refused the gateway's own credential (principal @gateway) (HTTP 401)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
				w.WriteHeader(tt.status)
			}))
			defer ts.Close()
			g, err := New(Options{Logger: quietLog(), Upstreams: []Upstream{{Name: "main", URL: ts.URL + "/mcp", Credentials: tt.creds}}})
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			err = g.Start(t.Context())
			if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "unreachable") ||
				strings.Contains(err.Error(), "answered") || strings.Contains(err.Error(), secret) {
				t.Errorf("Start: %v, want an error with %q, without \"unreachable\", \"answered\" or the token", err, tt.want)
			}
		})
	}
}
