package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcp-elicit/elicit/auth"
	"github.com/mcp-elicit/elicit/connect"
	"github.com/mcp-elicit/elicit/examples/billing"
	"github.com/mcp-elicit/elicit/examples/reports"
	"github.com/mcp-elicit/elicit/internal/mcptest"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpserver"
	"github.com/mcp-elicit/elicit/reqstate"
	"github.com/mcp-elicit/elicit/reqstate/keyring"
	"github.com/mcp-elicit/elicit/store/sqlite"
	"github.com/mcp-elicit/elicit/streamhttp"
)

// newServer serves the billing and reports apps the way elicitd does,
// on a loopback port, and returns its origin.
func newServer(t *testing.T) string {
	return newServerWith(t, func(string) (auth.Authenticator, map[string]http.Handler) {
		return auth.DemoBearer{Realm: "test"}, nil
	})
}

// newServerWith is newServer with the authenticator and the extra routes
// (such as the protected resource metadata) that authn makes for the
// origin.
func newServerWith(t *testing.T, authn func(base string) (auth.Authenticator, map[string]http.Handler)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	authenticator, routes := authn(base)
	dir := t.TempDir()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	master, err := keyring.LoadOrCreateMasterKey(dir)
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(filepath.Join(dir, "test.db"))
	if err != nil {
		t.Fatal(err)
	}
	flows, err := connect.New(connect.Options{Store: st, MasterKey: master, BaseURL: base, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	sealer, err := reqstate.New([]reqstate.Key{{ID: "k1", Secret: make([]byte, 32)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := mcpserver.New(mcp.Implementation{Name: "testd", Version: "1", Title: "test server"}, &mcpserver.Options{Sealer: sealer, Logger: logger})
	billing.New(flows).Register(srv)
	reports.New(flows, st, logger).Register(srv)
	hosts := []string{"127.0.0.1"}
	mux := http.NewServeMux()
	mux.Handle("/mcp", streamhttp.NewHandler(srv, &streamhttp.Options{Auth: authenticator, AllowedHosts: hosts, Logger: logger}))
	for pattern, h := range routes {
		mux.Handle(pattern, h)
	}
	mux.Handle("/ui/", streamhttp.AllowHosts(hosts, flows.Handler()))
	ts := &httptest.Server{Listener: ln, Config: &http.Server{Handler: mux}}
	ts.Start()
	t.Cleanup(func() { ts.Close(); st.Close() })
	return base
}

// syncBuffer collects a stream written by several goroutines.
type syncBuffer = mcptest.SyncBuffer

// elicit runs the program with input and returns its exit status, stdout
// and stderr.
func elicit(t *testing.T, input string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var stdout, stderr strings.Builder
	code := run(ctx, args, strings.NewReader(input), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func TestToolsCommand(t *testing.T) {
	base := newServer(t)
	code, out, errOut := elicit(t, "", "tools", "--url", base+"/mcp", "--token", "alice")
	if code != exitOK || !strings.Contains(out, "connect_billing") || !strings.Contains(out, "export_report") {
		t.Fatalf("tools: %d\n%s\n%s", code, out, errOut)
	}
	code, out, _ = elicit(t, "", "tools", "--url", base+"/mcp", "--token", "alice", "--json")
	var list struct{ Tools []*mcp.Tool }
	if code != exitOK || json.Unmarshal([]byte(out), &list) != nil || len(list.Tools) == 0 {
		t.Fatalf("tools --json: %d\n%s", code, out)
	}
}

// A form in line mode: numbered prompts on stdout, answers from stdin,
// the review, then the result's text.
func TestCallFormLineMode(t *testing.T) {
	base := newServer(t)
	args := []string{"call", reports.ToolExport, "--url", base + "/mcp", "--token", "alice", "--arg", "period=2026-Q2", "--arg", "dataset=sales"}

	code, out, errOut := elicit(t, "2\nQ2 revenue\nsubmit\n", args...)
	if code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{"Server:   127.0.0.1:", `"test server" (testd 1) — self-reported, not verified`,
		"1/2 ", "2/2 ", "Review your answers:", `2. Label: "Q2 revenue"`} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if !regexp.MustCompile(`(?m)^Draft d_\S+ prepared: .*"Q2 revenue".*$`).MatchString(out) {
		t.Errorf("no draft text:\n%s", out)
	}

	// Decline and cancel are distinct, and both are isError.
	code, declined, _ := elicit(t, ":decline\n", args...)
	if code != exitToolError {
		t.Errorf("decline: exit %d\n%s", code, declined)
	}
	code, cancelled, _ := elicit(t, "2\nx\ncancel\n", args...)
	if code != exitToolError || lastOf(declined) == lastOf(cancelled) {
		t.Errorf("cancel: exit %d, same text as decline?\n%s\n---\n%s", code, declined, cancelled)
	}

	// --json: stdout is the result alone; the form went to stderr.
	code, raw, questions := elicit(t, "1\nq\nsubmit\n", append(args, "--json")...)
	var res mcp.CallToolResult
	if code != exitOK || json.Unmarshal([]byte(raw), &res) != nil || res.ResultType != "complete" || !strings.Contains(questions, "Review your answers:") {
		t.Errorf("--json: %d\n%s\n---\n%s", code, raw, questions)
	}
}

func lastOf(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// URL mode in line mode: decline ends with the server's decline text;
// accept after the page step ends with success, and the key never reaches
// the client.
func TestCallURLLineMode(t *testing.T) {
	base := newServer(t)
	args := []string{"call", billing.ToolName, "--url", base + "/mcp", "--token", "alice"}

	code, out, _ := elicit(t, "decline\n", args...)
	if code != exitToolError || lastOf(out) != billing.TextDeclined {
		t.Fatalf("decline: exit %d\n%s", code, out)
	}

	// The user reads the URL, finishes the page, then accepts.
	inR, inW := io.Pipe()
	stdout := &syncBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- run(context.Background(), args, inR, stdout, io.Discard)
	}()
	var link string
	deadline := time.Now().Add(10 * time.Second)
	re := regexp.MustCompile(`URL:\s+(http://127\.0\.0\.1:\d+/ui/set_api_key\?flow=[0-9a-f]{32})`)
	for link == "" && time.Now().Before(deadline) {
		if m := re.FindStringSubmatch(stdout.String()); m != nil {
			link = m[1]
		}
		time.Sleep(20 * time.Millisecond)
	}
	if link == "" {
		t.Fatalf("no URL shown:\n%s", stdout)
	}
	completePage(t, base, link, "alice", "sk_test_line_0123456789")
	io.WriteString(inW, "accept\n\n")
	if code := <-done; code != exitOK || lastOf(stdout.String()) != billing.TextConnected {
		t.Fatalf("accept: exit %d\n%s", code, stdout)
	}
	if strings.Contains(stdout.String(), "sk_test_line") {
		t.Fatal("the key reached the client")
	}
}

func TestCallErrors(t *testing.T) {
	// A port nothing listens on.
	down := freeAddr(t)
	code, _, errOut := elicit(t, "", "call", "x", "--url", "http://"+down+"/mcp")
	if code != exitFailed || !strings.Contains(errOut, "connection refused. Is it running?") {
		t.Errorf("server down: %d %q", code, errOut)
	}

	// A server that speaks only another version.
	old := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"error":{"code":-32022,"message":"Unsupported protocol version","data":{"supported":["2025-11-25"],"requested":"2026-07-28"}}}`)
	}))
	defer old.Close()
	code, _, errOut = elicit(t, "", "call", "x", "--url", old.URL+"/mcp")
	if code != exitFailed || !strings.Contains(errOut, "does not speak MCP 2026-07-28: it serves 2025-11-25") {
		t.Errorf("old server: %d %q", code, errOut)
	}

	// A server that needs roots, which this client declares only with --root.
	needRoots := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ID json.RawMessage `json:"id"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(req.ID)+`,"error":{"code":-32021,"message":"Missing required client capability","data":{"requiredCapabilities":{"roots":{}}}}}`)
	}))
	defer needRoots.Close()
	code, _, errOut = elicit(t, "", "call", "x", "--url", needRoots.URL+"/mcp")
	if code != exitFailed || !strings.Contains(errOut, `needs the client capability {"roots":{}}`) || !strings.Contains(errOut, "--root PATH") {
		t.Errorf("missing capability: %d %q", code, errOut)
	}

	// An unknown tool is a protocol error, not a tool error.
	base := newServer(t)
	code, _, errOut = elicit(t, "", "call", "no_such_tool", "--url", base+"/mcp", "--token", "alice")
	if code != exitFailed || !strings.Contains(errOut, "-32602") {
		t.Errorf("unknown tool: %d %q", code, errOut)
	}
}
