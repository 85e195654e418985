package mcpclient_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpclient"
)

// goSDKServer is a go-sdk v1.8.0 stateless server (the SDK's 2026-07-28
// mode) with an MRTR tool and an x-mcp-header tool, behind a recorder.
func goSDKServer(t *testing.T, jsonResponse bool) (*httptest.Server, *recorder) {
	t.Helper()
	const state = "sdk-state<1>&" // HTML characters: must come back unescaped
	s := sdk.NewServer(&sdk.Implementation{Name: "go-sdk-peer", Version: "1.8.0"}, &sdk.ServerOptions{Logger: quiet()})
	s.AddTool(&sdk.Tool{Name: "greet", InputSchema: json.RawMessage(`{"type":"object","properties":{"lang":{"type":"string"}}}`)},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			if req.Params.RequestState == "" {
				return &sdk.CallToolResult{
					InputRequests: sdk.InputRequestMap{"who": &sdk.ElicitParams{Mode: "form", Message: "Your name?",
						RequestedSchema: json.RawMessage(formSchema)}},
					RequestState: state,
				}, nil
			}
			if req.Params.RequestState != state {
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "state changed"}}, IsError: true}, nil
			}
			ans, ok := req.Params.InputResponses["who"].(*sdk.ElicitResult)
			if !ok || ans.Action != "accept" {
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "no answer"}}, IsError: true}, nil
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: fmt.Sprintf("hello %v", ans.Content["name"])}}}, nil
		})
	s.AddTool(&sdk.Tool{Name: "regional", InputSchema: json.RawMessage(regionalSchema)},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "regional ok"}}}, nil
		})
	rec := &recorder{next: sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s },
		&sdk.StreamableHTTPOptions{Stateless: true, JSONResponse: jsonResponse, Logger: quiet()})}
	hs := httptest.NewServer(rec)
	t.Cleanup(hs.Close)
	return hs, rec
}

func TestInteropGoSDK(t *testing.T) {
	for _, jsonResponse := range []bool{true, false} {
		t.Run(fmt.Sprintf("JSONResponse=%v", jsonResponse), func(t *testing.T) {
			hs, rec := goSDKServer(t, jsonResponse)
			c := mcpclient.New(hs.URL, &mcpclient.Options{Handlers: formHandlers()})
			ctx := context.Background()
			d, err := c.Discover(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(d.SupportedVersions) == 0 {
				t.Fatalf("discover %+v", d)
			}
			tools, err := c.ListTools(ctx)
			if err != nil || len(tools) != 2 {
				t.Fatalf("tools %v %v", err, tools)
			}
			r, err := c.CallTool(ctx, "greet", map[string]string{"lang": "en"})
			if err != nil {
				t.Fatal(err)
			}
			if r.IsError || firstText(r) != "hello Ada" {
				t.Fatalf("greet: %+v", r)
			}
			calls := rec.byMethod(mcp.MethodToolsCall)
			if len(calls) != 2 || string(calls[0].Msg.ID) == string(calls[1].Msg.ID) {
				t.Fatalf("%d calls", len(calls))
			}
			want := "text/event-stream"
			if jsonResponse {
				want = "application/json"
			}
			for _, c := range calls {
				if c.RespType != want {
					t.Fatalf("answered as %q, want %q", c.RespType, want)
				}
			}
			r, err = c.CallTool(ctx, "regional", map[string]any{"region": "eu-west", "priority": 3, "verbose": true})
			if err != nil || firstText(r) != "regional ok" {
				t.Fatalf("regional: %v %+v", err, r)
			}
			last := rec.byMethod(mcp.MethodToolsCall)[2].Header
			if last.Get("Mcp-Param-Region") != "eu-west" || last.Get("Mcp-Param-Priority") != "3" || last.Get("Mcp-Param-Verbose") != "true" {
				t.Fatalf("headers %v", last)
			}
		})
	}
}
