package mcpclient

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mcp-elicit/elicit/mcp"
)

// Answer answers every input request of ir through the client's Handlers,
// in key order, and returns the inputResponses for ir.Retry (MRTR-C-01,
// MRTR-C-05). A request the client cannot answer because it did not
// declare the capability (no handler for the method, or for the
// elicitation's mode) is a *ProtocolError: the server broke CAP-S-01 /
// MRTR-S-08. A handler's error is returned wrapped, and stops the answers
// (MRTR-C-10: nothing is sent).
func (c *Client) Answer(ctx context.Context, ir *InputRequired) (map[string]any, error) {
	who := c.Asker()
	if s := serverInfoOf(ir.Meta); s != nil {
		who.Server = s
	}
	out := make(map[string]any, len(ir.InputRequests))
	for _, key := range ir.Keys() {
		req := ir.InputRequests[key]
		ans, err := c.answerOne(ctx, who, key, req)
		if err != nil {
			return nil, err
		}
		out[key] = ans
	}
	return out, nil
}

// answerOne answers one input request through the handler of its method.
func (c *Client) answerOne(ctx context.Context, who Asker, key string, req InputRequest) (any, error) {
	a := &answering{h: &c.handlers, who: who, key: key, req: req}
	switch req.Method {
	case mcp.MethodElicitationCreate:
		return a.elicitation(ctx)
	case mcp.MethodSamplingCreate:
		return a.sampling(ctx)
	case mcp.MethodRootsList:
		return a.roots(ctx)
	}
	return nil, a.protocol("MRTR-S-06", "unknown input request method %q", clip(req.Method, 60))
}

// answering is one input request being answered.
type answering struct {
	h   *Handlers
	who Asker
	key string
	req InputRequest
}

// protocol is the *ProtocolError of a request the server should not have sent.
func (a *answering) protocol(rule, format string, args ...any) error {
	return &ProtocolError{Method: clip(a.req.Method, 60), Rule: rule,
		Reason: fmt.Sprintf("input request %q: ", clip(a.key, 60)) + fmt.Sprintf(format, args...)}
}

// failed wraps a handler's error, or says that it returned no result.
func (a *answering) failed(err error) error {
	if err == nil {
		err = fmt.Errorf("the handler returned no result")
	}
	return fmt.Errorf("mcpclient: answering input request %q: %w", clip(a.key, 60), err)
}

// elicitation answers elicitation/create through the handler of its mode,
// which the client must have declared (CAP-S-01), and keeps content only
// on a form-mode accept.
func (a *answering) elicitation(ctx context.Context) (any, error) {
	p, err := a.req.ElicitParams()
	if err != nil {
		return nil, a.protocol("ELI-S-03", "%v", err)
	}
	fn, err := a.elicitHandler(p)
	if err != nil {
		return nil, err
	}
	if p.Message == "" {
		return nil, a.protocol("ELI-S-03", "elicitation without a message")
	}
	res, err := fn(ctx, a.who, a.key, p)
	if err != nil || res == nil {
		return nil, a.failed(err)
	}
	switch res.Action {
	case mcp.ActionAccept, mcp.ActionDecline, mcp.ActionCancel:
	default:
		return nil, a.failed(fmt.Errorf("the handler returned action %q; want accept, decline or cancel", res.Action))
	}
	if p.Mode == mcp.ElicitationModeURL || res.Action != mcp.ActionAccept {
		// URL mode never carries content, and neither do decline and
		// cancel (ELI-RA-01): nothing the user typed leaves by mistake.
		return &mcp.ElicitResult{Action: res.Action}, nil
	}
	return res, nil
}

// elicitHandler picks the handler of the elicitation's mode.
func (a *answering) elicitHandler(p *mcp.ElicitRequestParams) (func(context.Context, Asker, string, *mcp.ElicitRequestParams) (*mcp.ElicitResult, error), error) {
	switch p.Mode {
	case "", mcp.ElicitationModeForm: // no mode means form (ELI-C-04)
		if a.h.ElicitForm == nil {
			return nil, a.protocol("CAP-S-01", "form-mode elicitation, which this client did not declare")
		}
		if !isObject(p.RequestedSchema) {
			return nil, a.protocol("ELI-S-05", "form-mode elicitation without a requestedSchema object")
		}
		return a.h.ElicitForm, nil
	case mcp.ElicitationModeURL:
		if a.h.ElicitURL == nil {
			return nil, a.protocol("CAP-S-01", "URL-mode elicitation, which this client did not declare")
		}
		if p.URL == "" {
			return nil, a.protocol("ELI-U-S-01", "URL-mode elicitation without a url")
		}
		return a.h.ElicitURL, nil
	}
	return nil, a.protocol("", "unknown elicitation mode %q", clip(p.Mode, 40))
}

// sampling answers sampling/createMessage, without tools: a client that
// did not declare sampling.tools refuses tool-enabled sampling (SAMP-S-01).
func (a *answering) sampling(ctx context.Context) (any, error) {
	if a.h.Sampling == nil {
		return nil, a.protocol("MRTR-S-08", "sampling/createMessage, which this client did not declare")
	}
	var raw map[string]json.RawMessage
	if json.Unmarshal(a.req.Params, &raw) != nil || raw == nil {
		return nil, a.protocol("MRTR-S-06", "sampling/createMessage without params")
	}
	for _, k := range []string{"tools", "toolChoice"} {
		if _, ok := raw[k]; ok {
			return nil, a.protocol("SAMP-S-01", "tool-enabled sampling, which this client did not declare (sampling.tools)")
		}
	}
	var p mcp.CreateMessageRequestParams
	if err := json.Unmarshal(a.req.Params, &p); err != nil {
		return nil, a.protocol("MRTR-S-06", "sampling/createMessage params: %v", err)
	}
	res, err := a.h.Sampling(ctx, a.who, a.key, &p)
	if err != nil || res == nil {
		return nil, a.failed(err)
	}
	return res, nil
}

// roots answers roots/list; a nil list is sent as [] ("roots" is required).
func (a *answering) roots(ctx context.Context) (any, error) {
	if a.h.Roots == nil {
		return nil, a.protocol("MRTR-S-08", "roots/list, which this client did not declare")
	}
	res, err := a.h.Roots(ctx, a.who, a.key)
	if err != nil || res == nil {
		return nil, a.failed(err)
	}
	if res.Roots == nil {
		return &mcp.ListRootsResult{Roots: []mcp.Root{}}, nil
	}
	return res, nil
}

func serverInfoOf(meta mcp.ResultMeta) *mcp.Implementation {
	v, ok := meta[mcp.MetaServerInfo]
	if !ok {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var info mcp.Implementation
	if json.Unmarshal(b, &info) != nil || info.Name == "" {
		return nil
	}
	return &info
}
