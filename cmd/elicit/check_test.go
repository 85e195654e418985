package main

import (
	"bufio"
	"encoding/json"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
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

// TestCheckUnsafeServer proves the checker can fail: the deliberately
// unsafe server fails exactly the cases of its four defects, and passes or
// does not apply to the others. Exit status 1.
func TestCheckUnsafeServer(t *testing.T) {
	endpoint := startUnsafeServer(t)
	code, out, errOut := elicit(t, "", "check", "--url", endpoint, "--tool", "setup_project",
		"--args", `{"project":"demo"}`, "--token", "alice", "--other-token", "bob", "--json")
	if code != exitToolError {
		t.Fatalf("exit %d, want %d; stderr: %s", code, exitToolError, errOut)
	}
	var rep check.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("--json output: %v\n%s", err, out)
	}
	want := map[string]check.Verdict{
		check.CaseCapability:     check.Fail, // no capability check
		check.CaseDecline:        check.Fail, // decline treated as accept
		check.CaseStatePlaintext: check.Fail, // base64 JSON state
		check.CaseFormSecret:     check.Fail, // api_key in a form
		check.CaseStateSegments:  check.NotApplicable,
		check.CaseURLSafe:        check.NotApplicable,
		check.CaseURLNoLogin:     check.NotApplicable,
		check.CaseURLUnfinished:  check.NotApplicable,
	}
	if len(rep.Results) != 21 {
		t.Fatalf("%d results, want 21", len(rep.Results))
	}
	for _, r := range rep.Results {
		w, ok := want[r.ID]
		if !ok {
			w = check.Pass
		}
		if r.Verdict != w {
			t.Errorf("%s: %s, want %s; observed: %s", r.ID, r.Verdict, w, r.Observed)
		}
		if strings.Contains(r.Observed, "alice") || strings.Contains(r.Observed, "bob") {
			t.Errorf("%s: a token in the report: %s", r.ID, r.Observed)
		}
	}
	if p := rep.Result(check.CaseStatePlaintext); p != nil && !strings.Contains(p.Observed, "was ACCEPTED") {
		t.Errorf("the edited (forged) state should have been shown accepted: %s", p.Observed)
	}
}

// TestCheckCommand: the text report against an elicitd-like server (exit
// 0, every case named), and the usage and failure exits.
func TestCheckCommand(t *testing.T) {
	base := newServer(t)
	code, out, errOut := elicit(t, "", "check", "--url", base+"/mcp", "--tool", "export_report",
		"--args", `{"period":"2026-Q2","dataset":"sales"}`, "--token", "alice", "--other-token", "bob")
	if code != exitOK {
		t.Fatalf("exit %d; stderr: %s\n%s", code, errOut, out)
	}
	for _, s := range []string{check.CaseStateBitFlip + " ", "PASS", "21 cases: 17 pass, 0 fail, 4 not applicable, 0 could not test"} {
		if !strings.Contains(out, s) {
			t.Errorf("the report lacks %q:\n%s", s, out)
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
		{[]string{"check", "--url", base + "/mcp", "--tool", "no_such_tool", "--token", "alice"}, exitFailed, "no tool"},
		{[]string{"check", "--url", closed, "--tool", "x"}, exitFailed, ""},
		// A tool that asks for nothing proves nothing: exit 3, not 0.
		{[]string{"check", "--url", base + "/mcp", "--tool", "billing_status", "--token", "alice"}, exitFailed, "nothing was tested"},
	} {
		code, _, errOut := elicit(t, "", tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.msg) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d with %q", tc.args, code, errOut, tc.code, tc.msg)
		}
	}
}
