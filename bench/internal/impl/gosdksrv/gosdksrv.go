// Package gosdksrv is the benchmark server built on the official go-sdk
// v1.8.0 in stateless mode (StreamableHTTPOptions{Stateless: true,
// JSONResponse: true}), with the same tools as the other servers.
//
// go-sdk v1.8.0 serves MCP 2026-07-28 only in stateless mode, and there it
// supports multi round-trip requests (SEP-2322): a tool handler returns a
// CallToolResult with InputRequests and RequestState, and the retry
// arrives with Params.InputResponses and Params.RequestState. Protecting
// the state and validating the answer are left to the application ("Unauthenticated
// servers must encrypt, sign and verify this value"), so this tool does
// what elicit's library does for its handlers: it seals the state with
// reqstate (AES-256-GCM, bound to method, tool and argument digest) and
// validates the form answer with elicit's schema checks. Arguments are
// decoded with encoding/json in a raw ToolHandler (Server.AddTool), as
// elicit's handlers do; the typed mcp.AddTool would add input-schema
// validation that the other two servers do not do.
package gosdksrv

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-elicit/elicit/bench/internal/wire"
	"github.com/mcp-elicit/elicit/elicit"
	"github.com/mcp-elicit/elicit/reqstate"
)

type app struct {
	sealer *reqstate.Sealer
	schema *elicit.Schema
}

// Handler returns the go-sdk stateless Streamable HTTP handler.
func Handler() http.Handler {
	sealer, err := reqstate.New([]reqstate.Key{reqstate.NewKey("ephemeral")}, nil)
	if err != nil {
		panic(err)
	}
	schema, err := elicit.ParseSchema(json.RawMessage(wire.FormRequestedSchema))
	if err != nil {
		panic(err)
	}
	a := &app{sealer: sealer, schema: schema}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	s := mcp.NewServer(&mcp.Implementation{Name: wire.ServerName, Version: wire.ServerVersion}, &mcp.ServerOptions{Logger: logger})
	s.AddTool(&mcp.Tool{Name: wire.EchoTool, InputSchema: json.RawMessage(wire.EchoSchema)}, a.echo)
	s.AddTool(&mcp.Tool{Name: wire.FormTool, InputSchema: json.RawMessage(wire.FormSchema)}, a.confirmSend)
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true, Logger: logger})
}

func invalidParams(msg string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: msg}
}

func text(s string) []mcp.Content { return []mcp.Content{&mcp.TextContent{Text: s}} }

func (a *app) echo(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var args struct {
		Text string `json:"text"`
	}
	if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
		return nil, invalidParams("Invalid params: arguments")
	}
	return &mcp.CallToolResult{Content: text(args.Text)}, nil
}

func (a *app) confirmSend(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var args struct {
		Draft string `json:"draft"`
	}
	if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
		return nil, invalidParams("Invalid params: arguments")
	}
	digest, err := reqstate.DigestArguments(req.Params.Arguments)
	if err != nil {
		return nil, invalidParams("Invalid params: arguments")
	}
	binding := reqstate.Binding{Method: "tools/call", Name: wire.FormTool, ArgsDigest: digest}
	if req.Params.RequestState == "" {
		c := &reqstate.Claims{Binding: binding, Round: 1, Payload: []byte(wire.FormState)}
		_, _ = rand.Read(c.OperationID[:])
		tok, err := a.sealer.Seal(c)
		if err != nil {
			return nil, err
		}
		return &mcp.CallToolResult{
			InputRequests: mcp.InputRequestMap{wire.FormKey: &mcp.ElicitParams{Mode: "form", Message: wire.FormMessage,
				RequestedSchema: json.RawMessage(wire.FormRequestedSchema)}},
			RequestState: tok,
		}, nil
	}
	claims, err := a.sealer.Open(req.Params.RequestState, binding)
	if err != nil {
		return nil, invalidParams(reqstate.ErrInvalid.Error())
	}
	ans, ok := req.Params.InputResponses[wire.FormKey].(*mcp.ElicitResult)
	if !ok || ans.Action != "accept" || a.schema.Validate(ans.Content) != nil || ans.Content["confirm"] != true {
		return &mcp.CallToolResult{Content: text("not sent"), IsError: true}, nil
	}
	return &mcp.CallToolResult{Content: text("sent " + string(claims.Payload))}, nil
}
