package docsindex

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestURLStepSnippet: the first Go block of docs/url-step.md compiles as
// the body of a main function, with nothing left undefined. It is built
// through a -overlay file, so nothing is written into the checkout.
func TestURLStepSnippet(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go build; skipped in -short")
	}
	root := moduleRoot(t)
	doc, err := os.ReadFile(filepath.Join(root, "docs", "url-step.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(doc), "\n```go\n")
	if !ok {
		t.Fatal("docs/url-step.md has no ```go block")
	}
	block, _, _ = strings.Cut(block, "\n```\n")
	src := `package main

import (
	"log"
	"net/http"

	"github.com/mcp-elicit/elicit/auth"
	"github.com/mcp-elicit/elicit/connect"
	"github.com/mcp-elicit/elicit/connect/datadir"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpserver"
	"github.com/mcp-elicit/elicit/streamhttp"
)

func main() {
` + block + "\n}\n"
	dir := t.TempDir()
	file := filepath.Join(dir, "main.go")
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	overlay, _ := json.Marshal(map[string]map[string]string{"Replace": {
		filepath.Join(root, "internal", "docsindex", "testdata", "urlstep", "main.go"): file}})
	if err := os.WriteFile(filepath.Join(dir, "overlay.json"), overlay, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "build", "-overlay", filepath.Join(dir, "overlay.json"), "-o", os.DevNull, "./internal/docsindex/testdata/urlstep")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("docs/url-step.md's Go block does not compile: %v\n%s\n%s", err, out, src)
	}
}
