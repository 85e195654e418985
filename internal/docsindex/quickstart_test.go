package docsindex

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/mcp-elicit/elicit/internal/progtest"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpclient"
)

// readmeGoBlock returns the first ```go block after the heading.
func readmeGoBlock(t *testing.T, readme, heading string) string {
	t.Helper()
	_, after, ok := strings.Cut(readme, "\n"+heading+"\n")
	if !ok {
		t.Fatalf("README.md has no %q section", heading)
	}
	_, code, ok := strings.Cut(after, "\n```go\n")
	if !ok {
		t.Fatalf("README.md's %q section has no ```go block", heading)
	}
	code, _, ok = strings.Cut(code, "\n```\n")
	if !ok {
		t.Fatalf("README.md's %q block is not closed", heading)
	}
	return code + "\n"
}

// TestReadmeGoQuickStart: the README's Go quick start is
// examples/quickstart/main.go as it is, and pasted into a module of its
// own that requires this one (replaced by the checkout) it builds, runs
// (on a free port: ADDR=127.0.0.1:0) and serves its tool end to end to
// mcpclient: accept, decline and cancel.
func TestReadmeGoQuickStart(t *testing.T) {
	root := moduleRoot(t)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	code := readmeGoBlock(t, string(readme), "## Go quick start")
	example, err := os.ReadFile(filepath.Join(root, "examples", "quickstart", "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	if code != string(example) {
		t.Errorf("README.md's Go quick start differs from examples/quickstart/main.go; make them equal")
	}

	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	goLine := regexp.MustCompile(`(?m)^go [0-9.]+$`).Find(gomod)
	gosum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	files := map[string]string{
		"main.go": code,
		"go.mod": "module quickstart\n\n" + string(goLine) + "\n\nrequire github.com/mcp-elicit/elicit v0.0.0\n\n" +
			"replace github.com/mcp-elicit/elicit => " + root + "\n",
		"go.sum": string(gosum),
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Build and run it there as a user would, resolving the new module's
	// requirements from the checkout and the module cache only (no network).
	t.Chdir(dir)
	t.Setenv("GOFLAGS", "-mod=mod")
	t.Setenv("GOWORK", "off")
	t.Setenv("GOPROXY", "off")
	endpoint := progtest.Start(t)
	ctx := t.Context()

	for _, tt := range []struct {
		answer  mcp.ElicitResult
		isError bool
		text    string
	}{
		{mcp.ElicitResult{Action: mcp.ActionAccept, Content: map[string]any{"name": "Ada"}}, false, "Hello, Ada!"},
		{mcp.ElicitResult{Action: mcp.ActionDecline}, true, "No greeting: you chose not to give your name."},
		{mcp.ElicitResult{Action: mcp.ActionCancel}, true, "No greeting yet: the question was closed unanswered. Call greet again to answer it."},
	} {
		t.Run(tt.answer.Action, func(t *testing.T) {
			asked := ""
			c := mcpclient.New(endpoint, &mcpclient.Options{Handlers: &mcpclient.Handlers{
				ElicitForm: func(ctx context.Context, who mcpclient.Asker, key string, p *mcp.ElicitRequestParams) (*mcp.ElicitResult, error) {
					asked = who.Server.Name + ": " + p.Message
					a := tt.answer
					return &a, nil
				},
			}})
			res, err := c.CallTool(ctx, "greet", nil)
			if err != nil {
				t.Fatal(err)
			}
			if asked != "greeter: What is your name?" {
				t.Errorf("question = %q", asked)
			}
			if len(res.Content) != 1 || res.Content[0].Text != tt.text || res.IsError != tt.isError {
				t.Errorf("result = %+v, want isError=%v %q", res, tt.isError, tt.text)
			}
		})
	}
}
