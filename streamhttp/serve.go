package streamhttp

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/mcp-elicit/elicit/internal/serve"
	"github.com/mcp-elicit/elicit/mcpserver"
)

// The http.Server of ListenAndServe: slow clients cannot hold connections
// open, and there is no write timeout, since an SSE answer stays open
// while a handler works (connect.Step holds a retry for up to
// connect.DefaultWait).
const (
	endpointPath      = "/mcp"
	readHeaderTimeout = 10 * time.Second
	readTimeout       = 30 * time.Second
	idleTimeout       = 2 * time.Minute
)

// ListenAndServe serves s over Streamable HTTP (NewHandler with opts) at
// http://addr/mcp, for a program that serves nothing else: it listens on
// the TCP address addr ("127.0.0.1:8080"; port 0 picks a free port), logs
// the endpoint URL on opts.Logger (slog.Default() when nil) as
// "MCP endpoint" with attribute url, and serves until ctx ends or the
// server fails. Other paths get 404. A client gets 10 s to send its
// request headers and 30 s for the whole request; answers have no time
// limit, since an SSE answer stays open while a handler works. When ctx ends (signal.NotifyContext
// on SIGINT, say) it stops accepting, lets the requests in flight finish
// for at most 10 s, and returns nil if they did. It returns the listen
// error (the address is taken, say) or the server's error otherwise.
//
// It panics as NewHandler does when s needs a user (a connect.Step tool)
// and opts sets no Auth. A server with pages of its own (connect's), TLS,
// or timeouts of its choosing mounts NewHandler on its own http.Server.
func ListenAndServe(ctx context.Context, addr string, s *mcpserver.Server, opts *Options) error {
	h := NewHandler(s, opts)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle(endpointPath, h)
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		IdleTimeout:       idleTimeout,
		ErrorLog:          slog.NewLogLogger(h.log.Handler(), slog.LevelWarn),
	}
	h.log.Info("MCP endpoint", "url", "http://"+ln.Addr().String()+endpointPath)
	return serve.Run(ctx, srv, ln, h.log)
}
