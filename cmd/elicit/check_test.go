package main

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mcp-elicit/elicit/check"
)

// startUnsafeServer builds and starts check/testdata/unsafeserver on a
// loopback port and returns its MCP endpoint.
func startUnsafeServer(t *testing.T) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go tool is needed to build the unsafe test server: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "unsafeserver")
	if out, err := exec.Command(goTool, "build", "-o", bin, "../../check/testdata/unsafeserver").CombinedOutput(); err != nil {
		t.Fatalf("building the unsafe server: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "--addr", "127.0.0.1:0")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	endpoint, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on ")
	if err != nil || !ok {
		t.Fatalf("the unsafe server said %q (%v)", line, err)
	}
	return endpoint
}

// TestCheckUnsafeServer proves the checker can fail: each tool of the
// deliberately unsafe server fails exactly the cases of its defects, and
// passes or does not apply to the others. Exit status 1.
func TestCheckUnsafeServer(t *testing.T) {
	endpoint := startUnsafeServer(t)
	for _, tc := range []struct {
		tool   string
		forged bool                     // an edited state is accepted
		want   map[string]check.Verdict // the cases that do not pass
	}{
		{"setup_project", true, map[string]check.Verdict{
			check.CaseCapability:     check.Fail, // no capability check
			check.CaseDecline:        check.Fail, // decline treated as accept
			check.CaseStatePlaintext: check.Fail, // base64 JSON state
			check.CaseFormSecret:     check.Fail, // api_key in a form
			check.CaseStateSegments:  check.NotApplicable,
			check.CaseURLSafe:        check.NotApplicable,
			check.CaseURLNoLogin:     check.NotApplicable,
			check.CaseURLUnfinished:  check.NotApplicable,
		}},
		// Its flow id must be the user's own, so an edited state naming
		// another user is refused, readable as it is.
		{"link_account", false, map[string]check.Verdict{
			check.CaseCapability:     check.Fail, // no capability check
			check.CaseDecline:        check.Fail, // decline treated as accept: asked again without end
			check.CaseStatePlaintext: check.Fail, // base64 JSON state
			check.CaseURLNoLogin:     check.Fail, // the link signs in without a login
			check.CaseStateSegments:  check.NotApplicable,
			check.CaseFormInvalid:    check.NotApplicable,
			check.CaseFormSecret:     check.NotApplicable,
		}},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			code, out, errOut := elicit(t, "", "check", "--url", endpoint, "--tool", tc.tool,
				"--args", `{"project":"demo"}`, "--token", "alice-token", "--other-token", "bob-token", "--allow-effects", "--json")
			if code != exitToolError {
				t.Fatalf("exit %d, want %d; stderr: %s", code, exitToolError, errOut)
			}
			var rep check.Report
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				t.Fatalf("--json output: %v\n%s", err, out)
			}
			if len(rep.Results) != 21 {
				t.Fatalf("%d results, want 21", len(rep.Results))
			}
			for _, r := range rep.Results {
				w, ok := tc.want[r.ID]
				if !ok {
					w = check.Pass
				}
				if r.Verdict != w {
					t.Errorf("%s: %s, want %s; observed: %s", r.ID, r.Verdict, w, r.Observed)
				}
				// Tokens of check.MinMaskedToken characters or more are never
				// shown, even where the server echoes them.
				if strings.Contains(r.Observed, "alice") || strings.Contains(r.Observed, "bob") {
					t.Errorf("%s: a token in the report: %s", r.ID, r.Observed)
				}
			}
			// The wait of a URL-mode accept is announced on stderr.
			if note := "elicit check: " + check.WaitNote + "\n"; strings.Contains(errOut, note) != (tc.tool == "link_account") {
				t.Errorf("stderr %q: the wait note should be there only for the URL tool", errOut)
			}
			if p := rep.Result(check.CaseStatePlaintext); p != nil && tc.forged != strings.Contains(p.Observed, "was ACCEPTED") {
				t.Errorf("the edited (forged) state accepted should be %v: %s", tc.forged, p.Observed)
			}
		})
	}
}

// TestCheckCommand: the text report against an elicitd-like server (exit
// 0, every case named; with --allow-effects the two cases that complete
// the tool run too, and the drafts they left are named), and the usage
// and failure exits.
func TestCheckCommand(t *testing.T) {
	base := newServer(t)
	for _, tc := range []struct {
		flags []string
		says  []string
	}{
		{nil, []string{"effects:  not allowed", "left:     nothing completed", "NOT RUN", "not run without --allow-effects: a refusal of an invalid answer",
			"21 cases: 15 pass, 0 fail, 4 not applicable, 0 could not test, 2 not run without --allow-effects"}},
		{[]string{"--allow-effects"}, []string{"effects:  ALLOWED", "completed operations, each with export_report's effect", `"Draft d_`,
			"21 cases: 17 pass, 0 fail, 4 not applicable, 0 could not test\n"}},
	} {
		code, out, errOut := elicit(t, "", append([]string{"check", "--url", base + "/mcp", "--tool", "export_report",
			"--args", `{"period":"2026-Q2","dataset":"sales"}`, "--token", "alice", "--other-token", "bob"}, tc.flags...)...)
		if code != exitOK {
			t.Fatalf("%v: exit %d; stderr: %s\n%s", tc.flags, code, errOut, out)
		}
		for _, s := range append([]string{check.CaseStateBitFlip + " ", "PASS"}, tc.says...) {
			if !strings.Contains(out, s) {
				t.Errorf("%v: the report lacks %q:\n%s", tc.flags, s, out)
			}
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String() + "/mcp"
	ln.Close()
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"check", "--tool", "x"}, exitUsage, "--url is required"},
		{[]string{"check", "--url", base + "/mcp"}, exitUsage, "--tool is required"},
		{[]string{"check", "--url", "ftp://h/mcp", "--tool", "x"}, exitUsage, "not an http(s) URL"},
		{[]string{"check", "--url", base + "/mcp", "--tool", "x", "--args", "[1]"}, exitUsage, "--args must be a JSON object"},
		{[]string{"check", "--url", base + "/mcp", "--tool", "x", "--token", "a", "--other-token", "a"}, exitUsage, "must differ"},
		{[]string{"check", "--url", base + "/mcp", "--tool", "x", "--timeout", "0"}, exitUsage, "--timeout must be more than 0"},
		{[]string{"check", "--url", base + "/mcp", "--tool", "x", "--timeout", "-1s"}, exitUsage, "--timeout must be more than 0"},
		{[]string{"check", "--url", base + "/mcp", "--tool", "x", "--fetch-links", "some"}, exitUsage, "--fetch-links must be never, safe or any"},
		{[]string{"check", "--url", base + "/mcp", "--tool", "no_such_tool", "--token", "alice"}, exitFailed, "no tool"},
		{[]string{"check", "--url", base + "/mcp", "--tool", "export_report", "--token", "alice", "--other-tool", "nope"}, exitFailed, `no tool "nope" on the server`},
		{[]string{"check", "--url", closed, "--tool", "x"}, exitFailed, ""},
		// A tool that asks for nothing proves nothing: exit 3, not 0.
		{[]string{"check", "--url", base + "/mcp", "--tool", "billing_status", "--token", "alice"}, exitFailed, "nothing was tested"},
	} {
		code, _, errOut := elicit(t, "", tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.msg) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d with %q", tc.args, code, errOut, tc.code, tc.msg)
		}
	}
	// With --json a usage error, like an exit-3 error, leaves one JSON
	// error object on stdout, wherever --json stands.
	for _, args := range [][]string{
		{"check", "--json", "--tool", "x"},
		{"check", "--url", base + "/mcp", "--tool", "x", "--args", "[1]", "--json"},
		{"check", "--url", base + "/mcp", "--tool", "x", "--timeout", "soon", "--json"},
		{"check", "--url", base + "/mcp", "--no-such-flag", "--json"},
		{"check", "--json", "--url", base + "/mcp", "--tool", "x", "stray"},
	} {
		code, out, errOut := elicit(t, "", args...)
		var doc struct {
			Error struct{ Kind, Message string }
		}
		if err := json.Unmarshal([]byte(out), &doc); err != nil || code != exitUsage || doc.Error.Kind != "usage" ||
			doc.Error.Message == "" || !strings.Contains(errOut, doc.Error.Message) {
			t.Errorf("%v: exit %d, stdout %q (%v), stderr %q; want exit 2 and a usage error object", args, code, out, err, errOut)
		}
	}
}

// TestCheckRefusesUserinfo: credentials in --url are a usage error (net/http
// would send them as HTTP Basic, MCP takes a bearer token), with the
// password masked, even in a URL that does not parse; the server is never
// contacted.
func TestCheckRefusesUserinfo(t *testing.T) {
	const pw = "SECRETAPW"
	var hits atomic.Int32
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.Error(w, "you sent "+r.Header.Get("Authorization"), 401)
	}))
	t.Cleanup(hs.Close)
	host := strings.TrimPrefix(hs.URL, "http://")
	basic := base64.StdEncoding.EncodeToString([]byte("u:" + pw))
	for _, u := range []string{
		"http://u:" + pw + "@" + host + "/mcp",
		"http://u:SECRET PW@" + host + "/mcp",
		"http://u:" + pw + "@" + host,
		"http://u:a@" + pw + "@" + host + "/mcp",
		"http://" + pw + "@" + host + "/mcp",
	} {
		for _, asJSON := range []bool{false, true} {
			args := []string{"check", "--url", u, "--tool", "t"}
			if asJSON {
				args = append(args, "--json")
			}
			code, out, errOut := elicit(t, "", args...)
			if code != exitUsage || !strings.Contains(errOut, "put credentials in --token") {
				t.Errorf("%q json %v: exit %d, stderr %q; want exit 2 saying to use --token", u, asJSON, code, errOut)
			}
			if !strings.Contains(errOut, "xxxxx@") {
				t.Errorf("%q: stderr %q does not show the masked URL", u, errOut)
			}
			for _, secret := range []string{pw, "SECRET PW", "SECRET", basic} {
				if strings.Contains(out+errOut, secret) {
					t.Errorf("%q json %v: %q shown:\nstdout: %s\nstderr: %s", u, asJSON, secret, out, errOut)
				}
			}
		}
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the server got %d requests", n)
	}
}

// answering starts a server that answers every request with status,
// content type and body; body may use %s for the request's Authorization
// header (a server that echoes it).
func answering(t *testing.T, status int, ctype, body string) string {
	t.Helper()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", ctype)
		w.WriteHeader(status)
		if strings.Contains(body, "%s") {
			fmt.Fprintf(w, body, r.Header.Get("Authorization"))
			return
		}
		fmt.Fprint(w, body)
	}))
	t.Cleanup(hs.Close)
	return hs.URL + "/mcp"
}

// TestCheckCannotStart: a refused token or a server that is not MCP is a
// run that could not start: exit 3 with a message saying which, and with
// --json a JSON error object on stdout.
func TestCheckCannotStart(t *testing.T) {
	t.Setenv("ELICIT_TOKEN", "")
	const rpcNo = `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"no"}}`
	for _, tc := range []struct {
		name  string
		url   string
		token []string
		kind  string
		says  string
	}{
		{"401 with a token", answering(t, 401, "application/json", rpcNo), []string{"--token", "alice"}, check.KindTokenRefused, "the server refused the token: HTTP 401 on server/discover"},
		{"401 without a token", answering(t, 401, "application/json", rpcNo), nil, check.KindTokenRefused, "the server requires a token: HTTP 401 on server/discover, and none was given; pass --token or set ELICIT_TOKEN"},
		{"403", answering(t, 403, "application/json", rpcNo), []string{"--token", "alice"}, check.KindTokenRefused, "HTTP 403"},
		{"HTML 403 (a login page's CSRF refusal)", answering(t, 403, "text/html; charset=utf-8", "<!doctype html><p>CSRF check failed</p>"), []string{"--token", "alice"}, check.KindNotMCP, "not an MCP endpoint: HTTP 403 text/html"},
		{"an HTML page", answering(t, 200, "text/html", "<html>hello</html>"), []string{"--token", "alice"}, check.KindNotMCP, "not an MCP endpoint: HTTP 200 text/html"},
		{"404", answering(t, 404, "text/plain", "404 page not found"), []string{"--token", "alice"}, check.KindNotMCP, "not an MCP endpoint: HTTP 404"},
		{"500", answering(t, 500, "text/plain", "oops"), []string{"--token", "alice"}, check.KindNotMCP, "not an MCP endpoint: HTTP 500"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"check", "--url", tc.url, "--tool", "t"}, tc.token...)
			code, out, errOut := elicit(t, "", args...)
			if code != exitFailed || !strings.Contains(errOut, tc.says) || out != "" {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit 3 saying %q", code, out, errOut, tc.says)
			}
			code, out, errOut = elicit(t, "", append(args, "--json")...)
			var doc struct {
				Error struct{ Kind, Message string }
			}
			if err := json.Unmarshal([]byte(out), &doc); err != nil || code != exitFailed || doc.Error.Kind != tc.kind ||
				!strings.Contains(doc.Error.Message, tc.says) || !strings.Contains(errOut, tc.says) {
				t.Errorf("--json: exit %d, stdout %q (%v), stderr %q; want kind %s", code, out, err, errOut, tc.kind)
			}
		})
	}
}

// TestCheckRedactsSecrets: a server that echoes the Authorization header
// in its errors, and a URL with a password, leak neither token nor
// password on stdout or stderr, in text or JSON.
func TestCheckRedactsSecrets(t *testing.T) {
	const tok = "SuperSecret99"
	echoRPC := `{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"bad token %s"}}`
	// A server answering discovery but echoing on tools/list.
	listEcho := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		w.Header().Set("Content-Type", "application/json")
		if req.Method == "server/discover" {
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"ttlMs":0,"cacheScope":"private"}}`, req.ID)
			return
		}
		w.WriteHeader(400)
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32000,"message":"bad token %s"}}`, req.ID, r.Header.Get("Authorization"))
	}))
	t.Cleanup(listEcho.Close)
	for _, tc := range []struct {
		name string
		url  string
		code int
		out  string // on stdout without --json
	}{
		{"tools/list echoes the token", listEcho.URL + "/mcp", exitFailed, ""},
		{"discovery echoes the token", answering(t, 400, "application/json", echoRPC), exitFailed, "(server/discover failed, protocol"},
		{"a page echoes the token", answering(t, 200, "text/html", "<p>you sent %s</p>"), exitFailed, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, asJSON := range []bool{false, true} {
				args := []string{"check", "--url", tc.url, "--tool", "t", "--token", tok}
				if asJSON {
					args = append(args, "--json")
				}
				code, out, errOut := elicit(t, "", args...)
				if code != tc.code {
					t.Errorf("json %v: exit %d, want %d; stderr %q", asJSON, code, tc.code, errOut)
				}
				for _, secret := range []string{tok, tok[:6]} {
					if strings.Contains(out+errOut, secret) {
						t.Errorf("json %v: %q shown:\nstdout: %s\nstderr: %s", asJSON, secret, out, errOut)
					}
				}
				if !asJSON && !strings.Contains(out, tc.out) {
					t.Errorf("stdout %q lacks %q", out, tc.out)
				}
				if tc.out != "" && !strings.Contains(errOut, "nothing was tested: no case passed or failed (server/discover failed") {
					t.Errorf("stderr %q does not say discovery failed", errOut)
				}
			}
		})
	}
}
