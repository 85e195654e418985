package streamhttp_test

import (
	"os/exec"
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
