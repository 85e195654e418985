package streamhttp_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/mcp-elicit/elicit/auth"
	"github.com/mcp-elicit/elicit/internal/transport/endpoint"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpserver"
	"github.com/mcp-elicit/elicit/streamhttp"
)

// Another handler on the same endpoint (package legacy's 2025-11-25
// bridge) applies the endpoint's Host/Origin check and authentication
// through endpoint.Of before it serves a request itself.
func TestEndpointAdmit(t *testing.T) {
	srv := mcpserver.New(mcp.Implementation{Name: "example", Version: "1"}, nil)
	h := streamhttp.NewHandler(srv, &streamhttp.Options{Auth: auth.DemoBearer{Realm: "example"}, MaxBodyBytes: 4096})
	ep := endpoint.Of(h)
	other := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, ok := ep.Admit(w, r)
		if !ok {
			return // 403 or 401 already written
		}
		fmt.Fprintf(w, "hello %s, bodies up to %d bytes", p.Subject, ep.MaxBodyBytes())
	})
	tests := []struct {
		host, token, origin string
		status              int
		body                string
	}{
		{"127.0.0.1", "alice", "", 200, "hello alice, bodies up to 4096 bytes"},
		{"127.0.0.1", "", "", 401, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Unauthorized: send Authorization: Bearer \u003cyour user name\u003e"}}` + "\n"},
		{"evil.example", "alice", "", 403, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Forbidden: Host or Origin not allowed"}}` + "\n"},
		// Host and Origin come before authentication.
		{"127.0.0.1", "", "http://evil.example", 403, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Forbidden: Host or Origin not allowed"}}` + "\n"},
	}
	for _, tc := range tests {
		req := httptest.NewRequest("GET", "http://"+tc.host+"/mcp", nil)
		if tc.token != "" {
			req.Header.Set("Authorization", "Bearer "+tc.token)
		}
		if tc.origin != "" {
			req.Header.Set("Origin", tc.origin)
		}
		w := httptest.NewRecorder()
		other.ServeHTTP(w, req)
		if w.Code != tc.status || w.Body.String() != tc.body {
			t.Errorf("%+v: %d %q", tc, w.Code, w.Body.String())
		}
	}
}
