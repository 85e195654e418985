package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpclient"
)

// stdioChildEnv makes the test binary run the fixture server on stdio
// (TestMain), as everything-server --stdio does.
const stdioChildEnv = "EVERYTHING_SERVER_STDIO_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(stdioChildEnv) == "1" {
		if err := runStdio("", slog.New(slog.NewTextHandler(os.Stderr, nil))); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func stdioCommand(t *testing.T) *exec.Cmd {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a server process")
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), stdioChildEnv+"=1")
	return cmd
}

// TestStdioFixtures: the fixtures on stdio, 2026-07-28 (mcpclient, with
// the MRTR input loop and progress) and 2025-11-25 (go-sdk, the bridge).
func TestStdioFixtures(t *testing.T) {
	t.Run("2026-07-28", func(t *testing.T) {
		var progress int
		c, err := mcpclient.NewCommand(t.Context(), stdioCommand(t), &mcpclient.Options{
			Logger:     slog.New(slog.NewTextHandler(io.Discard, nil)),
			OnProgress: func(mcpclient.Progress) { progress++ },
			Handlers: &mcpclient.Handlers{ElicitForm: func(context.Context, mcpclient.Asker, string, *mcp.ElicitRequestParams) (*mcp.ElicitResult, error) {
				return &mcp.ElicitResult{Action: mcp.ActionAccept, Content: map[string]any{"name": "Ada"}}, nil
			}},
		})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		for tool, want := range map[string]string{
			"test_simple_text":                       simpleText,
			"test_input_required_result_elicitation": "Hello, Ada!",
			"test_tool_with_progress":                "",
		} {
			res, err := c.CallTool(t.Context(), tool, nil)
			if err != nil {
				t.Fatalf("%s: %v", tool, err)
			}
			if want != "" && res.Content[0].Text != want {
				t.Fatalf("%s: %q", tool, res.Content[0].Text)
			}
		}
		if progress != 3 {
			t.Fatalf("%d progress notifications, want 3", progress)
		}
		p, err := c.GetPrompt(t.Context(), "test_simple_prompt", nil)
		if err != nil || len(p.Messages) == 0 {
			t.Fatalf("prompt: %v %+v", err, p)
		}
		if err := c.Close(); err != nil {
			t.Fatalf("close: %v", err)
		}
	})
	t.Run("2025-11-25", func(t *testing.T) {
		client := sdk.NewClient(&sdk.Implementation{Name: "gosdk", Version: "v1.8.0"}, &sdk.ClientOptions{
			ElicitationHandler: func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
				return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
			}})
		cs, err := client.Connect(t.Context(), &sdk.CommandTransport{Command: stdioCommand(t)}, &sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		if v := cs.InitializeResult().ProtocolVersion; v != "2025-11-25" {
			t.Fatalf("negotiated %s", v)
		}
		res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "test_input_required_result_elicitation", Arguments: map[string]any{}})
		if err != nil {
			t.Fatal(err)
		}
		if got := res.Content[0].(*sdk.TextContent).Text; !strings.Contains(got, "Ada") {
			t.Fatalf("result %q", got)
		}
	})
}
