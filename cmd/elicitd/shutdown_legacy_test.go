//go:build unix

package main

import (
	"bufio"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestSIGTERMWithLegacySession runs a real elicitd with a 2025-11-25
// session that has an open GET stream and a tools/call waiting on its
// elicitation: SIGTERM closes the session, so the shutdown finishes and
// the process exits 0 (it would wait out --shutdown-timeout and exit 1).
func TestSIGTERMWithLegacySession(t *testing.T) {
	dir, bin := buildElicitd(t)
	addr := freeLoopbackAddr(t)
	proc := startProcess(t, bin, environWithoutElicit(),
		"--addr", addr, "--data", filepath.Join(dir, "data"), "--audit-log", "off", "--shutdown-timeout", "1m")
	cmd, stderr := proc.cmd, proc.out

	url := "http://" + addr + "/mcp"
	do := func(method, session, body string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(method, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer alice")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
			req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	init := do("POST", "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{"form":{},"url":{}}},"clientInfo":{"name":"t","version":"1"}}}`)
	init.Body.Close()
	session := init.Header.Get("Mcp-Session-Id")
	if session == "" {
		t.Fatalf("initialize: HTTP %d, no session", init.StatusCode)
	}
	do("POST", session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`).Body.Close()
	get := do("GET", session, "")
	defer get.Body.Close()
	if get.StatusCode != http.StatusOK {
		t.Fatalf("GET stream: HTTP %d", get.StatusCode)
	}
	call := do("POST", session, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"connect_billing","arguments":{}}}`)
	defer call.Body.Close()
	sc := bufio.NewScanner(call.Body)
	for !strings.Contains(sc.Text(), `"method":"elicitation/create"`) {
		if !sc.Scan() {
			t.Fatalf("the call's stream ended before its prompt: %v", sc.Err())
		}
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// The waiting call is answered before its stream closes.
	const answer = `{"jsonrpc":"2.0","id":2,"error":{"code":-32603,"message":"Session closed: the server is shutting down"}}`
	for sc.Text() != "data: "+answer {
		if !sc.Scan() {
			t.Fatalf("the call's stream ended without %s (%v)", answer, sc.Err())
		}
	}
	if err := proc.wait(); err != nil || cmd.ProcessState.ExitCode() != 0 {
		t.Fatalf("elicitd exit: %v (code %d)\n%s", err, cmd.ProcessState.ExitCode(), stderr.String())
	}
	if log := stderr.String(); !strings.Contains(log, "shutting down") || strings.Contains(log, "did not finish") {
		t.Fatalf("shutdown log:\n%s", log)
	}
}
