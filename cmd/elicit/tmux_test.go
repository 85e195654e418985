package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcp-elicit/elicit/examples/billing"
	"github.com/mcp-elicit/elicit/examples/reports"
)

// TestTmuxBilling drives the real terminal host in a tmux pane against a
// real elicitd: the consent screen names the server, shows the full URL
// and its domain; Decline ends with the server's decline text; Esc (at
// the consent screen, at "finished on the page", in a form's fields and at
// its review) and Ctrl-C cancel, saying so in the same words, and the
// server answers its cancel text; in a last run the page step is done by
// an HTTP client (as a browser would) and Accept ends with the success
// text.
//
// It needs tmux (apt-get install tmux) and is skipped without it, unless
// ELICIT_TMUX_TEST=require.
func TestTmuxBilling(t *testing.T) {
	needTmux(t)
	dir := t.TempDir()
	elicitBin := goBuild(t, dir, "elicit", ".")
	elicitdBin := goBuild(t, dir, "elicitd", "../elicitd")

	addr := freeAddr(t)
	base := "http://" + addr
	startElicitd(t, elicitdBin, addr, filepath.Join(dir, "data"))

	tm := &tmux{t: t, socket: filepath.Join(dir, "tmux.sock")}
	t.Cleanup(tm.kill)
	cmd := fmt.Sprintf("%s call connect_billing --url %s/mcp --token alice", elicitBin, base)

	// Run 1: decline.
	tm.start("decline", cmd)
	screen := tm.waitFor("decline", "Do you want to open this page?")
	checkConsentScreen(t, screen, addr, base)
	tm.keys("decline", "Down")
	tm.waitFor("decline", "> Decline")
	tm.keys("decline", "Enter")
	status, screen := tm.waitDead("decline")
	if last := lastLine(screen); last != billing.TextDeclined {
		t.Errorf("run 1 ends with %q, want the server's decline text %q:\n%s", last, billing.TextDeclined, screen)
	}
	if status != "1" {
		t.Errorf("run 1 exit status %s, want 1 (isError)", status)
	}

	// Esc and Ctrl-C cancel every prompt, in the same words. Each run is
	// another user, so none is connected by an earlier one.
	for _, tc := range []struct {
		user, tool string
		steps      [][2]string // wait for [0] (the focused field's "┃" too), then press [1]
		says, ends string
	}{
		{"esc-consent", "connect_billing", [][2]string{{"Do you want to open this page?", "Escape"}},
			"Do you want to open this page? Cancelled (Esc or Ctrl-C).", billing.TextCancelled},
		{"ctrl-c-consent", "connect_billing", [][2]string{{"Do you want to open this page?", "C-c"}},
			"Do you want to open this page? Cancelled (Esc or Ctrl-C).", billing.TextCancelled},
		{"esc-finished", "connect_billing", [][2]string{{"Do you want to open this page?", "Enter"}, {"When you have finished on the page", "Escape"}},
			"When you have finished on the page: Cancelled (Esc or Ctrl-C).", billing.TextCancelled},
		{"esc-field", "export_report", [][2]string{{"Fill in this form?", "Enter"}, {"Detail level", "Escape"}},
			"Form: Cancelled (Esc or Ctrl-C).", reports.TextExportCancelled},
		{"esc-review", "export_report", [][2]string{{"Fill in this form?", "Enter"}, {"Detail level", "Enter"}, {"┃ Label", "Q2"}, {"> Q2", "Enter"},
			{"Send these answers?", "Escape"}}, "Send these answers? Cancelled (Esc or Ctrl-C).", reports.TextExportCancelled},
	} {
		args := ""
		if tc.tool == "export_report" {
			args = " --arg period=2026-Q2 --arg dataset=sales"
		}
		tm.start(tc.user, fmt.Sprintf("%s call %s --url %s/mcp --token %s%s", elicitBin, tc.tool, base, tc.user, args))
		tm.press(tc.user, tc.steps)
		status, screen := tm.waitDead(tc.user)
		if !strings.Contains(screen, tc.says) || lastLine(screen) != tc.ends || status != "1" {
			t.Errorf("%s: exit %s; want %q and the server's cancel text %q last:\n%s", tc.user, status, tc.says, tc.ends, screen)
		}
	}

	// Run 2: the user does the page step in a browser, then accepts.
	tm.start("accept", cmd)
	screen = tm.waitFor("accept", "Do you want to open this page?")
	m := regexp.MustCompile(`URL:\s+(` + regexp.QuoteMeta(base) + `/ui/set_api_key\?flow=[0-9a-f]{32})\s`).FindStringSubmatch(screen)
	if m == nil {
		t.Fatalf("no flow URL on the consent screen:\n%s", screen)
	}
	completePage(t, base, m[1], "alice", "sk_test_tmux_0123456789")
	tm.keys("accept", "Enter") // Accept is the first choice
	screen = tm.waitFor("accept", "When you have finished on the page")
	if !strings.Contains(screen, "Open this URL in your browser yourself:") || !strings.Contains(screen, "  "+m[1]) {
		t.Errorf("after accept the URL is not printed for the user to open:\n%s", screen)
	}
	tm.keys("accept", "Enter") // Continue
	status, screen = tm.waitDead("accept")
	if last := lastLine(screen); last != billing.TextConnected {
		t.Errorf("run 2 ends with %q, want %q:\n%s", last, billing.TextConnected, screen)
	}
	if status != "0" {
		t.Errorf("run 2 exit status %s, want 0", status)
	}
	if strings.Contains(screen, "sk_test_tmux") {
		t.Errorf("the key shows in the client's terminal:\n%s", screen)
	}
}

// needTmux skips (or, with ELICIT_TMUX_TEST=require, fails) without tmux,
// and skips in -short.
func needTmux(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("ELICIT_TMUX_TEST") == "require" {
			t.Fatal("tmux is required (ELICIT_TMUX_TEST=require) but not installed: apt-get install tmux")
		}
		t.Skip("tmux is not installed (apt-get install tmux); set ELICIT_TMUX_TEST=require to make this a failure")
	}
	if testing.Short() {
		t.Skip("builds two binaries and drives a terminal; skipped with -short")
	}
}

// checkConsentScreen checks the URL consent screen of connect_billing:
// who asks (verified and self-reported), the message, the full flow URL,
// the domain, and how to cancel.
func checkConsentScreen(t *testing.T, screen, addr, base string) {
	t.Helper()
	for _, want := range []string{
		"Server:   " + addr + " — the endpoint you connected to",
		`Name:     "elicit reference server" (elicitd`, "self-reported, not verified",
		"Message:  ",
		"Domain:   127.0.0.1",
		"Nothing has been opened or fetched.",
		"Esc or Ctrl-C: cancel",
	} {
		if !strings.Contains(screen, want) {
			t.Errorf("the consent screen lacks %q:\n%s", want, screen)
		}
	}
	if regexp.MustCompile(`URL:\s+(`+regexp.QuoteMeta(base)+`/ui/set_api_key\?flow=[0-9a-f]{32})\s`).FindStringSubmatch(screen) == nil {
		t.Fatalf("the consent screen shows no full flow URL:\n%s", screen)
	}
}

// press waits for each step's text in window's screen, then presses its key.
func (tm *tmux) press(window string, steps [][2]string) {
	for _, st := range steps {
		tm.waitFor(window, st[0])
		tm.keys(window, st[1])
	}
}

func goBuild(t *testing.T, dir, name, pkg string) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	}
	out := filepath.Join(dir, name)
	cmd := exec.Command(goBin, "build", "-o", out, pkg)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, b)
	}
	return out
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startElicitd runs elicitd until the test ends and waits until it answers.
func startElicitd(t *testing.T, bin, addr, data string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "--addr", addr, "--data", data)
	logs := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("elicitd log:\n%s", logs)
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond); err == nil {
			c.Close()
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("elicitd did not listen on %s", addr)
}

// completePage does in Go what the user does in the browser: open the
// URL, sign in as user, type the key (cmd/elicitd/e2e_test.go's page step).
func completePage(t *testing.T, base, flowURL, user, key string) {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	do := func(method, u string, form url.Values) (int, string, string) {
		t.Helper()
		var resp *http.Response
		var err error
		if method == "GET" {
			resp, err = c.Get(u)
		} else {
			resp, err = c.PostForm(u, form)
		}
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Location"), string(b)
	}
	csrf := func(page string) string {
		m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(page)
		if m == nil {
			t.Fatalf("no csrf field:\n%s", page)
		}
		return m[1]
	}
	status, loc, _ := do("GET", flowURL, nil)
	if status != http.StatusSeeOther || !strings.HasPrefix(loc, "/ui/login?next=") {
		t.Fatalf("opening the flow URL: %d %q", status, loc)
	}
	_, _, page := do("GET", base+loc, nil)
	next, _ := url.ParseQuery(strings.TrimPrefix(loc, "/ui/login?"))
	status, loc, _ = do("POST", base+"/ui/login", url.Values{"username": {user}, "csrf": {csrf(page)}, "next": {next.Get("next")}})
	if status != http.StatusSeeOther {
		t.Fatalf("login: %d", status)
	}
	status, _, page = do("GET", base+loc, nil)
	if status != 200 || !strings.Contains(page, `id="key-form"`) {
		t.Fatalf("key page: %d\n%s", status, page)
	}
	u, _ := url.Parse(flowURL)
	status, _, page = do("POST", base+"/ui/set_api_key", url.Values{"api_key": {key}, "csrf": {csrf(page)}, "flow": {u.Query().Get("flow")}})
	if status != 200 || !strings.Contains(page, `id="done"`) {
		t.Fatalf("key POST: %d\n%s", status, page)
	}
}

// tmux drives panes on a private tmux server (its own socket, no user
// configuration), one session per run.
type tmux struct {
	t      *testing.T
	socket string
}

func (m *tmux) run(args ...string) (string, error) {
	cmd := exec.Command("tmux", append([]string{"-S", m.socket, "-f", os.DevNull}, args...)...)
	b, err := cmd.CombinedOutput()
	return string(b), err
}

// exitMarker is printed after the command, with its exit status: the
// shell reports it, so the test does not depend on when tmux notices the
// pane's process has ended.
const exitMarker = "[tmux-test: exit status"

// start runs command in a new detached session, wide enough that the URL
// does not wrap; the pane stays after the command ends so its last screen
// can be read.
func (m *tmux) start(session, command string) {
	m.t.Helper()
	command += `; s=$?; echo; echo "` + exitMarker + ` $s]"`
	if out, err := m.run("new-session", "-d", "-s", session, "-x", "220", "-y", "60", command,
		";", "set-option", "-t", session, "remain-on-exit", "on"); err != nil {
		m.t.Fatalf("tmux new-session: %v\n%s", err, out)
	}
}

func (m *tmux) keys(session string, keys ...string) {
	m.t.Helper()
	if out, err := m.run(append([]string{"send-keys", "-t", session}, keys...)...); err != nil {
		m.t.Fatalf("tmux send-keys: %v\n%s", err, out)
	}
}

// capture returns the pane's text, wrapped lines joined.
func (m *tmux) capture(session string) string {
	m.t.Helper()
	out, err := m.run("capture-pane", "-p", "-J", "-t", session, "-S", "-200")
	if err != nil {
		m.t.Fatalf("tmux capture-pane: %v\n%s", err, out)
	}
	return out
}

// waitFor waits until the pane shows want and returns the screen.
func (m *tmux) waitFor(session, want string) string {
	m.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var screen string
	for time.Now().Before(deadline) {
		if screen = m.capture(session); strings.Contains(screen, want) {
			return screen
		}
		time.Sleep(100 * time.Millisecond)
	}
	m.t.Fatalf("the pane never showed %q:\n%s", want, screen)
	return ""
}

// waitDead waits until the pane's command has exited (start prints
// exitMarker and the status after it) and returns its exit status and the
// screen up to the marker.
func (m *tmux) waitDead(session string) (status, screen string) {
	m.t.Helper()
	re := regexp.MustCompile(regexp.QuoteMeta(exitMarker) + ` (\d+)\]`)
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		screen = m.capture(session)
		if loc := re.FindStringSubmatchIndex(screen); loc != nil {
			return screen[loc[2]:loc[3]], screen[:loc[0]]
		}
		time.Sleep(100 * time.Millisecond)
	}
	m.t.Fatalf("the command did not end:\n%s", screen)
	return "", ""
}

func (m *tmux) kill() { _, _ = m.run("kill-server") }

// lastLine is the last non-empty line of the program's output.
func lastLine(screen string) string {
	lines := strings.Split(strings.TrimRight(screen, "\n "), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
