package legacy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	sdkjsonrpc "github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-elicit/elicit/jsonrpc"
	"github.com/mcp-elicit/elicit/mcp"
)

// newSDKServer builds the go-sdk server of the 2025 side: the registered
// tools, prompts, resources, templates and completion, each running the
// mcpserver handler through the bridge.
func (b *bridge) newSDKServer() *sdk.Server {
	info := b.srv.Info()
	opts := &sdk.ServerOptions{
		Logger:                    quieter(b.log),
		SupportedProtocolVersions: Versions,
		// Our resources never change, so a subscription is accepted and
		// never notified (2025-11-25 server/resources.mdx §Subscriptions).
		SubscribeHandler:   func(context.Context, *sdk.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *sdk.UnsubscribeRequest) error { return nil },
	}
	if b.srv.Capabilities().Completions != nil {
		opts.CompletionHandler = b.complete
	}
	var disc mcp.DiscoverResult
	b.list(mcp.MethodDiscover, &disc)
	opts.Instructions = disc.Instructions
	s := sdk.NewServer(&sdk.Implementation{Name: info.Name, Title: info.Title, Version: info.Version}, opts)
	s.AddSendingMiddleware(captureResults)
	s.AddReceivingMiddleware(b.eraMiddleware)

	mirror(b, mcp.MethodToolsList, "tools", func(t *sdk.Tool) { s.AddTool(t, b.callTool) })
	mirror(b, mcp.MethodPromptsList, "prompts", func(p *sdk.Prompt) { s.AddPrompt(p, b.getPrompt) })
	mirror(b, mcp.MethodResourcesList, "resources", func(r *sdk.Resource) { s.AddResource(r, b.readResource) })
	mirror(b, mcp.MethodResourceTemplatesList, "resourceTemplates", func(t *sdk.ResourceTemplate) { s.AddResourceTemplate(t, b.readResource) })
	return s
}

// mirror adds to the go-sdk server each item of the list result of method
// (its member), decoded as the go-sdk type S; the JSON shapes of the two
// revisions agree on these items.
func mirror[S any](b *bridge, method, member string, add func(*S)) {
	var res map[string]json.RawMessage
	b.list(method, &res)
	var items []json.RawMessage
	if raw, ok := res[member]; ok {
		if err := json.Unmarshal(raw, &items); err != nil {
			b.log.Error("legacy: listing unreadable", "method", method, "err", err)
			return
		}
	}
	for _, raw := range items {
		item := new(S)
		if err := json.Unmarshal(raw, item); err != nil {
			b.log.Error("legacy: not served to 2025 clients", "method", method, "item", string(raw), "err", err)
			continue
		}
		add(item)
	}
}

// list reads one of the server's list results into v (nothing when the
// method is not served).
func (b *bridge) list(method string, v any) {
	if !b.core.Known(method) {
		return
	}
	resp := b.invoke(context.Background(), &call{method: method}, json.RawMessage(`{}`), nil, nil)
	if resp.Error != nil {
		b.log.Error("legacy: listing failed", "method", method, "err", resp.Error.Message)
		return
	}
	if err := remarshal(resp.Result, v); err != nil {
		b.log.Error("legacy: listing unreadable", "method", method, "err", err)
	}
}

func (b *bridge) callTool(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	c := &call{ss: req.Session, principal: principalOf(ctx, req.Extra), method: mcp.MethodToolsCall,
		target: map[string]any{"name": req.Params.Name}, progress: req.Params.GetProgressToken()}
	if a := req.Params.Arguments; len(a) > 0 {
		c.arguments = a
	}
	raw, err := b.serve(ctx, c)
	return decode[sdk.CallToolResult](b, c.method, raw, err)
}

func (b *bridge) getPrompt(ctx context.Context, req *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
	c := &call{ss: req.Session, principal: principalOf(ctx, req.Extra), method: mcp.MethodPromptsGet,
		target: map[string]any{"name": req.Params.Name}, progress: req.Params.GetProgressToken()}
	if req.Params.Arguments != nil {
		a, err := json.Marshal(req.Params.Arguments)
		if err != nil {
			return nil, b.wireError(c.method, err)
		}
		c.arguments = a
	}
	raw, err := b.serve(ctx, c)
	return decode[sdk.GetPromptResult](b, c.method, raw, err)
}

func (b *bridge) readResource(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	c := &call{ss: req.Session, principal: principalOf(ctx, req.Extra), method: mcp.MethodResourcesRead,
		target: map[string]any{"uri": req.Params.URI}, progress: req.Params.GetProgressToken()}
	raw, err := b.serve(ctx, c)
	var we *sdkjsonrpc.Error
	if errors.As(err, &we) && we.Code == jsonrpc.CodeInvalidParams && we.Message == "Resource not found" {
		return nil, sdk.ResourceNotFoundError(req.Params.URI) // -32002 in 2025-11-25
	}
	return decode[sdk.ReadResourceResult](b, c.method, raw, err)
}

func (b *bridge) complete(ctx context.Context, req *sdk.CompleteRequest) (*sdk.CompleteResult, error) {
	c := &call{ss: req.Session, principal: principalOf(ctx, req.Extra), method: mcp.MethodCompletionComplete,
		target: map[string]any{"ref": req.Params.Ref, "argument": req.Params.Argument}}
	resp := b.invoke(ctx, c, capabilitiesOf(req.Session), nil, nil)
	if resp.Error != nil {
		return nil, toSDKError(resp.Error)
	}
	raw, err := json.Marshal(resp.Result)
	return decode[sdk.CompleteResult](b, c.method, raw, err)
}

// decode turns the bridge's answer into the go-sdk result R, or err into
// the JSON-RPC error the client gets.
func decode[R any](b *bridge, method string, raw json.RawMessage, err error) (*R, error) {
	if err != nil {
		return nil, b.wireError(method, err)
	}
	res := new(R)
	if err := unmarshalResult(raw, res); err != nil {
		return nil, b.wireError(method, err)
	}
	return res, nil
}

// wireError makes err the JSON-RPC error a 2025 client gets: a handler's
// own JSON-RPC error as it is; anything else (a bridge failure, a
// cancelled request) as -32603 with the cause logged, never sent, as on
// the 2026 path. (go-sdk would send a plain error's text with code 0.)
func (b *bridge) wireError(method string, err error) error {
	var we *sdkjsonrpc.Error
	if errors.As(err, &we) {
		return we
	}
	if errors.Is(err, context.Canceled) {
		return &sdkjsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "Request cancelled"}
	}
	b.log.Error("legacy: request failed", "method", method, "err", err)
	return &sdkjsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "Internal error"}
}

// capabilitiesOf returns the capabilities the client declared in
// initialize, as the JSON our handlers read (the shapes are the same in
// both revisions: {elicitation:{form?,url?}, sampling?, roots?}; an empty
// elicitation object means form mode in both).
func capabilitiesOf(ss *sdk.ServerSession) json.RawMessage {
	if ss == nil {
		return json.RawMessage(`{}`)
	}
	ip := ss.InitializeParams()
	if ip == nil || ip.Capabilities == nil {
		return json.RawMessage(`{}`)
	}
	raw, err := json.Marshal(ip.Capabilities)
	if err != nil {
		return json.RawMessage(`{}`)
	}
	var c mcp.ClientCapabilities
	if err := json.Unmarshal(raw, &c); err != nil {
		return json.RawMessage(`{}`)
	}
	out, _ := json.Marshal(c)
	return out
}

// toSDKError carries a handler's JSON-RPC error to the 2025 client
// unchanged: code, message and data.
func toSDKError(e *jsonrpc.Error) error {
	we := &sdkjsonrpc.Error{Code: int64(e.Code), Message: e.Message}
	if e.Data != nil {
		if d, err := json.Marshal(e.Data); err == nil {
			we.Data = d
		}
	}
	return we
}

// unmarshalResult decodes a 2026 result into a go-sdk result, leaving out
// what 2025-11-25 does not have: resultType, the caching hints and the
// serverInfo _meta key (the 2025 client got serverInfo in initialize).
func unmarshalResult(raw json.RawMessage, v any) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return err
	}
	delete(m, "resultType")
	delete(m, "ttlMs")
	delete(m, "cacheScope")
	if mr, ok := m["_meta"]; ok {
		var meta map[string]json.RawMessage
		if err := json.Unmarshal(mr, &meta); err == nil {
			delete(meta, mcp.MetaServerInfo)
			if len(meta) == 0 {
				delete(m, "_meta")
			} else if b, err := json.Marshal(meta); err == nil {
				m["_meta"] = b
			}
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("result does not fit the 2025-11-25 shape: %w", err)
	}
	return nil
}

func remarshal(from, to any) error {
	b, err := json.Marshal(from)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, to)
}
