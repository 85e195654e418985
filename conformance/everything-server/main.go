// Command everything-server is the "everything" server of the official
// conformance suite: every fixture tool, prompt, resource and MRTR flow the
// suite exercises, served at /mcp statelessly to 2026-07-28 clients and,
// through the legacy bridge, over sessions to 2025-11-25 clients.
//
//	go run ./conformance/everything-server --addr 127.0.0.1:3001
//	scripts/conformance server --url http://127.0.0.1:3001/mcp --requirements 2026-07-28
//	scripts/conformance server --url http://127.0.0.1:3001/mcp --requirements 2025-11-25
//
// With --stdio it serves the same fixtures on its standard input and
// output instead (package stdio, both eras, chosen by the first request),
// for clients that launch it; the log goes to stderr.
package main

import (
	"context"
	"flag"
	"fmt"
	"github.com/mcp-elicit/elicit/internal/serve"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/mcp-elicit/elicit/legacy"
	"github.com/mcp-elicit/elicit/stdio"
	"github.com/mcp-elicit/elicit/streamhttp"
)

const endpoint = "/mcp"

func main() {
	addr := flag.String("addr", "127.0.0.1:3001", "listen address host:port (keep it on loopback: only loopback Host headers are accepted)")
	onStdio := flag.Bool("stdio", false, "serve on standard input and output instead of HTTP")
	flag.Parse()
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	serveFn := run
	if *onStdio {
		serveFn = runStdio
	}
	if err := serveFn(*addr, logger); err != nil {
		logger.Error("everything-server failed", "err", err)
		os.Exit(1)
	}
}

func run(addr string, logger *slog.Logger) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	mux := http.NewServeMux()
	ms := newServer(logger)
	both := legacy.NewHandler(ms, streamhttp.NewHandler(ms, &streamhttp.Options{Logger: logger}), &legacy.Options{Logger: logger})
	mux.Handle(endpoint, both)
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		// No WriteTimeout: tools/call may answer with an SSE stream
		// (progress notifications) whose length the server does not know
		// in advance; handlers stop on request-context cancellation.
		IdleTimeout:    2 * time.Minute,
		MaxHeaderBytes: 64 << 10,
		ErrorLog:       slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}

	// 2025 sessions (their GET streams) end first, or they hold the shutdown.
	srv.RegisterOnShutdown(func() { _ = both.Close() })

	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	url := "http://" + ln.Addr().String() + endpoint
	fmt.Println(url)
	logger.Info("listening", "url", url)

	return serve.Run(ctx, srv, ln, logger)
}

// runStdio serves the fixtures on stdin/stdout until the client closes
// stdin or a signal comes.
func runStdio(_ string, logger *slog.Logger) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := stdio.ServeProcess(ctx, newServer(logger), &stdio.Options{Logger: logger, Legacy: &legacy.Options{Logger: logger}})
	if ctx.Err() != nil {
		return nil // a signal: a clean stop
	}
	return err
}
