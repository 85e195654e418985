package check

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpclient"
)

// inputReq is one entry of an InputRequiredResult's inputRequests.
type inputReq struct {
	method string
	params json.RawMessage
	// elicit is set for elicitation/create with readable params.
	elicit *mcp.ElicitRequestParams
}

// mode is "form", "url" or "" (not an elicitation).
func (r inputReq) mode() string {
	if r.elicit == nil {
		return ""
	}
	if r.elicit.IsURL() {
		return mcp.ElicitationModeURL
	}
	return mcp.ElicitationModeForm
}

// outcome is what one request got.
type outcome struct {
	// err is a failure that is not a JSON-RPC error: no answer, not MCP,
	// a broken result.
	err error
	// rpc is a JSON-RPC error answer.
	rpc *mcpclient.RPCError
	// complete is a complete result; isError and text are its.
	complete bool
	isError  bool
	text     string
	// requests and state are an input_required result's (state nil when
	// it sent none).
	requests map[string]inputReq
	state    *string
	inputReq bool
}

func (o *outcome) keys() []string { return sortedKeys(o.requests) }

// success: a complete result that is not an error.
func (o *outcome) success() bool { return o.complete && !o.isError }

// sameAsk reports whether o asks again what first asked (same keys), or
// says "come back later" (state only): the answer was not taken.
func (o *outcome) sameAsk(first *outcome) bool {
	if !o.inputReq {
		return false
	}
	if len(o.requests) == 0 {
		return true
	}
	return strings.Join(o.keys(), ",") == strings.Join(first.keys(), ",")
}

// advanced: a success, or a new question (the answer moved the call on).
func (o *outcome) advanced(first *outcome) bool {
	return o.success() || (o.inputReq && len(o.requests) > 0 && !o.sameAsk(first))
}

// ids matches what differs between two runs of one operation: numbers
// and hex or base64url identifiers ("d_7f6ba20069d194b4").
var ids = regexp.MustCompile(`[0-9A-Za-z_-]*[0-9][0-9A-Za-z_-]*`)

// sameResult reports whether o and p are complete results of the same
// kind saying the same thing, identifiers aside.
func (o *outcome) sameResult(p *outcome) bool {
	return o.complete && p.complete && o.isError == p.isError &&
		ids.ReplaceAllString(o.text, "#") == ids.ReplaceAllString(p.text, "#")
}

// class groups outcomes for comparison with a control: "error",
// "complete", "complete-error", "ask:<keys>", "failed".
func (o *outcome) class() string {
	switch {
	case o.err != nil:
		return "failed"
	case o.rpc != nil:
		return "error"
	case o.complete && o.isError:
		return "complete-error"
	case o.complete:
		return "complete"
	}
	return "ask:" + strings.Join(o.keys(), ",")
}

// String describes o for a report.
func (o *outcome) String() string {
	switch {
	case o.err != nil:
		return "request failed: " + clip(o.err.Error(), 160)
	case o.rpc != nil:
		return fmt.Sprintf("JSON-RPC error %d (HTTP %d) %s", o.rpc.Code, o.rpc.HTTPStatus, quoted(o.rpc.Message, 100))
	case o.complete && o.isError:
		return "isError result " + quoted(o.text, 120)
	case o.complete:
		return "complete result " + quoted(o.text, 120)
	case len(o.requests) == 0:
		return "input_required with requestState only (come back later)"
	}
	var parts []string
	for _, k := range o.keys() {
		r := o.requests[k]
		if m := r.mode(); m != "" {
			parts = append(parts, fmt.Sprintf("%s (%s mode)", clip(k, 40), m))
		} else {
			parts = append(parts, fmt.Sprintf("%s (%s)", clip(k, 40), clip(r.method, 40)))
		}
	}
	return "input_required asking " + strings.Join(parts, ", ")
}

// call is one request of the checked operation.
type call struct {
	client    *mcpclient.Client
	tool      string
	args      json.RawMessage
	caps      *mcp.ClientCapabilities
	responses map[string]json.RawMessage
	state     *string
}

// do sends cl and reads the answer into an outcome, with the secrets
// redacted from the server's text before anything clips it (a clipped
// token would no longer be found whole).
func (c *checker) do(ctx context.Context, cl call) *outcome {
	if c.cfg.Progress != nil && c.acceptsURL(cl) {
		c.cfg.Progress(WaitNote)
	}
	o := send(ctx, cl)
	for k, r := range o.requests {
		if r.mode() == mcp.ElicitationModeURL {
			if c.urlKeys == nil {
				c.urlKeys = map[string]bool{}
			}
			c.urlKeys[k] = true
		}
	}
	o.text = c.redact(o.text)
	if c.eff != nil {
		c.count(cl, o)
	}
	if o.rpc != nil {
		rpc := *o.rpc
		rpc.Message = c.redact(rpc.Message)
		o.rpc = &rpc
	}
	if o.err != nil {
		o.err = &redactedError{msg: c.redact(o.err.Error()), err: o.err}
	}
	return o
}

// count adds the call and what it got to the report's Effects.
func (c *checker) count(cl call, o *outcome) {
	if cl.tool != c.cfg.Tool {
		if c.eff.OtherCalls == nil {
			c.eff.OtherCalls = map[string]int{}
		}
		c.eff.OtherCalls[cl.tool]++
		return
	}
	c.eff.Calls++
	if cl.state == nil && cl.responses == nil {
		c.eff.Started++
	}
	if !o.success() {
		return
	}
	if cl.state != nil {
		// A replay of a completed retry that gives the same result is
		// the same operation; another result (another draft id) is
		// another execution.
		if c.completedStates[*cl.state] == o.text {
			return
		}
		if c.completedStates == nil {
			c.completedStates = map[string]string{}
		}
		c.completedStates[*cl.state] = o.text
	}
	c.eff.Completed = append(c.eff.Completed, clip(o.text, 200))
}

// acceptsURL reports whether cl answers a URL-mode request with accept.
func (c *checker) acceptsURL(cl call) bool {
	for k, raw := range cl.responses {
		var a struct {
			Action string `json:"action"`
		}
		if c.urlKeys[k] && json.Unmarshal(raw, &a) == nil && a.Action == mcp.ActionAccept {
			return true
		}
	}
	return false
}

// redactedError is an error whose text had the secrets removed; Unwrap
// keeps the original for errors.As.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// send sends c and reads the answer into an outcome.
func send(ctx context.Context, c call) *outcome {
	raw, err := c.client.SendRaw(ctx, &mcpclient.RawRequest{
		Method: mcp.MethodToolsCall, Name: c.tool, Arguments: c.args,
		InputResponses: c.responses, RequestState: c.state, Capabilities: c.caps,
	})
	var rpc *mcpclient.RPCError
	switch {
	case errors.As(err, &rpc):
		return &outcome{rpc: rpc}
	case err != nil:
		return &outcome{err: err}
	}
	return parseResult(raw)
}

// parseResult reads a raw tools/call result (docs/protocol.md §Tools, §InputRequiredResult).
func parseResult(raw json.RawMessage) *outcome {
	var head struct {
		ResultType    string                     `json:"resultType"`
		InputRequests map[string]json.RawMessage `json:"inputRequests"`
		RequestState  *string                    `json:"requestState"`
		Content       []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return &outcome{err: fmt.Errorf("malformed result: %w", err)}
	}
	switch head.ResultType {
	case "", mcp.ResultTypeComplete:
		o := &outcome{complete: true, isError: head.IsError}
		var texts []string
		for _, c := range head.Content {
			if c.Type == "text" {
				texts = append(texts, c.Text)
			}
		}
		o.text = strings.Join(texts, " ")
		return o
	case mcp.ResultTypeInputRequired:
	default:
		return &outcome{err: fmt.Errorf("unknown resultType %s", quoted(head.ResultType, 40))}
	}
	o := &outcome{inputReq: true, requests: map[string]inputReq{}, state: head.RequestState}
	for k, v := range head.InputRequests {
		var r struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if err := json.Unmarshal(v, &r); err != nil {
			return &outcome{err: fmt.Errorf("input request %s is not {method, params}", quoted(k, 40))}
		}
		ir := inputReq{method: r.Method, params: r.Params}
		if r.Method == mcp.MethodElicitationCreate {
			var p mcp.ElicitRequestParams
			if json.Unmarshal(r.Params, &p) == nil {
				ir.elicit = &p
			}
		}
		o.requests[k] = ir
	}
	return o
}
