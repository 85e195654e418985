package legacy_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/mcp-elicit/elicit/legacy"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpserver"
	"github.com/mcp-elicit/elicit/streamhttp"
)

// Both eras on one endpoint: register the handlers once, put the legacy
// Handler in front of the streamhttp Handler, and a 2025-11-25 client's
// initialize opens a session while 2026-07-28 requests go on as before.
func ExampleNewHandler() {
	srv := mcpserver.New(mcp.Implementation{Name: "example", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "hello", Description: "Says hello."}, func(context.Context, *mcpserver.Request) (mcpserver.Reply, error) {
		return mcpserver.Text("hello"), nil
	})
	h := legacy.NewHandler(srv, streamhttp.NewHandler(srv, nil), nil)
	ts := httptest.NewServer(h)
	defer ts.Close()

	req, _ := http.NewRequest("POST", ts.URL, strings.NewReader(
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"old","version":"1"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	fmt.Println(resp.StatusCode, resp.Header.Get("Mcp-Session-Id") != "")
	// Output: 200 true
}

// Close ends the 2025 sessions when the server shuts down: register it
// with http.Server.RegisterOnShutdown, so an open GET stream or a prompt
// the client never answers does not hold Shutdown until its timeout.
func ExampleHandler_Close() {
	srv := mcpserver.New(mcp.Implementation{Name: "example", Version: "1"}, nil)
	h := legacy.NewHandler(srv, streamhttp.NewHandler(srv, nil), &legacy.Options{MaxSessionsPerPrincipal: 4})
	hs := &http.Server{Handler: h}
	hs.RegisterOnShutdown(func() { _ = h.Close() })

	_ = h.Close() // what Shutdown does first; afterwards initialize is refused
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("POST", "http://127.0.0.1/mcp", strings.NewReader(
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"old","version":"1"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	h.ServeHTTP(rec, req)
	fmt.Print(rec.Code, " ", rec.Body.String())
	// Output: 503 {"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"Server shutting down: no new sessions"}}
}
