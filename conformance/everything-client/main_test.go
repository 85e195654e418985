package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpserver"
	"github.com/mcp-elicit/elicit/streamhttp"
)

func TestRefusals(t *testing.T) {
	tests := []struct {
		cfg  config
		want string
	}{
		{config{scenario: "auth/metadata-default", url: "not a url"}, "not an absolute http(s) URL"},
		{config{scenario: "auth/pre-registration", url: "http://127.0.0.1:1/mcp", context: "{"}, "MCP_CONFORMANCE_CONTEXT"},
		{config{scenario: "no-such-scenario"}, "unknown scenario"},
		{config{scenario: "tools_call", version: "2025-11-25"}, "speaks only"},
	}
	for _, tt := range tests {
		tt.cfg.log = io.Discard
		err := run(context.Background(), tt.cfg)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want %q", tt.cfg.scenario, err, tt.want)
		}
	}
}

// A local stand-in for the tools_call and http-custom-headers mocks: our
// own server, which checks every header and Mcp-Param-* value.
func TestScenariosAgainstOurServer(t *testing.T) {
	s := mcpserver.New(mcp.Implementation{Name: "local", Version: "1"}, nil)
	var sum float64
	s.AddTool(&mcp.Tool{Name: "add_numbers", InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`)},
		func(ctx context.Context, r *mcpserver.Request) (mcpserver.Reply, error) {
			var a struct {
				A float64 `json:"a"`
				B float64 `json:"b"`
			}
			if err := r.BindArguments(&a); err != nil {
				return nil, err
			}
			sum = a.A + a.B
			return mcpserver.Text(fmt.Sprint(sum)), nil
		})
	s.AddTool(&mcp.Tool{Name: "test_custom_headers", InputSchema: json.RawMessage(`{"type":"object","properties":{
		"region":{"type":"string","x-mcp-header":"Region"},"priority":{"type":"integer","x-mcp-header":"Priority"},
		"non_ascii_val":{"type":"string","x-mcp-header":"NonAscii"},"float_val":{"type":"number"}}}`)},
		func(ctx context.Context, r *mcpserver.Request) (mcpserver.Reply, error) {
			return mcpserver.Text("ok"), nil
		})
	hs := httptest.NewServer(streamhttp.NewHandler(s, &streamhttp.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}))
	defer hs.Close()

	var log bytes.Buffer
	if err := run(context.Background(), config{url: hs.URL, scenario: "tools_call", log: &log}); err != nil || sum != 5 {
		t.Fatalf("tools_call: %v, sum %v\n%s", err, sum, log.String())
	}
	ctxJSON := `{"name":"http-custom-headers","toolCalls":[{"name":"test_custom_headers","arguments":{"region":"us-west1","priority":42,"non_ascii_val":"Hello, 世界","float_val":3.14159}}]}`
	if err := run(context.Background(), config{url: hs.URL, scenario: "http-custom-headers", context: ctxJSON, log: &log}); err != nil {
		t.Fatalf("http-custom-headers: %v\n%s", err, log.String())
	}
}

func TestFill(t *testing.T) {
	schema := `{"type":"object","properties":{
		"confirmed":{"type":"boolean"},
		"name":{"type":"string","default":"John"},
		"age":{"type":"integer","minimum":18},
		"status":{"type":"string","enum":["active","inactive"]},
		"room":{"type":"string","oneOf":[{"const":"std","title":"Standard"}]},
		"tags":{"type":"array","items":{"type":"string","enum":["a"]}},
		"note":{"type":"string"}}}`
	want := map[string]any{"confirmed": true, "name": "John", "age": 18.0, "status": "active", "room": "std", "tags": []string{}, "note": ""}
	if got := fill(json.RawMessage(schema)); !reflect.DeepEqual(got, want) {
		t.Fatalf("fill = %v, want %v", got, want)
	}
}
