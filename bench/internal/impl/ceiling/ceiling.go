// Package ceiling is the benchmark's ceiling: a bare net/http handler that
// does the same JSON decode and encode as an MCP server answering the
// benchmark scenarios, and nothing else (no header checks, no _meta
// checks, no sealing, no answer validation). What it serves is as close
// to the machine's limit for this traffic as a Go HTTP/1.1 server gets.
package ceiling

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"

	"github.com/mcp-elicit/elicit/bench/internal/wire"
)

type request struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  struct {
		Meta           json.RawMessage            `json:"_meta"`
		Name           string                     `json:"name"`
		Arguments      json.RawMessage            `json:"arguments"`
		InputResponses map[string]json.RawMessage `json:"inputResponses"`
		RequestState   *string                    `json:"requestState"`
	} `json:"params"`
}

type response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

type text struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type meta struct {
	ServerInfo impl `json:"io.modelcontextprotocol/serverInfo"`
}

type impl struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

type callResult struct {
	ResultType string `json:"resultType"`
	Content    []text `json:"content"`
	IsError    bool   `json:"isError,omitempty"`
	Meta       meta   `json:"_meta"`
}

type elicitParams struct {
	Mode            string          `json:"mode"`
	Message         string          `json:"message"`
	RequestedSchema json.RawMessage `json:"requestedSchema"`
}

type inputRequest struct {
	Method string       `json:"method"`
	Params elicitParams `json:"params"`
}

type inputRequired struct {
	ResultType    string                  `json:"resultType"`
	InputRequests map[string]inputRequest `json:"inputRequests"`
	RequestState  string                  `json:"requestState"`
	Meta          meta                    `json:"_meta"`
}

type discoverResult struct {
	ResultType        string   `json:"resultType"`
	SupportedVersions []string `json:"supportedVersions"`
	Capabilities      struct {
		Tools struct{} `json:"tools"`
	} `json:"capabilities"`
	TTLMs      int64  `json:"ttlMs"`
	CacheScope string `json:"cacheScope"`
	Meta       meta   `json:"_meta"`
}

// fixedState stands in for a sealed state of the size elicit seals for
// the same flow (about 420 characters: it carries the asked schema); the
// ceiling neither seals nor checks it.
var fixedState = strings.Repeat("AQllcGhlbWVyYWyR3G0X", 21)

var serverMeta = meta{ServerInfo: impl{Name: wire.ServerName, Version: wire.ServerVersion}}

// Handler returns the ceiling handler.
func Handler() http.Handler { return http.HandlerFunc(serve) }

func serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		http.Error(w, "read", http.StatusBadRequest)
		return
	}
	var req request
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, "json", http.StatusBadRequest)
		return
	}
	resp := response{JSONRPC: "2.0", ID: req.ID}
	switch {
	case req.Method == "server/discover":
		d := &discoverResult{ResultType: "complete", SupportedVersions: []string{wire.ProtocolVersion},
			TTLMs: 300000, CacheScope: "private", Meta: serverMeta}
		resp.Result = d
	case req.Method == "tools/call" && req.Params.Name == wire.EchoTool:
		var args struct {
			Text string `json:"text"`
		}
		if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
			resp.Error = &rpcError{Code: -32602, Message: "Invalid params"}
			break
		}
		resp.Result = &callResult{ResultType: "complete", Content: []text{{Type: "text", Text: args.Text}}, Meta: serverMeta}
	case req.Method == "tools/call" && req.Params.Name == wire.FormTool:
		if req.Params.RequestState == nil {
			resp.Result = &inputRequired{ResultType: "input_required", RequestState: fixedState, Meta: serverMeta,
				InputRequests: map[string]inputRequest{wire.FormKey: {Method: "elicitation/create",
					Params: elicitParams{Mode: "form", Message: wire.FormMessage, RequestedSchema: json.RawMessage(wire.FormRequestedSchema)}}}}
			break
		}
		var ans struct {
			Action  string         `json:"action"`
			Content map[string]any `json:"content"`
		}
		if err := json.Unmarshal(req.Params.InputResponses[wire.FormKey], &ans); err != nil || ans.Action != "accept" {
			resp.Result = &callResult{ResultType: "complete", Content: []text{{Type: "text", Text: "not sent"}}, IsError: true, Meta: serverMeta}
			break
		}
		resp.Result = &callResult{ResultType: "complete", Content: []text{{Type: "text", Text: wire.FormDone}}, Meta: serverMeta}
	default:
		resp.Error = &rpcError{Code: -32601, Message: "Method not found"}
	}
	b, err := json.Marshal(&resp)
	if err != nil {
		http.Error(w, "encode", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}
