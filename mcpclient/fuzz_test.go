package mcpclient

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"testing"

	"github.com/mcp-elicit/elicit/mcp"
)

// FuzzResponse feeds arbitrary server answers (JSON or SSE, any status)
// through the whole client-side reading path: the HTTP answer, the
// result's classification, and the answering of input requests. Nothing a
// server sends may panic; it is a result or an error.
func FuzzResponse(f *testing.F) {
	seeds := []struct {
		sse    bool
		status int
		body   string
	}{
		{false, 200, `{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","content":[]}}`},
		{false, 200, `{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required","inputRequests":{"a":{"method":"elicitation/create","params":{"message":"m","requestedSchema":{"type":"object"}}},"b":{"method":"elicitation/create","params":{"mode":"url","message":"m","url":"https://x/"}},"c":{"method":"sampling/createMessage","params":{"messages":[],"maxTokens":1}},"d":{"method":"roots/list"}},"requestState":"s"}}`},
		{false, 400, `{"jsonrpc":"2.0","id":1,"error":{"code":-32021,"message":"m","data":{"requiredCapabilities":{"elicitation":{"url":{}}}}}}`},
		{false, 400, `{"jsonrpc":"2.0","id":1,"error":{"code":-32022,"message":"m","data":{"supported":["x"]}}}`},
		{false, 401, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Unauthorized"}}`},
		{true, 200, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"elicit-1\",\"progress\":1}}\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n"},
		{true, 200, ": c\n\nevent: other\ndata: x\n\n"},
	}
	for _, s := range seeds {
		f.Add(s.sse, s.status, []byte(s.body))
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	h := &Handlers{
		ElicitForm: func(context.Context, Asker, string, *mcp.ElicitRequestParams) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: mcp.ActionAccept, Content: map[string]any{}}, nil
		},
		ElicitURL: func(context.Context, Asker, string, *mcp.ElicitRequestParams) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: mcp.ActionAccept}, nil
		},
		Sampling: func(context.Context, Asker, string, *mcp.CreateMessageRequestParams) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Role: "assistant", Model: "m"}, nil
		},
		Roots: func(context.Context, Asker, string) (*mcp.ListRootsResult, error) { return &mcp.ListRootsResult{}, nil },
	}
	f.Fuzz(func(t *testing.T, sse bool, status int, body []byte) {
		c := New("http://127.0.0.1:1/mcp", &Options{Handlers: h, Logger: quiet, MaxMessageBytes: 1 << 16,
			OnProgress: func(Progress) {}})
		ct := "application/json"
		if sse {
			ct = "text/event-stream"
		}
		resp := &http.Response{StatusCode: status, Header: http.Header{"Content-Type": {ct}}, Body: io.NopCloser(bytes.NewReader(body))}
		out := &outgoing{method: mcp.MethodToolsCall, target: "t"}
		rd := &reading{c: c, out: out, id: 1, token: "elicit-1", resp: resp}
		raw, err := rd.read(context.Background())
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
			return
		}
		res, ir, err := c.classify(out.method, raw)
		if err != nil {
			return
		}
		if ir == nil {
			_, _ = decodeTool(res)
			return
		}
		answers, err := c.Answer(context.Background(), ir)
		if err != nil {
			return
		}
		r := ir.Retry(answers)
		if _, err := marshal(&reqParams{InputResponses: nil, RequestState: r.state}); err != nil {
			t.Fatalf("the echoed requestState does not encode: %v", err)
		}
	})
}
