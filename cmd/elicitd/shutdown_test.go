//go:build unix

package main

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// waitFor polls cond until it holds, failing after a generous deadline
// (a hang guard, not a timing assertion).
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestSIGTERMFinishesInFlightRequest runs a real elicitd (test build, with
// the test_block tool): a request is in flight, SIGTERM arrives, the
// listener closes, the request is released and completes with 200, and
// the process exits 0.
func TestSIGTERMFinishesInFlightRequest(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs an elicitd process; skipped in -short")
	}
	dir, bin := t.TempDir(), testBinary.get(t, "-tags", "elicitd_testhooks")
	fifo := filepath.Join(dir, "release")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeLoopbackAddr(t)
	proc := startProcess(t, bin, append(environWithoutElicit(), "ELICIT_TEST_BLOCK_FIFO="+fifo),
		"--addr", addr, "--data", filepath.Join(dir, "data"), "--audit-log", "off", "--shutdown-timeout", "1m",
		"--metrics-addr", freeLoopbackAddr(t))
	cmd, stderr := proc.cmd, proc.out

	done := callBlocking(addr)
	release := openRelease(t, fifo, done, stderr)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the shutdown to start", func() bool { return strings.Contains(stderr.String(), "shutting down") })
	waitFor(t, "the listener to close", func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err != nil
	})
	select {
	case r := <-done:
		t.Fatalf("the request ended before it was released: %+v", r)
	case <-proc.done:
		t.Fatalf("elicitd exited with a request in flight: %v\n%s", proc.err, stderr.String())
	default:
	}

	if _, err := io.WriteString(release, "go"); err != nil {
		t.Fatal(err)
	}
	release.Close()
	r := <-done
	if r.err != nil || r.status != http.StatusOK || !strings.Contains(r.body, `"text":"released: go"`) {
		t.Fatalf("in-flight request: HTTP %d %v %s", r.status, r.err, r.body)
	}
	if err := proc.wait(); err != nil || cmd.ProcessState.ExitCode() != 0 {
		t.Fatalf("elicitd exit: %v (code %d)\n%s", err, cmd.ProcessState.ExitCode(), stderr.String())
	}
	// One "shutting down" per listener, the metrics one named.
	if mainLines, metricsLines := shutdownLines(stderr.String()); mainLines != 1 || metricsLines != 1 {
		t.Fatalf("shutting down logged %d times for --addr, %d for --metrics-addr:\n%s", mainLines, metricsLines, stderr.String())
	}
}

// callResult is how an HTTP call ended.
type callResult struct {
	status int
	body   string
	err    error
}

// callBlocking calls test_block on addr as alice, in the background.
func callBlocking(addr string) <-chan callResult {
	done := make(chan callResult, 1)
	go func() {
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"test_block","arguments":{},` + metaURL + `}}`
		resp, err := http.DefaultClient.Do(toolCallRequest(addr, "test_block", body))
		if err != nil {
			done <- callResult{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		done <- callResult{resp.StatusCode, string(b), err}
	}()
	return done
}

// toolCallRequest is a tools/call of tool with body, as alice, to addr.
func toolCallRequest(addr, tool, body string) *http.Request {
	req, _ := http.NewRequest("POST", "http://"+addr+"/mcp", strings.NewReader(body))
	for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		"MCP-Protocol-Version": "2026-07-28", "Authorization": "Bearer alice", "Mcp-Method": "tools/call", "Mcp-Name": tool} {
		req.Header.Set(k, v)
	}
	return req
}

// openRelease opens the fifo for writing, which returns once test_block
// has opened it for reading: from then on the request is in flight.
func openRelease(t *testing.T, fifo string, done <-chan callResult, stderr *syncBuffer) *os.File {
	t.Helper()
	opened := make(chan *os.File, 1)
	go func() {
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			t.Error(err)
		}
		opened <- f
	}()
	select {
	case release := <-opened:
		if release == nil {
			t.FailNow()
		}
		return release
	case r := <-done:
		t.Fatalf("the request ended before it blocked: %+v\n%s", r, stderr.String())
	}
	return nil
}

// shutdownLines counts the "shutting down" lines of the main listener and
// of the metrics one.
func shutdownLines(log string) (mainLines, metricsLines int) {
	for line := range strings.Lines(log) {
		switch {
		case !strings.Contains(line, `msg="shutting down"`):
		case strings.Contains(line, "listener=metrics"):
			metricsLines++
		default:
			mainLines++
		}
	}
	return mainLines, metricsLines
}

// TestSIGTERMAnswersHeldRetry: a connect_billing retry held by --url-wait
// (5 minutes) when SIGTERM arrives is answered at once with the same
// question (input_required, the same link), so the client can retry
// elsewhere, and elicitd exits 0 without waiting out --shutdown-timeout.
func TestSIGTERMAnswersHeldRetry(t *testing.T) {
	dir, bin := buildElicitd(t)
	addr := freeLoopbackAddr(t)
	proc := startProcess(t, bin, environWithoutElicit(), "--addr", addr, "--data", filepath.Join(dir, "data"),
		"--audit-log", "off", "--url-wait", "5m", "--shutdown-timeout", "1m", "--shutdown-grace", "0")
	post := func(body string) *http.Response {
		t.Helper()
		resp, err := http.DefaultClient.Do(toolCallRequest(addr, "connect_billing", body))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	first, _ := io.ReadAll(post(callBody(1, "connect_billing", "", metaURL)).Body)
	state, link := fieldOf(string(first), "requestState"), fieldOf(string(first), "url")
	if state == "" || link == "" {
		t.Fatalf("first call: %s", first)
	}
	held := post(callBody(2, "connect_billing", answer("accept", state), metaURL))
	rd := bufio.NewReader(held.Body)
	if line, err := rd.ReadString('\n'); err != nil || line != ": keep-alive\n" {
		t.Fatalf("held retry: %q %v (want an SSE keep-alive: the server holds it)", line, err)
	}
	if err := proc.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(rd)
	if !strings.Contains(string(rest), `"resultType":"input_required"`) || fieldOf(string(rest), "url") != link {
		t.Fatalf("held retry at shutdown: %s", rest)
	}
	if err := proc.wait(); err != nil || proc.cmd.ProcessState.ExitCode() != 0 || strings.Contains(proc.out.String(), "did not finish") {
		t.Fatalf("elicitd exit: %v (code %d)\n%s", err, proc.cmd.ProcessState.ExitCode(), proc.out.String())
	}
}

// fieldOf returns the first JSON string field name's value in s.
func fieldOf(s, name string) string {
	m := regexp.MustCompile(`"` + regexp.QuoteMeta(name) + `":"([^"]*)"`).FindStringSubmatch(s)
	if m == nil {
		return ""
	}
	return m[1]
}
