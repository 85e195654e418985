package main

// elicitd --stdio: the reference server for local hosts, which launch it
// and speak MCP on its standard input and output (package stdio), both
// eras. The URL-mode pages still need a browser, so they are served over
// HTTP on --addr, loopback by default, beside the stdio server; stdout
// carries MCP messages only (the log, and with --audit-log - the audit
// records, go to stderr).

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
	"os/user"
	"path/filepath"
	"syscall"

	"github.com/mcp-elicit/elicit/auth"
	"github.com/mcp-elicit/elicit/internal/serve"
	"github.com/mcp-elicit/elicit/legacy"
	"github.com/mcp-elicit/elicit/stdio"
)

func init() {
	addSettings(
		setting{name: "stdio", def: "false", isBool: true, usage: "serve MCP on standard input and output, for a local host that launches elicitd; the pages stay on --addr (then 127.0.0.1:0 unless given)",
			apply: func(c *config, v string) (err error) { c.stdio, err = parseBool(v); return err }},
		setting{name: "stdio-user", def: "", defDoc: "$ELICIT_UPSTREAM_USER (set by elicit-gateway), else the OS user's name", usage: "--stdio: the user every request is served for (state, URL flows and the vault are bound to it; the pages sign in as it); with --auth jwt, issuer#subject",
			apply: func(c *config, v string) error { c.stdioUser = v; return nil }},
	)
}

// checkStdio applies --stdio's defaults to what the operator did not give
// (a free loopback port for the pages, a data directory that does not
// depend on the directory the host starts elicitd in) and resolves the
// user. Without --stdio, --stdio-user is refused.
func (cfg *config) checkStdio() error {
	if !cfg.stdio {
		if cfg.stdioUser != "" {
			return errors.New("--stdio-user is only for --stdio")
		}
		return nil
	}
	if !cfg.given["addr"] {
		cfg.addr = "127.0.0.1:0"
	}
	if !cfg.given["data"] {
		dir, err := os.UserConfigDir()
		if err != nil {
			return fmt.Errorf("--stdio: no --data given and no user config directory to default to: %w", err)
		}
		cfg.dataDir = filepath.Join(dir, "elicitd")
	}
	if cfg.metricsAddr == "" {
		cfg.metricsAddr = "off" // no ops listener a local host would not use
	}
	if cfg.stdioUser == "" {
		// Started by elicit-gateway: its user's id as is ({user} in the
		// arguments is a path-safe encoding of it).
		cfg.stdioUser = os.Getenv("ELICIT_UPSTREAM_USER")
	}
	if cfg.stdioUser == "" {
		if cfg.auth.mode == "jwt" {
			return errors.New("--stdio with --auth jwt needs --stdio-user ISSUER#SUBJECT: the user the pages sign in as")
		}
		u, err := user.Current()
		if err != nil || !auth.ValidUserName(u.Username) {
			return errors.New("--stdio: the OS user name is not a valid user name (1-64 of A-Z a-z 0-9 . _ -); give --stdio-user")
		}
		cfg.stdioUser = u.Username
	}
	p, err := auth.ParseID(cfg.stdioUser)
	if err != nil {
		return fmt.Errorf("--stdio-user %q: want a user name (1-64 of A-Z a-z 0-9 . _ -) or issuer#subject", cfg.stdioUser)
	}
	if (cfg.auth.mode == "jwt") != (p.Issuer != "") {
		if p.Issuer == "" {
			return fmt.Errorf("--stdio-user %q: with --auth jwt the pages sign users in as issuer#subject; give that form", cfg.stdioUser)
		}
		return fmt.Errorf("--stdio-user %q: demo sign-in users are plain names; issuer#subject needs --auth jwt", cfg.stdioUser)
	}
	return nil
}

// stdioOutput returns where MCP messages go: the real standard output,
// taken away from everything else in the process (stdio.TakeStdout), when
// stdout is the process's; else stdout itself (tests).
func stdioOutput(stdout io.Writer) (io.WriteCloser, error) {
	if f, ok := stdout.(*os.File); ok && f == os.Stdout {
		return stdio.TakeStdout()
	}
	return nopWriteCloser{stdout}, nil
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// serveStdio serves MCP on stdin/out and the pages on ln until the client
// closes stdin or a signal comes (SIGINT or SIGTERM: no drain, a stdio
// server has one client), then shuts the pages down.
func (a *app) serveStdio(cfg *config, srv *http.Server, ln net.Listener, out io.Writer, logger *slog.Logger) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go a.sweeper.loop(ctx, cfg.sweepInterval)
	go a.keys.refreshLoop(ctx, a.sealer, cfg.keysRefresh, logger)
	pagesCtx, stopPages := context.WithCancel(context.Background())
	pagesDone := make(chan error, 1)
	go func() {
		pagesDone <- serve.RunFor(pagesCtx, srv, ln, logger.With("listener", "pages"), cfg.shutdownTimeout)
	}()
	logger.Info("elicitd serving MCP on stdio", "user", cfg.stdioUser, "pages", cfg.publicURL+"/ui/", "data", cfg.dataDir, "store", storeName(cfg), "version", version)
	err := stdio.Serve(ctx, a.mcp, os.Stdin, out, &stdio.Options{Principal: cfg.stdioUser, Logger: logger, Legacy: &legacy.Options{Logger: logger}})
	if errors.Is(err, context.Canceled) {
		err = nil // a signal: a clean stop
	}
	stopPages()
	return errors.Join(err, <-pagesDone, a.stopTasks(cfg.shutdownTimeout))
}
