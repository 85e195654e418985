package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcp-elicit/elicit/auth"
	"github.com/mcp-elicit/elicit/auth/jwtauth"
	"github.com/mcp-elicit/elicit/examples/reports"
	"github.com/mcp-elicit/elicit/internal/fakeidp"
)

// TestMain keeps the token cache of every test in a temporary directory,
// never the user's.
func TestMain(m *testing.M) {
	if os.Getenv(peerEnv) == "1" {
		os.Exit(gosdkPeer()) // started as a stdio server (stdio_test.go)
	}
	dir, err := os.MkdirTemp("", "elicit-config-")
	if err != nil {
		panic(err)
	}
	os.Setenv("ELICIT_CONFIG_DIR", dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// newJWTServer is newServer behind bearer JWTs of a fresh fake issuer,
// with the protected resource metadata where MCP clients look.
func newJWTServer(t *testing.T) (string, *fakeidp.Server) {
	t.Helper()
	idp := fakeidp.Start(t)
	base := newServerWith(t, func(base string) (auth.Authenticator, map[string]http.Handler) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		j, err := jwtauth.NewJWT(ctx, jwtauth.JWTOptions{Issuer: idp.URL, Resource: base + "/mcp"})
		if err != nil {
			t.Fatal(err)
		}
		meta := auth.MetadataHandler(j.Metadata())
		return j, map[string]http.Handler{auth.MetadataPath(base + "/mcp"): meta, "/.well-known/oauth-protected-resource": meta}
	})
	return base, idp
}

// liveRun runs the program in the background; one of its outputs (stdout,
// or stderr for elicit check) is read line by line as it comes.
type liveRun struct {
	lines  chan string
	out    syncBuffer // all of stdout
	errOut syncBuffer
	done   chan int
}

func startElicit(t *testing.T, input io.Reader, fromStderr bool, args ...string) *liveRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	pr, pw := io.Pipe()
	r := &liveRun{lines: make(chan string, 100), done: make(chan int, 1)}
	read, stdout, stderr := &r.out, io.Writer(pw), io.Writer(&r.errOut)
	if fromStderr {
		read, stdout, stderr = &r.errOut, &r.out, pw
	}
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			read.Write([]byte(sc.Text() + "\n"))
			r.lines <- sc.Text()
		}
		close(r.lines)
	}()
	go func() {
		code := run(ctx, args, input, stdout, stderr)
		pw.Close()
		cancel()
		r.done <- code
	}()
	t.Cleanup(cancel)
	return r
}

// line waits for the first stdout line that has prefix, and returns it.
func (r *liveRun) line(t *testing.T, prefix string) string {
	t.Helper()
	for l := range r.lines {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	t.Fatalf("the program ended without printing %q:\n%s\n%s", prefix, r.out.String(), r.errOut.String())
	return ""
}

// wait returns the exit status once the program has ended.
func (r *liveRun) wait() int {
	code := <-r.done
	for range r.lines { // drain
	}
	return code
}

// signInAt plays the user in the browser: the issuer's sign-in page for
// the printed authorization URL, then the redirect back to elicit.
func signInAt(t *testing.T, idp *fakeidp.Server, authURL, user string) {
	t.Helper()
	u, err := url.Parse(authURL)
	if err != nil || !strings.HasPrefix(authURL, idp.URL+"/authorize?") {
		t.Fatalf("authorization URL %q", authURL)
	}
	resp, err := http.Get(authURL)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("the issuer's page: %v %v", resp, err)
	}
	resp.Body.Close()
	form := u.Query()
	form.Set("username", user)
	resp, err = http.PostForm(idp.URL+"/authorize", form) // follows the redirect to elicit
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "Sign-in response received") {
		t.Fatalf("the redirect back: %d %s", resp.StatusCode, body)
	}
}

// signInFlow runs args, answers yes, signs in as user and returns the
// exit status, stdout and stderr.
func signInFlow(t *testing.T, idp *fakeidp.Server, user string, args ...string) (int, string, string) {
	t.Helper()
	r := startElicit(t, strings.NewReader("yes\n"), false, args...)
	r.line(t, "Open this URL in your browser to sign in:")
	signInAt(t, idp, strings.TrimSpace(r.line(t, "  http")), user)
	code := r.wait()
	return code, r.out.String(), r.errOut.String()
}

// TestSignIn: a 401 leads to the sign-in screen, a yes, the issuer's page
// and the loopback redirect; the token is cached (0600) and used by the
// next run without asking; logout deletes it. Nothing issued shows in
// the output.
func TestSignIn(t *testing.T) {
	base, idp := newJWTServer(t)
	ep := base + "/mcp"
	code, out, errOut := signInFlow(t, idp, "alice", "tools", "--url", ep)
	if code != exitOK || !strings.Contains(out, reports.ToolExport) {
		t.Fatalf("tools: exit %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{"The server asks you to sign in (MCP authorization).", "Sign in at: " + idp.URL,
		"For:        " + ep, "Domain:     127.0.0.1 (an IP address: this computer)", "Type yes to sign in at this page",
		"Waiting for the browser to come back to http://127.0.0.1:"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if idp.Registrations() != 1 {
		t.Fatalf("%d registrations", idp.Registrations())
	}
	if files := cachedTokens(t); len(files) != 1 {
		t.Fatalf("cache files %v", files)
	} else if fi, _ := os.Stat(files[0]); fi.Mode().Perm() != 0o600 {
		t.Fatalf("cache file mode %v", fi.Mode().Perm())
	}
	all := out + errOut

	// The next run uses the cache: no prompt, no browser.
	all += wantElicitRun(t, "", exitOK, reports.ToolExport, "sign in", "tools", "--url", ep, "--json")
	// login signs in again (the registration is kept); logout deletes.
	code, out, errOut = signInFlow(t, idp, "alice", "login", "--url", ep)
	if code != exitOK || !strings.Contains(out, "Signed in to "+ep+" at "+idp.URL) || idp.Registrations() != 1 {
		t.Fatalf("login: exit %d, %d registrations\n%s\n%s", code, idp.Registrations(), out, errOut)
	}
	all += out + errOut
	all += wantElicitRun(t, "", exitOK, "Signed out of", "", "logout", "--url", ep)
	if files := cachedTokens(t); len(files) != 0 {
		t.Fatalf("after logout: %v", files)
	}
	all += wantElicitRun(t, "", exitOK, "Nothing was cached", "", "logout", "--url", ep)
	// No: nothing opened, nothing cached, exit 3.
	all += wantElicitRun(t, "no\n", exitFailed, "requires sign-in, which you declined", "Open this URL", "tools", "--url", ep)
	// --no-login: the 401 as it is.
	all += wantElicitRun(t, "", exitFailed, "requires authorization (HTTP 401)", "", "tools", "--url", ep, "--no-login")

	for _, v := range idp.Issued() {
		if strings.Contains(all, v) {
			t.Errorf("an issued code or token shows in the output: %.10s…", v)
		}
	}
}

// cachedTokens lists the token cache's files.
func cachedTokens(t *testing.T) []string {
	t.Helper()
	store, err := tokenStore()
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(store.Dir, "*.json"))
	return files
}

// wantElicitRun runs elicit args with stdin and fails unless it exits
// with code, its stdout and stderr holding want and not notWant ("" for
// no such check). It returns stdout and stderr.
func wantElicitRun(t *testing.T, stdin string, code int, want, notWant string, args ...string) string {
	t.Helper()
	got, out, errOut := elicit(t, stdin, args...)
	both := out + errOut
	if got != code || !strings.Contains(both, want) || (notWant != "" && strings.Contains(both, notWant)) {
		t.Fatalf("elicit %v: exit %d, want %d with %q (and not %q)\n%s\n%s", args, got, code, want, notWant, out, errOut)
	}
	return both
}

// elicit check --login acts as the signed-in user: the sign-in prompts go
// to stderr, the report to stdout.
func TestCheckLogin(t *testing.T) {
	base, idp := newJWTServer(t)
	ep := base + "/mcp"
	r := startElicit(t, strings.NewReader("yes\n"), true, "check", "--url", ep, "--tool", reports.ToolExport,
		"--args", `{"period":"2026-Q2","dataset":"sales"}`, "--login", "--json")
	r.line(t, "Open this URL in your browser to sign in:")
	signInAt(t, idp, strings.TrimSpace(r.line(t, "  http")), "alice")
	code := r.wait()
	var rep struct {
		Summary struct{ Pass int }
	}
	if err := json.Unmarshal([]byte(r.out.String()), &rep); err != nil || code != exitOK || rep.Summary.Pass == 0 {
		t.Fatalf("check --login: exit %d\n%s\n%s", code, r.out.String(), r.errOut.String())
	}
	if code, _, errOut := elicit(t, "", "check", "--url", ep, "--tool", "t", "--login", "--token", "x"); code != exitUsage || !strings.Contains(errOut, "give one") {
		t.Fatalf("--login with --token: %d %s", code, errOut)
	}
}
