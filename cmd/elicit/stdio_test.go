package main

// elicit call --command against stdio servers of other SDKs, each with a
// multi round-trip tool: go-sdk v1.8.0 (this test binary, started again as
// the server) and the TypeScript SDK v2 (npm, installed at test time).

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-elicit/elicit/internal/npmtest"
)

// peerEnv makes this test binary a go-sdk stdio server (TestMain, in
// login_test.go, runs gosdkPeer instead of the tests).
const peerEnv = "ELICIT_TEST_GOSDK_PEER"

// gosdkPeer serves, on stdin/stdout with go-sdk's StdioTransport, greet:
// a tool that answers input_required with a form-mode elicitation (the
// 2026-07-28 multi round-trip), then greets the name it got back.
func gosdkPeer() int {
	s := sdk.NewServer(&sdk.Implementation{Name: "gosdk-peer", Version: "v1.8.0"}, nil)
	s.AddTool(&sdk.Tool{Name: "greet", Description: "Asks your name, then greets you.", InputSchema: map[string]any{"type": "object"}},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			if r, ok := req.Params.InputResponses["who"].(*sdk.ElicitResult); ok {
				if r.Action != "accept" {
					return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "No name, no greeting."}}}, nil
				}
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: fmt.Sprintf("Hello, %v, from go-sdk!", r.Content["name"])}}}, nil
			}
			return &sdk.CallToolResult{InputRequests: sdk.InputRequestMap{"who": &sdk.ElicitParams{
				Message: "What is your name?",
				RequestedSchema: map[string]any{"type": "object", "required": []string{"name"},
					"properties": map[string]any{"name": map[string]any{"type": "string", "title": "Your name", "minLength": 1}}},
			}}}, nil
		})
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	if err := s.Run(ctx, &sdk.StdioTransport{}); err != nil && ctx.Err() == nil {
		fmt.Fprintln(os.Stderr, "gosdk-peer:", err)
		return 1
	}
	return 0
}

// TestCallCommandPeers: elicit call greet -- <server> answers the form on
// the terminal (line mode), and the peer greets the name; :decline ends
// with the peer's refusal (exit 1); elicit tools lists the tool.
func TestCallCommandPeers(t *testing.T) {
	if testing.Short() && !npmtest.Required() {
		t.Skip("launches server processes")
	}
	t.Setenv(peerEnv, "1")
	for _, name := range []string{"go-sdk", "typescript-sdk"} {
		t.Run(name, func(t *testing.T) {
			var command []string
			if name == "go-sdk" {
				command = []string{os.Args[0]}
			} else {
				command = []string{"node", npmtest.Script(t, filepath.Join("testdata", "ts_stdio_server.mjs"), "@modelcontextprotocol/server@2.4.0")}
			}
			args := append([]string{"call", "greet", "--"}, command...)
			code, out, errOut := elicit(t, "Ada\nsubmit\n", args...)
			if code != exitOK {
				t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
			}
			for _, want := range []string{"What is your name?", "Server:   " + strings.Join(command, " ") + " — the local program this host started", "Hello, Ada, from "} {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
			code, out, errOut = elicit(t, ":decline\n", args...)
			if code != exitToolError || !strings.Contains(out, "No name, no greeting.") {
				t.Fatalf("decline: exit %d\n%s\n%s", code, out, errOut)
			}
			code, out, errOut = elicit(t, "", append([]string{"tools", "--"}, command...)...)
			if code != exitOK || !strings.Contains(out, "greet") {
				t.Fatalf("tools: exit %d\n%s\n%s", code, out, errOut)
			}
		})
	}
}

// TestCallCommandFails: a command that cannot start, or exits at once, is
// reported with exit status 3 and the command's name.
func TestCallCommandFails(t *testing.T) {
	code, _, errOut := elicit(t, "", "tools", "--command", "/nonexistent/server --stdio")
	if code != exitFailed || !strings.Contains(errOut, "/nonexistent/server --stdio") {
		t.Fatalf("missing program: exit %d: %s", code, errOut)
	}
	code, _, errOut = elicit(t, "", "tools", "--", "false")
	if code != exitFailed || !strings.Contains(errOut, "the command false") || !strings.Contains(errOut, "exit status 1") {
		t.Fatalf("exiting program: exit %d: %s", code, errOut)
	}
}
