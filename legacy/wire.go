package legacy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"reflect"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-elicit/elicit/internal/quietlog"
	"github.com/mcp-elicit/elicit/jsonrpc"
	"github.com/mcp-elicit/elicit/mcp"
)

// checkInitialize checks an initialize request's params against the
// 2025-11-25 shapes go-sdk decodes them into, and returns the request's id
// and, for a misfit, the -32602 error naming the field (go-sdk would
// answer code 0 with Go type names).
func checkInitialize(body []byte) (jsonrpc.ID, *jsonrpc.Error) {
	req, jerr := jsonrpc.DecodeRequest(body)
	if jerr != nil {
		var id jsonrpc.ID
		if req != nil {
			id = req.ID
		}
		return id, jerr
	}
	var p sdk.InitializeParams
	if len(req.Params) == 0 {
		return req.ID, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "Invalid params: initialize needs params (protocolVersion, capabilities, clientInfo)")
	}
	if err := json.Unmarshal(req.Params, &p); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return req.ID, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "Invalid params: %s must be %s, not %s", te.Field, jsonKind(te.Type), te.Value)
		}
		return req.ID, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "Invalid params: initialize params must be an object of the 2025-11-25 InitializeRequest shape")
	}
	return req.ID, nil
}

// jsonKind names the JSON kind a Go type decodes from.
func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return "a number"
	}
	return "another JSON value"
}

// stripModernMeta removes _meta["io.modelcontextprotocol/protocolVersion"]
// from a request on a 2025 session: the session's negotiated version rules,
// and go-sdk would refuse the request (HTTP 400, -32022) although the
// session's version is supported. Other bodies are returned unchanged.
func stripModernMeta(body []byte) []byte {
	if !bytes.Contains(body, []byte(mcp.MetaProtocolVersion)) {
		return body
	}
	var msg map[string]json.RawMessage
	if json.Unmarshal(body, &msg) != nil {
		return body
	}
	var params map[string]json.RawMessage
	if json.Unmarshal(msg["params"], &params) != nil {
		return body
	}
	var meta map[string]json.RawMessage
	if json.Unmarshal(params["_meta"], &meta) != nil {
		return body
	}
	if _, ok := meta[mcp.MetaProtocolVersion]; !ok {
		return body
	}
	delete(meta, mcp.MetaProtocolVersion)
	out, err1 := json.Marshal(meta)
	params["_meta"] = out
	out, err2 := json.Marshal(params)
	msg["params"] = out
	out, err3 := json.Marshal(msg)
	if err := errors.Join(err1, err2, err3); err != nil {
		return body
	}
	return out
}

// quieter returns a logger that logs l's INFO records at DEBUG (go-sdk's
// per-session INFO lines).
func quieter(l *slog.Logger) *slog.Logger { return quietlog.Demote(l) }

// trimmed is a list result without the 2026-only caching hints (ttlMs,
// cacheScope) go-sdk's result types always carry: they are not in
// schema-2025-11-25.
type trimmed struct{ sdk.Result }

func (t trimmed) MarshalJSON() ([]byte, error) {
	raw, err := json.Marshal(t.Result)
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	delete(m, "ttlMs")
	delete(m, "cacheScope")
	return json.Marshal(m)
}

// eraMiddleware is the 2025 side's receiving middleware: it registers a
// session once initialize succeeded, and trims 2026-only fields from list
// results.
func (b *bridge) eraMiddleware(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		res, err := next(ctx, method, req)
		if err != nil {
			return res, err
		}
		if method == "initialize" && b.reg != nil {
			if s := sessionOf(ctx); s != nil {
				if ss, ok := req.GetSession().(*sdk.ServerSession); ok {
					b.reg.opened(s, ss)
				}
			}
		}
		if _, ok := res.(sdk.CacheableResult); ok {
			return trimmed{res}, nil
		}
		return res, nil
	}
}
