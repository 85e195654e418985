package legacy

import (
	"context"
	"encoding/json"
	"errors"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// captured holds the client's answer to one server-to-client request as
// it arrived, before go-sdk checks it against the schema: the handler, not
// go-sdk, judges a form answer (an invalid one is asked again with the
// problem, as for a 2026 client), so it must see the answer as sent.
type captured struct{ raw json.RawMessage }

type captureKey struct{}

// captureResults is a sending middleware that records the result of a
// request sent with a context made by withCapture.
func captureResults(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		res, err := next(ctx, method, req)
		if c, ok := ctx.Value(captureKey{}).(*captured); ok && err == nil && res != nil {
			if b, merr := json.Marshal(res); merr == nil {
				c.raw = b
			}
		}
		return res, err
	}
}

// elicitResult is the client's answer to elicitation/create.
type elicitResult struct {
	Action string
	raw    json.RawMessage
}

// elicit sends elicitation/create and returns the answer as the client sent
// it. go-sdk's own check of a form answer against the schema is skipped
// (its error is ignored once the answer was captured).
func (b *bridge) elicit(ctx context.Context, ss *sdk.ServerSession, p *sdk.ElicitParams) (*elicitResult, error) {
	c := &captured{}
	_, err := ss.Elicit(context.WithValue(ctx, captureKey{}, c), p)
	if c.raw == nil {
		if err == nil {
			err = errors.New("no answer captured")
		}
		return nil, err
	}
	var a struct {
		Action string `json:"action"`
	}
	if err := json.Unmarshal(c.raw, &a); err != nil {
		return nil, err
	}
	return &elicitResult{Action: a.Action, raw: c.raw}, nil
}
