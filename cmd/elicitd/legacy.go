package main

import (
	"log/slog"
	"net/http"

	"github.com/mcp-elicit/elicit/legacy"
	"github.com/mcp-elicit/elicit/mcpserver"
	"github.com/mcp-elicit/elicit/streamhttp"
)

// bothEras serves /mcp to 2026-07-28 clients through modern and to
// 2025-11-25 clients (initialize, sessions) through the legacy bridge,
// both running srv's handlers with the same auth, Host/Origin checks and
// body limit.
func bothEras(srv *mcpserver.Server, modern *streamhttp.Handler, logger *slog.Logger) http.Handler {
	return legacy.NewHandler(srv, modern, &legacy.Options{Logger: logger})
}
