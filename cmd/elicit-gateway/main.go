// Command elicit-gateway serves one MCP endpoint, /mcp, in front of named
// upstream MCP servers (package gateway): 2026-07-28 clients statelessly
// and 2025-11-25 clients with sessions on the same URL, with every
// upstream's tools, prompts and resources, and every upstream's
// questions to the user (input_required, or a 2025 server's
// elicitation/create) relayed to the user who made the call.
//
//	elicit-gateway --upstream tickets=https://tickets.internal/mcp \
//	               --upstream-tokens tickets=/etc/elicit-gateway/tickets.tokens
//
// Settings come from flags, then ELICIT_GATEWAY_<NAME> environment
// variables (NAME in upper case, - as _; repeated settings separated by
// commas), then a --config JSON file whose keys are the flag names
// (strings, or arrays of strings for repeated settings), then defaults.
// Secrets (the master key, the peer secret) come from the environment
// only. docs/gateway.md documents every setting.
//
// The gateway's requestState keys come from the same store and master
// key as elicitd's (--data for SQLite, or --store for a PostgreSQL that
// several gateway instances share, with ELICIT_GATEWAY_MASTER_KEY the
// same on each); `elicitd keys` rotates them.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr, nil); err != nil {
		if errors.Is(err, errHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "elicit-gateway:", err)
		os.Exit(2)
	}
}

// run starts the gateway and serves until ctx ends. ready, when set,
// receives the bound address once the endpoint accepts requests.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer, ready func(addr string)) error {
	cfg, err := loadConfig(args, getenv, stdout, stderr)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: cfg.logLevel}))
	gw, closeStore, err := cfg.build(ctx, log, stdout)
	if err != nil {
		return err
	}
	defer closeStore()
	startCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	err = gw.g.Start(startCtx)
	cancel()
	if err != nil {
		return err
	}
	defer gw.g.Close()
	front := gw.g.Handler(gw.handlerOpts)
	defer front.Close()
	mux := http.NewServeMux()
	mux.Handle("/mcp", front)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	log.Info("elicit-gateway: serving", "addr", ln.Addr().String(), "upstreams", len(cfg.upstreams))
	if ready != nil {
		ready(ln.Addr().String())
	}
	go gw.refreshKeys(ctx, log)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), cfg.shutdownTimeout)
	defer cancel()
	return srv.Shutdown(sctx)
}
