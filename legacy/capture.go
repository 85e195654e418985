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

// sent sends one server-to-client request with send and returns the
// client's result as it arrived. go-sdk's own checks of the result (a form
// answer against the schema, one content block for sampling) are skipped:
// their error is ignored once the result was captured, and the handler
// judges the answer as it would a 2026 client's.
func sent(ctx context.Context, send func(context.Context) error) (json.RawMessage, error) {
	c := &captured{}
	err := send(context.WithValue(ctx, captureKey{}, c))
	if c.raw == nil {
		if err == nil {
			err = errors.New("no result captured")
		}
		return nil, err
	}
	return c.raw, nil
}
