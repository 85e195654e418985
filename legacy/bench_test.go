package legacy_test

import (
	"context"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkBridgeRound is one tools/call of a 2025-11-25 client (go-sdk)
// whose handler asks once and completes on the retry: the bridge sends
// the input request to the client over the session, then calls again
// with the answer. Over loopback.
func BenchmarkBridgeRound(b *testing.B) {
	caps := &sdk.ClientCapabilities{Elicitation: &sdk.ElicitationCapabilities{Form: &sdk.FormElicitationCapabilities{}},
		RootsV2: &sdk.RootCapabilities{}}
	opts := &sdk.ClientOptions{ElicitationHandler: func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
		return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"name": "ann@example.com"}}, nil
	}}
	ts := start(b, nil, nil)
	ctx := context.Background()
	cs := connect(b, ctx, ts.url, caps, opts)
	for _, bc := range []struct{ name, tool, want string }{
		{"form", "ask_name", "hello ann@example.com (round 1)"},
		{"roots", "roots", "1 roots, first file:///work"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				r, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: bc.tool, Arguments: map[string]any{}})
				if err != nil || text(r) != bc.want {
					b.Fatalf("%s: %v %+v", bc.tool, err, r)
				}
			}
		})
	}
}
