package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpclient"
	"github.com/mcp-elicit/elicit/mcpserver"
	"github.com/mcp-elicit/elicit/streamhttp"
)

// TestWireRulesBothSides runs each inputSchema through both sides: the
// server's registration (mcpserver) and the client's tools/list view
// (mcpclient). A schema the server accepts must never be dropped by the
// client, and one the server refuses is dropped by the client (HTTP-S-19,
// HTTP-C-12). For the accepted ones, a real call through streamhttp shows
// that the client's Mcp-Param-* headers are the ones the server expects.
func TestWireRulesBothSides(t *testing.T) {
	tests := []struct {
		name, schema string
		// args are sent on a call when the schema is accepted; nil means
		// no call.
		args   map[string]any
		accept bool
	}{
		{"no annotation", `{"type":"object","properties":{"a":{"type":"string"}}}`, map[string]any{"a": "x"}, true},
		{"string header, non-ASCII value", `{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}`,
			map[string]any{"region": "Zürich"}, true},
		{"string header, value like the marker", `{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}`,
			map[string]any{"region": "=?base64?SGk=?="}, true},
		{"string header, padded value", `{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}`,
			map[string]any{"region": " padded "}, true},
		{"integer and boolean headers", `{"type":"object","properties":{"n":{"type":"integer","x-mcp-header":"N-1"},"b":{"type":"boolean","x-mcp-header":"Flag_x"}}}`,
			map[string]any{"n": 42, "b": false}, true},
		{"header argument absent", `{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}`,
			map[string]any{}, true},
		{"header argument null", `{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}`,
			map[string]any{"region": nil}, true},
		{"nested through properties", `{"type":"object","properties":{"loc":{"type":"object","properties":{"zone":{"type":"string","x-mcp-header":"Zone"}}}}}`,
			map[string]any{"loc": map[string]any{"zone": "b"}}, true},
		{"annotation-like data is data", `{"type":"object","properties":{"a":{"type":"object","default":{"x-mcp-header":"Nope"}}}}`, map[string]any{}, true},
		{"under items", `{"type":"object","properties":{"a":{"type":"array","items":{"type":"string","x-mcp-header":"A"}}}}`, nil, false},
		{"under anyOf", `{"type":"object","properties":{"a":{"anyOf":[{"type":"string","x-mcp-header":"A"}]}}}`, nil, false},
		{"under oneOf", `{"type":"object","properties":{"a":{"oneOf":[{"type":"string","x-mcp-header":"A"}]}}}`, nil, false},
		{"properties under items", `{"type":"object","properties":{"a":{"type":"array","items":{"type":"object","properties":{"b":{"type":"string","x-mcp-header":"B"}}}}}}`, nil, false},
		{"under $defs", `{"type":"object","$defs":{"d":{"type":"string","x-mcp-header":"D"}},"properties":{"a":{"$ref":"#/$defs/d"}}}`, nil, false},
		{"on the root", `{"type":"object","x-mcp-header":"Root"}`, nil, false},
		{"number", `{"type":"object","properties":{"v":{"type":"number","x-mcp-header":"Score"}}}`, nil, false},
		{"not a token", `{"type":"object","properties":{"v":{"type":"string","x-mcp-header":"My Region"}}}`, nil, false},
		{"repeated in another case", `{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"MyField"},"b":{"type":"string","x-mcp-header":"myfield"}}}`, nil, false},
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := mcpserver.New(mcp.Implementation{Name: "wire", Version: "1"}, &mcpserver.Options{Logger: quiet})
			var got json.RawMessage
			serverAccepts := func() (ok bool) {
				defer func() { ok = recover() == nil }()
				srv.AddTool(&mcp.Tool{Name: "t", InputSchema: json.RawMessage(tt.schema)},
					func(ctx context.Context, req *mcpserver.Request) (mcpserver.Reply, error) {
						got = req.Arguments
						return mcpserver.Text("ok"), nil
					})
				return true
			}()
			clientKeeps := clientKeeps(t, tt.schema)
			if serverAccepts != tt.accept || clientKeeps != tt.accept {
				t.Fatalf("server accepts: %v, client keeps: %v; want both %v", serverAccepts, clientKeeps, tt.accept)
			}
			if !tt.accept || tt.args == nil {
				return
			}
			hs := httptest.NewServer(streamhttp.NewHandler(srv, &streamhttp.Options{Logger: quiet}))
			defer hs.Close()
			c := mcpclient.New(hs.URL, &mcpclient.Options{Logger: quiet})
			if _, err := c.CallTool(context.Background(), "t", tt.args); err != nil {
				t.Fatalf("call: %v", err)
			}
			want, _ := json.Marshal(tt.args)
			if string(got) != string(want) {
				t.Fatalf("server got %s, want %s", got, want)
			}
		})
	}
}

// clientKeeps serves schema in a one-tool tools/list and reports whether
// mcpclient keeps the tool.
func clientKeeps(t *testing.T, schema string) bool {
	t.Helper()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ID json.RawMessage `json:"id"`
		}
		body, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(body, &req)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"resultType":"complete","ttlMs":0,"cacheScope":"private","tools":[{"name":"t","inputSchema":%s}]}}`, req.ID, schema)
	}))
	defer hs.Close()
	c := mcpclient.New(hs.URL, &mcpclient.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	tools, err := c.ListTools(context.Background())
	if err != nil {
		t.Fatalf("ListTools: %v", err)
	}
	return len(tools) == 1
}
