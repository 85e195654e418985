package main

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The real flows' server cost in process, without the network: what
// elicitd spends on a request of billing_status (a read-only tool, one
// store read) and on export_report's accept leg (the ledger completion),
// to compare with bench/micro's ServeHTTPCall (the core's tools/call).
// scripts/bench measures the same flows over loopback.

func benchApp(b *testing.B) http.Handler {
	b.Helper()
	cfg := &config{addr: "127.0.0.1:3000", dataDir: b.TempDir(), publicURL: "http://127.0.0.1:3000"}
	app, err := newApp(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { app.Close() })
	return app
}

func benchRequest(tool, body string) *http.Request {
	req := httptest.NewRequest("POST", "http://127.0.0.1:3000/mcp", strings.NewReader(body))
	for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		"MCP-Protocol-Version": "2026-07-28", "Authorization": "Bearer alice", "Mcp-Method": "tools/call", "Mcp-Name": tool} {
		req.Header.Set(k, v)
	}
	return req
}

func BenchmarkReadOnlyTool(b *testing.B) {
	app := benchApp(b)
	body := callBody(2, "billing_status", "", metaURL)
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		app.ServeHTTP(w, benchRequest("billing_status", body))
		if w.Code != 200 || !strings.Contains(w.Body.String(), "not connected") {
			b.Fatalf("HTTP %d: %s", w.Code, w.Body)
		}
	}
}
