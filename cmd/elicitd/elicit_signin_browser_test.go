package main

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/mcp-elicit/elicit/examples/billing"
	"github.com/mcp-elicit/elicit/examples/reports"
)

// hostProc is one run of the elicit host, its stdout read line by line.
type hostProc struct {
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines chan string
	out   *syncBuffer // stdout and stderr
	done  chan error
}

func startHost(t *testing.T, bin string, env []string, args ...string) *hostProc {
	t.Helper()
	p := &hostProc{cmd: exec.Command(bin, args...), lines: make(chan string, 200), out: &syncBuffer{}, done: make(chan error, 1)}
	p.cmd.Env = env
	p.cmd.Stderr = p.out
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if p.in, err = p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.out.Write([]byte(sc.Text() + "\n"))
			p.lines <- sc.Text()
		}
		close(p.lines)
		p.done <- p.cmd.Wait()
	}()
	t.Cleanup(func() { p.cmd.Process.Kill(); <-p.done })
	return p
}

// await returns the first stdout line matching re (its first group when
// it has one).
func (p *hostProc) await(t *testing.T, re *regexp.Regexp) string {
	t.Helper()
	for l := range p.lines {
		if m := re.FindStringSubmatch(l); m != nil {
			return m[len(m)-1]
		}
	}
	t.Fatalf("elicit ended without printing %s:\n%s", re, p.out.String())
	return ""
}

// answer types a line on the host's stdin.
func (p *hostProc) answer(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(p.in, line+"\n"); err != nil {
		t.Fatal(err)
	}
}

// wait returns the host's exit error once it has ended.
func (p *hostProc) wait() error {
	for range p.lines {
	}
	err := <-p.done
	p.done <- err // for the cleanup
	return err
}

// TestBrowserHostSignIn is the whole MCP authorization flow between the
// elicit host and elicitd --auth jwt, with the fake issuer on loopback
// and a real browser: the first call gets 401; elicit discovers the
// issuer from elicitd's protected resource metadata, registers itself,
// shows the sign-in page and, after yes, waits on its loopback redirect
// while the browser signs in; then connect_billing runs its URL-mode step
// in the same browser, and export_report, in a second run, uses the
// cached token. No code, token or key shows in either program's output.
func TestBrowserHostSignIn(t *testing.T) {
	exe := chromiumPath(t)
	e, idp := newJWTEnv(t)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("elicitd log:\n%s", e.logs.String())
		}
	})
	dir := t.TempDir()
	bin := filepath.Join(dir, "elicit")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/mcp-elicit/elicit/cmd/elicit").CombinedOutput(); err != nil {
		t.Fatalf("building elicit: %v\n%s", err, out)
	}
	env := append(environWithoutElicit(), "ELICIT_CONFIG_DIR="+filepath.Join(dir, "config"))
	ep := e.url + "/mcp"

	// connect_billing: 401, sign-in, then the URL-mode page.
	h := startHost(t, bin, env, "call", billing.ToolName, "--url", ep, "--plain")
	// Prompts end their line only once answered: answers are typed when
	// the screen before them is out.
	h.await(t, regexp.MustCompile(`^The server asks you to sign in \(MCP authorization\)\.$`))
	h.answer(t, "yes")
	h.await(t, regexp.MustCompile(`^Open this URL in your browser to sign in:$`))
	authURL := h.await(t, regexp.MustCompile(`^  (`+regexp.QuoteMeta(idp.URL)+`/authorize\?\S+)$`))
	browser := newBrowser(t, exe) // each browser step has its own time limit
	do(t, browser, "alice",
		chromedp.Navigate(authURL),
		chromedp.WaitVisible(chromedp.ID("username")),
		chromedp.SendKeys(chromedp.ID("username"), "alice"),
		chromedp.Click(chromedp.ID("submit")),
		chromedp.WaitVisible(`//h1[contains(., "Sign-in response received")]`),
	)
	screenshot(t, browser, "host-signed-in")
	link := h.await(t, regexp.MustCompile(`URL:\s+(http://127\.0\.0\.1:\d+/ui/set_api_key\?flow=[0-9a-f]{32})`))
	browser = newBrowser(t, exe)
	signIn(t, browser, link, "alice", "api_key") // the pages sign in at the issuer too
	do(t, browser, "alice",
		chromedp.SendKeys(chromedp.ID("api_key"), testKey),
		chromedp.Click(chromedp.ID("submit")),
		chromedp.WaitVisible(chromedp.ID("done")),
	)
	h.answer(t, "accept")
	h.answer(t, "") // finished on the page
	connected := h.await(t, regexp.MustCompile(`^(`+regexp.QuoteMeta(billing.TextConnected)+`)$`))
	if err := h.wait(); err != nil || connected == "" {
		t.Fatalf("connect_billing: %v\n%s", err, h.out.String())
	}
	first := h.out.String()

	// export_report, a second run: the cached token, no sign-in.
	r := startHost(t, bin, env, "call", reports.ToolExport, "--url", ep, "--plain", "--arg", "period=2026-Q2", "--arg", "dataset=sales")
	r.answer(t, "2")
	r.answer(t, "Q2 revenue")
	r.answer(t, "submit")
	draft := r.await(t, regexp.MustCompile(`^(Draft d_\S+ prepared: .*"Q2 revenue".*)$`))
	if err := r.wait(); err != nil || draft == "" || strings.Contains(r.out.String(), "sign in") {
		t.Fatalf("export_report: %v\n%s", err, r.out.String())
	}

	files, _ := filepath.Glob(filepath.Join(dir, "config", "oauth", "*.json"))
	if len(files) != 1 {
		t.Fatalf("token cache %v", files)
	}
	if fi, err := os.Stat(files[0]); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token cache mode: %v %v", fi, err)
	}
	if idp.Registrations() != 1 {
		t.Fatalf("%d dynamic registrations", idp.Registrations())
	}
	all := first + r.out.String() + e.logs.String()
	for _, v := range append(idp.Issued(), testKey) {
		if strings.Contains(all, v) {
			t.Errorf("an issued code, token or the key shows in an output or the log: %.10s…", v)
		}
	}
}
