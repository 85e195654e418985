package gateway

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/mcp-elicit/elicit/auth"
	"github.com/mcp-elicit/elicit/legacy"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpclient"
	"github.com/mcp-elicit/elicit/mcpserver"
	"github.com/mcp-elicit/elicit/streamhttp"
)

// quietLog drops everything below errors.
func quietLog() *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelError}))
}

// serveElicit serves an mcpserver.Server (both eras, demo auth) on
// loopback and returns its /mcp URL.
func serveElicit(t *testing.T, register func(*mcpserver.Server)) string {
	t.Helper()
	srv := mcpserver.New(mcp.Implementation{Name: "upstream", Version: "1"}, &mcpserver.Options{Logger: quietLog()})
	register(srv)
	modern := streamhttp.NewHandler(srv, &streamhttp.Options{Auth: auth.DemoBearer{}, Logger: quietLog()})
	h := legacy.NewHandler(srv, modern, &legacy.Options{Logger: quietLog()})
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	ts := httptest.NewServer(mux)
	t.Cleanup(func() { _ = h.Close(); ts.Close() })
	return ts.URL + "/mcp"
}

// startGateway starts a gateway over ups with demo auth in front and
// returns it and its /mcp URL.
func startGateway(t testing.TB, opts Options) (*Gateway, string) {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = quietLog()
	}
	g, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	h := g.Handler(&HandlerOptions{Auth: auth.DemoBearer{}, Logger: quietLog(), Legacy: &legacy.Options{Logger: quietLog()}})
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	ts := httptest.NewServer(mux)
	t.Cleanup(func() { _ = h.Close(); ts.Close(); _ = g.Close() })
	return g, ts.URL + "/mcp"
}

// demoTokens gives each listed user the demo token (the user's name) at
// an upstream with demo auth, and the gateway its own.
func demoTokens(users ...string) Tokens {
	t := Tokens{CatalogPrincipal: "gateway"}
	for _, u := range users {
		t[u] = u
	}
	return t
}

// formClient is an mcpclient for user that fills forms with answer.
func formClient(url, user string, answer func(p *mcp.ElicitRequestParams) *mcp.ElicitResult) *mcpclient.Client {
	return mcpclient.New(url, &mcpclient.Options{Token: user, Handlers: &mcpclient.Handlers{
		ElicitForm: func(_ context.Context, _ mcpclient.Asker, _ string, p *mcp.ElicitRequestParams) (*mcp.ElicitResult, error) {
			return answer(p), nil
		},
	}})
}

func TestMain(m *testing.M) {
	if os.Getenv(stdioChildEnv) != "" {
		os.Exit(stdioChild())
	}
	code := m.Run()
	if elicitdBinary.dir != "" {
		_ = os.RemoveAll(elicitdBinary.dir)
	}
	os.Exit(code)
}
