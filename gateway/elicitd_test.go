package gateway

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-elicit/elicit/examples/billing"
	"github.com/mcp-elicit/elicit/examples/reports"
	"github.com/mcp-elicit/elicit/internal/pagetest"
	"github.com/mcp-elicit/elicit/mcp"
)

// The elicitd binary behind the gateway: its own flows (export_report, a
// form; connect_billing, a URL step whose page needs the user to sign in
// at elicitd as the flow's user), with its own demo authentication, so
// the page step only works when the gateway presented the user's own
// identity upstream.

var elicitdBinary struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// elicitdBin builds cmd/elicitd once per test binary (TestMain removes
// it) and returns its path. Skipped in -short.
func elicitdBin(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs an elicitd process; skipped in -short")
	}
	elicitdBinary.once.Do(func() {
		dir, err := os.MkdirTemp("", "gateway-elicitd-")
		if err != nil {
			elicitdBinary.err = err
			return
		}
		elicitdBinary.dir, elicitdBinary.path = dir, filepath.Join(dir, "elicitd")
		if out, err := exec.Command("go", "build", "-o", elicitdBinary.path, "github.com/mcp-elicit/elicit/cmd/elicitd").CombinedOutput(); err != nil {
			elicitdBinary.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if elicitdBinary.err != nil {
		t.Fatal(elicitdBinary.err)
	}
	return elicitdBinary.path
}

// environWithoutElicit is this process's environment without ELICIT_*
// variables, so a child sees only the settings a test gives it.
func environWithoutElicit() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ELICIT_") {
			env = append(env, kv)
		}
	}
	return env
}

// startElicitd runs the elicitd binary on a free loopback port with demo
// authentication and its data in a temporary directory, for the rest of
// t, and returns its MCP endpoint.
func startElicitd(t *testing.T) string {
	t.Helper()
	cmd := exec.Command(elicitdBin(t), "--addr", "127.0.0.1:0", "--data", t.TempDir(), "--auth", "demo",
		"--demo-oauth-addr", "off", "--audit-log", "off")
	cmd.Env = environWithoutElicit()
	return startUntil(t, cmd, cmd.StderrPipe, func(line string) (string, bool) {
		if !strings.Contains(line, `msg="elicitd listening"`) {
			return "", false
		}
		for _, f := range strings.Fields(line) {
			if mcpURL, ok := strings.CutPrefix(f, "mcp="); ok {
				return mcpURL, true
			}
		}
		return "", false
	})
}

// startUntil starts cmd for the rest of t (killed at cleanup) and reads
// the output pipe gives, line by line, until found finds what it wants in
// one; the rest of the output is read and dropped (a full pipe would stop
// the process). The process ending first fails t.
func startUntil(t *testing.T, cmd *exec.Cmd, pipe func() (io.ReadCloser, error), found func(line string) (string, bool)) string {
	t.Helper()
	out, err := pipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := bufio.NewScanner(out)
	var seen []string
	for lines.Scan() {
		seen = append(seen, lines.Text())
		if v, ok := found(lines.Text()); ok {
			go func() { _, _ = io.Copy(io.Discard, out) }()
			return v
		}
	}
	t.Fatalf("%s ended before it said where it listens:\n%s", cmd.Path, strings.Join(seen, "\n"))
	return ""
}

// userTokens is the gateway's credential for each user at an elicitd
// with demo authentication: the user's own name, so each user is
// themselves upstream; the gateway lists the catalog as "gateway".
var userTokens = CredentialsFunc(func(_ context.Context, principal string) (string, error) {
	if principal == CatalogPrincipal {
		return "gateway", nil
	}
	return principal, nil
})

// TestElicitdBehindGateway runs export_report (form) and connect_billing
// (URL: the user signs in on elicitd's page and types the key there)
// through the gateway, accepted, declined and cancelled, from this
// module's client (2026-07-28) and go-sdk's (2025-11-25 session and
// 2026-07-28), with the gateway speaking either revision to elicitd.
// Every call is a new user, so no earlier answer is remembered.
func TestElicitdBehindGateway(t *testing.T) {
	up := startElicitd(t)
	clients := []struct {
		name string
		call func(ctx context.Context, gw, tool string, u user) (string, error)
	}{{"ours-2026", callOurs}, {"gosdk-2025", callGoSDK}, {"gosdk-2026", callGoSDK2026}}
	exportArgs := map[string]any{"period": "2026-Q1", "dataset": "sales"}
	cases := []struct {
		tool   string
		action string
		args   map[string]any
		want   string // the result text starts with it
	}{
		{reports.ToolExport, mcp.ActionAccept, exportArgs, "Draft d_"},
		{reports.ToolExport, mcp.ActionDecline, exportArgs, "isError: " + reports.TextExportDeclined},
		{reports.ToolExport, mcp.ActionCancel, exportArgs, "isError: " + reports.TextExportCancelled},
		{billing.ToolName, mcp.ActionAccept, nil, billing.TextConnected},
		{billing.ToolName, mcp.ActionDecline, nil, "isError: " + billing.TextDeclined},
		{billing.ToolName, mcp.ActionCancel, nil, "isError: " + billing.TextCancelled},
	}
	var n atomic.Int64
	for _, rev := range []string{Revision2026, Revision2025} {
		t.Run("upstream-"+rev, func(t *testing.T) {
			_, gw := startGateway(t, Options{Upstreams: []Upstream{{Name: "elicitd", URL: up, Credentials: userTokens, Revision: rev}}})
			for _, cl := range clients {
				for _, tc := range cases {
					t.Run(cl.name+"/"+tc.tool+"-"+tc.action, func(t *testing.T) {
						who := fmt.Sprintf("user%d", n.Add(1))
						u := user{action: tc.action, who: who, args: tc.args,
							content: map[string]any{"detail": "summary", "label": "through the gateway"},
							page:    func(link string) error { return pagetest.New().FinishKey(link, who, "sk_test_gateway") }}
						// An unfinished page is asked again and again: bounded.
						ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
						defer cancel()
						got, err := cl.call(ctx, gw, tc.tool, u)
						if err != nil || !strings.HasPrefix(got, tc.want) {
							t.Errorf("got %q, %v; want %q…", got, err, tc.want)
						}
					})
				}
			}
		})
	}
}

// TestElicitdPageBoundToUser: the connect_billing link alice gets through
// the gateway is refused to a browser signed in at elicitd as anyone
// else, and completes for alice: the gateway called elicitd as alice,
// not as itself or another user.
func TestElicitdPageBoundToUser(t *testing.T) {
	_, gw := startGateway(t, Options{Upstreams: []Upstream{{Name: "elicitd", URL: startElicitd(t), Credentials: userTokens}}})
	var other error
	u := user{action: mcp.ActionAccept, who: "alice", page: func(link string) error {
		other = pagetest.New().FinishKey(link, "bob", "sk_test_bob")
		return pagetest.New().FinishKey(link, "alice", "sk_test_alice")
	}}
	got, err := callOurs(t.Context(), gw, billing.ToolName, u)
	if err != nil || got != billing.TextConnected {
		t.Fatalf("alice: %q, %v", got, err)
	}
	if other == nil || !strings.Contains(other.Error(), "403") {
		t.Errorf("bob at alice's link: %v, want a 403", other)
	}
	// bob's own call asks him anew: alice's key is hers.
	bob := user{action: mcp.ActionDecline, who: "bob"}
	if got, err := callOurs(t.Context(), gw, billing.ToolName, bob); err != nil || got != "isError: "+billing.TextDeclined {
		t.Errorf("bob: %q, %v", got, err)
	}
}
