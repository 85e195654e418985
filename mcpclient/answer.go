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

func (c *Client) answerOne(ctx context.Context, who Asker, key string, req InputRequest) (any, error) {
	h := &c.handlers
	perr := func(rule, format string, args ...any) error {
		return &ProtocolError{Method: clip(req.Method, 60), Rule: rule,
			Reason: fmt.Sprintf("input request %q: ", clip(key, 60)) + fmt.Sprintf(format, args...)}
	}
	wrap := func(err error) error {
		return fmt.Errorf("mcpclient: answering input request %q: %w", clip(key, 60), err)
	}
	switch req.Method {
	case mcp.MethodElicitationCreate:
		p, err := req.ElicitParams()
		if err != nil {
			return nil, perr("ELI-S-03", "%v", err)
		}
		var fn func(context.Context, Asker, string, *mcp.ElicitRequestParams) (*mcp.ElicitResult, error)
		switch p.Mode {
		case "", mcp.ElicitationModeForm: // no mode means form (ELI-C-04)
			if h.ElicitForm == nil {
				return nil, perr("CAP-S-01", "form-mode elicitation, which this client did not declare")
			}
			if !isObject(p.RequestedSchema) {
				return nil, perr("ELI-S-05", "form-mode elicitation without a requestedSchema object")
			}
			fn = h.ElicitForm
		case mcp.ElicitationModeURL:
			if h.ElicitURL == nil {
				return nil, perr("CAP-S-01", "URL-mode elicitation, which this client did not declare")
			}
			if p.URL == "" {
				return nil, perr("ELI-U-S-01", "URL-mode elicitation without a url")
			}
			fn = h.ElicitURL
		default:
			return nil, perr("", "unknown elicitation mode %q", clip(p.Mode, 40))
		}
		if p.Message == "" {
			return nil, perr("ELI-S-03", "elicitation without a message")
		}
		res, err := fn(ctx, who, key, p)
		if err != nil {
			return nil, wrap(err)
		}
		if res == nil {
			return nil, wrap(fmt.Errorf("the handler returned no result"))
		}
		switch res.Action {
		case mcp.ActionAccept, mcp.ActionDecline, mcp.ActionCancel:
		default:
			return nil, wrap(fmt.Errorf("the handler returned action %q; want accept, decline or cancel", res.Action))
		}
		if p.Mode == mcp.ElicitationModeURL || res.Action != mcp.ActionAccept {
			// URL mode never carries content, and neither do decline and
			// cancel (ELI-RA-01): nothing the user typed leaves by mistake.
			return &mcp.ElicitResult{Action: res.Action}, nil
		}
		return res, nil
	case mcp.MethodSamplingCreate:
		if h.Sampling == nil {
			return nil, perr("MRTR-S-08", "sampling/createMessage, which this client did not declare")
		}
		var raw map[string]json.RawMessage
		if json.Unmarshal(req.Params, &raw) != nil || raw == nil {
			return nil, perr("MRTR-S-06", "sampling/createMessage without params")
		}
		if _, ok := raw["tools"]; ok {
			return nil, perr("SAMP-S-01", "tool-enabled sampling, which this client did not declare (sampling.tools)")
		}
		if _, ok := raw["toolChoice"]; ok {
			return nil, perr("SAMP-S-01", "tool-enabled sampling, which this client did not declare (sampling.tools)")
		}
		var p mcp.CreateMessageRequestParams
		if err := json.Unmarshal(req.Params, &p); err != nil {
			return nil, perr("MRTR-S-06", "sampling/createMessage params: %v", err)
		}
		res, err := h.Sampling(ctx, who, key, &p)
		if err != nil {
			return nil, wrap(err)
		}
		if res == nil {
			return nil, wrap(fmt.Errorf("the handler returned no result"))
		}
		return res, nil
	case mcp.MethodRootsList:
		if h.Roots == nil {
			return nil, perr("MRTR-S-08", "roots/list, which this client did not declare")
		}
		res, err := h.Roots(ctx, who, key)
		if err != nil {
			return nil, wrap(err)
		}
		if res == nil {
			return nil, wrap(fmt.Errorf("the handler returned no result"))
		}
		if res.Roots == nil {
			return &mcp.ListRootsResult{Roots: []mcp.Root{}}, nil // "roots" is required
		}
		return res, nil
	}
	return nil, perr("MRTR-S-06", "unknown input request method %q", clip(req.Method, 60))
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
