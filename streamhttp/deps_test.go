package streamhttp_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A server that imports streamhttp links none of the modules that only
// some servers need: the OIDC, JOSE and OAuth 2.0 client libraries come
// with auth/jwtauth, and the browser and chart libraries are for tests
// and benchmarks.
func TestDependencies(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command to list the dependencies: %v", err)
	}
	out, err := exec.Command(goBin, "list", "-deps", "-f", "{{with .Module}}{{.Path}}{{end}}", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	modules := map[string]bool{}
	for m := range strings.FieldsSeq(string(out)) {
		modules[m] = true
	}
	if !modules["github.com/mcp-elicit/elicit"] {
		t.Fatalf("go list printed no module of ours:\n%s", out)
	}
	for _, denied := range []string{
		"github.com/coreos/go-oidc", "github.com/go-jose/", "golang.org/x/oauth2",
		"github.com/chromedp/", "gonum.org/",
	} {
		for m := range modules {
			if strings.HasPrefix(m, denied) {
				t.Errorf("streamhttp depends on %s", m)
			}
		}
	}
}

// A module that uses only streamhttp and mcpserver resolves none of the
// modules the rest of this module needs at run time (go-sdk for legacy,
// the SQLite and PostgreSQL drivers, OIDC) or only for tests and
// benchmarks (chromedp, gonum): module graph pruning keeps them out of
// its go.sum, so its build neither downloads nor verifies them. The
// throwaway module replaces this one with the checkout and resolves
// offline, from the module cache that building this module filled.
func TestLibraryUserResolves(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command: %v", err)
	}
	root, err := exec.Command(goBin, "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	dir := t.TempDir()
	files := map[string]string{
		"go.mod": "module example.com/user\n\ngo 1.26\n\nrequire github.com/mcp-elicit/elicit v0.0.0\n\nreplace github.com/mcp-elicit/elicit => " + strings.TrimSpace(string(root)) + "\n",
		"main.go": `package main

import (
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpserver"
	"github.com/mcp-elicit/elicit/streamhttp"
)

func main() { _ = streamhttp.NewHandler(mcpserver.New(mcp.Implementation{}, nil), nil) }
`,
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tidy := exec.Command(goBin, "mod", "tidy")
	tidy.Dir = dir
	tidy.Env = append(os.Environ(), "GOPROXY=off", "GOSUMDB=off", "GOFLAGS=-mod=mod", "GOWORK=off")
	if out, err := tidy.CombinedOutput(); err != nil {
		if strings.Contains(string(out), "GOPROXY=off") {
			t.Skipf("a module is not in the module cache (resolving offline):\n%s", out)
		}
		t.Fatalf("go mod tidy: %v\n%s", err, out)
	}
	sum, err := os.ReadFile(filepath.Join(dir, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	for _, denied := range []string{
		"github.com/modelcontextprotocol/go-sdk", "github.com/chromedp/", "gonum.org/",
		"github.com/coreos/go-oidc", "github.com/go-jose/", "golang.org/x/oauth2",
		"github.com/jackc/pgx", "modernc.org/sqlite", "github.com/prometheus/",
	} {
		if strings.Contains(string(sum), denied) {
			t.Errorf("a streamhttp user's go.sum holds %s:\n%s", denied, sum)
		}
	}
}
