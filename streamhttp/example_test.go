package streamhttp_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/mcp-elicit/elicit/auth"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpserver"
	"github.com/mcp-elicit/elicit/streamhttp"
)

// Admit lets another handler on the same endpoint (the legacy package's
// 2025-11-25 bridge) apply the endpoint's Host/Origin check and
// authentication before it serves a request itself.
func ExampleHandler_Admit() {
	srv := mcpserver.New(mcp.Implementation{Name: "example", Version: "1"}, nil)
	h := streamhttp.NewHandler(srv, &streamhttp.Options{Auth: auth.DemoBearer{Realm: "example"}})
	other := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, ok := h.Admit(w, r)
		if !ok {
			return // 403 or 401 already written
		}
		fmt.Fprintf(w, "hello %s, bodies up to %d bytes", p.Subject, h.MaxBodyBytes())
	})
	for _, tc := range []struct{ host, token string }{{"127.0.0.1", "alice"}, {"127.0.0.1", ""}, {"evil.example", "alice"}} {
		req := httptest.NewRequest("GET", "http://"+tc.host+"/mcp", nil)
		if tc.token != "" {
			req.Header.Set("Authorization", "Bearer "+tc.token)
		}
		w := httptest.NewRecorder()
		other.ServeHTTP(w, req)
		if w.Code == http.StatusOK {
			fmt.Println(w.Code, w.Body.String())
		} else {
			fmt.Println(w.Code)
		}
	}
	// Output:
	// 200 hello alice, bodies up to 1048576 bytes
	// 401
	// 403
}
