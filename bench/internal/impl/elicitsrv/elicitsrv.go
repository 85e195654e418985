// Package elicitsrv is the benchmark server built on elicit's core:
// mcpserver with the benchmark tools behind streamhttp.Handler, with the
// library defaults (sealed requestState, capability gate, answer
// validation, header validation, loopback Host/Origin checks).
package elicitsrv

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"

	"github.com/mcp-elicit/elicit/bench/internal/wire"
	"github.com/mcp-elicit/elicit/elicit"
	"github.com/mcp-elicit/elicit/legacy"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpserver"
	"github.com/mcp-elicit/elicit/streamhttp"
)

// New returns the server with EchoTool and FormTool registered. Logs below
// warning level are dropped (the hot path logs nothing anyway).
func New() *mcpserver.Server {
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	s := mcpserver.New(mcp.Implementation{Name: wire.ServerName, Version: wire.ServerVersion}, &mcpserver.Options{Logger: logger})
	s.AddTool(&mcp.Tool{Name: wire.EchoTool, InputSchema: json.RawMessage(wire.EchoSchema)}, echo)
	s.AddTool(&mcp.Tool{Name: wire.FormTool, InputSchema: json.RawMessage(wire.FormSchema)}, confirmSend)
	return s
}

// Handler returns New behind a streamhttp.Handler with default options.
func Handler() http.Handler {
	return streamhttp.NewHandler(New(), &streamhttp.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
}

// BothEras returns New behind legacy.Handler in front of the same
// streamhttp.Handler: 2026 requests pass the era dispatcher first.
func BothEras() http.Handler {
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	s := New()
	return legacy.NewHandler(s, streamhttp.NewHandler(s, &streamhttp.Options{Logger: logger}), &legacy.Options{Logger: logger})
}

func echo(_ context.Context, req *mcpserver.Request) (mcpserver.Reply, error) {
	var args struct {
		Text string `json:"text"`
	}
	if err := req.BindArguments(&args); err != nil {
		return nil, err
	}
	return mcpserver.Text(args.Text), nil
}

func confirmSend(_ context.Context, req *mcpserver.Request) (mcpserver.Reply, error) {
	var args struct {
		Draft string `json:"draft"`
	}
	if err := req.BindArguments(&args); err != nil {
		return nil, err
	}
	if req.State == nil {
		return mcpserver.Ask().
			ElicitForm(wire.FormKey, wire.FormMessage, json.RawMessage(wire.FormRequestedSchema)).
			WithState([]byte(wire.FormState)), nil
	}
	ans := req.Elicitation(wire.FormKey)
	if ans.Outcome != elicit.Accepted || ans.Content["confirm"] != true {
		return mcpserver.ToolError("not sent: " + ans.Outcome.String()), nil
	}
	return mcpserver.Text("sent " + string(req.State)), nil
}
