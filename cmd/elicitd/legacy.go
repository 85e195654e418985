package main

import (
	"log/slog"

	"github.com/mcp-elicit/elicit/legacy"
	"github.com/mcp-elicit/elicit/mcpserver"
	"github.com/mcp-elicit/elicit/streamhttp"
)

// bothEras serves /mcp to 2026-07-28 clients through modern and to
// 2025-11-25 clients (initialize, sessions) through the legacy bridge,
// both running srv's handlers with the same auth, Host/Origin checks and
// body limit. Close it when the server shuts down.
func bothEras(srv *mcpserver.Server, modern *streamhttp.Handler, logger *slog.Logger) *legacy.Handler {
	return legacy.NewHandler(srv, modern, &legacy.Options{Logger: logger})
}
