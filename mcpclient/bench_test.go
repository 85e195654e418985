package mcpclient_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/mcp-elicit/elicit/mcpclient"
	"github.com/mcp-elicit/elicit/streamhttp"
)

// inProcess hands each request to h in the same process, with no
// network, so a benchmark measures the client's and the server's code.
type inProcess struct{ h http.Handler }

func (p inProcess) RoundTrip(r *http.Request) (*http.Response, error) {
	w := httptest.NewRecorder()
	p.h.ServeHTTP(w, r)
	return w.Result(), nil
}

// BenchmarkCallTool is one CallTool against testServer: a JSON response,
// an SSE response with two progress notifications, and a form asked and
// answered (two rounds).
func BenchmarkCallTool(b *testing.B) {
	h := streamhttp.NewHandler(testServer(nil), &streamhttp.Options{Logger: quiet()})
	c := mcpclient.New("http://127.0.0.1/mcp", &mcpclient.Options{HTTPClient: &http.Client{Transport: inProcess{h}},
		Handlers: formHandlers(), OnProgress: func(mcpclient.Progress) {}})
	ctx := context.Background()
	for _, bc := range []struct {
		name, tool string
		args       any
		want       string
	}{
		{"json", "echo", map[string]any{"text": "hi"}, "hi"},
		{"sse", "slow", nil, "done"},
		{"form", "ask_form", nil, "hello Ada (round 1)"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				r, err := c.CallTool(ctx, bc.tool, bc.args)
				if err != nil || firstText(r) != bc.want {
					b.Fatalf("%s: %v %+v", bc.tool, err, r)
				}
			}
		})
	}
}
