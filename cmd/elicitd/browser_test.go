package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/mcp-elicit/elicit/examples/billing"
)

// chromiumPath finds a Chromium to drive, or skips the test. With
// ELICIT_BROWSER_TEST=require (CI) a missing browser fails instead.
func chromiumPath(t *testing.T) string {
	t.Helper()
	required := os.Getenv("ELICIT_BROWSER_TEST") == "require"
	if testing.Short() && !required {
		t.Skip("browser test skipped in -short mode")
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if required {
		t.Fatal("ELICIT_BROWSER_TEST=require but no chromium on PATH (apt-get install chromium)")
	}
	t.Skip("no chromium on PATH; apt-get install chromium to run the browser test")
	return ""
}

// browserLimit bounds one browser's whole life in a test.
const browserLimit = 2 * time.Minute

// newBrowser starts a headless Chromium with its own profile (so its own
// cookies) that reaches nothing but loopback. Its context ends after
// browserLimit: a guard against a hung browser, not a speed goal, so it is
// long enough for a loaded two-core machine.
func newBrowser(t *testing.T, exe string) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.NoSandbox,
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-first-run", true),
	)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(alloc)
	ctx, cancelTimeout := context.WithTimeout(ctx, browserLimit)
	t.Cleanup(func() { cancelTimeout(); cancelCtx(); cancelAlloc() })
	return ctx
}

// screenshot saves the page as PNG under $ELICIT_SCREENSHOTS, when set.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	dir := os.Getenv("ELICIT_SCREENSHOTS")
	if dir == "" {
		return
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

func browserValue[T any](t *testing.T, ctx context.Context, who string, a chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("%s's browser: %v", who, err)
	}
	return v
}

func do(t *testing.T, ctx context.Context, who string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s's browser: %v", who, err)
	}
}

// signIn opens link, which leads to the login page, signs in as user and
// waits for the element with id then on the page it returns to.
func signIn(t *testing.T, ctx context.Context, link, user, then string) {
	t.Helper()
	do(t, ctx, user,
		chromedp.Navigate(link),
		chromedp.WaitVisible(chromedp.ID("username")),
		chromedp.SendKeys(chromedp.ID("username"), user),
		chromedp.Click(chromedp.ID("submit")),
		chromedp.WaitVisible(chromedp.ID(then)),
	)
}

// TestBrowserBillingFlow walks alice through login and the key page in a
// real browser, and shows bob's attempt on alice's link refused.
func TestBrowserBillingFlow(t *testing.T) {
	exe := chromiumPath(t)
	e := newEnv(t)
	first := e.connect(1, "alice", "")
	_, _, link := first.elicitation(t)
	id := func(s string) chromedp.ID { return chromedp.ID(s) }

	// Bob gets alice's link (phishing) and signs in as himself.
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server log:\n%s", e.logs.String())
		}
	})
	bob := newBrowser(t, exe)
	signIn(t, bob, link, "bob", "wrong-account")
	screenshot(t, bob, "bob-refused")
	bobPage := browserValue(t, bob, "bob", chromedp.Text("body"))
	keyFields := browserValue(t, bob, "bob", chromedp.Evaluate[int](`document.querySelectorAll("#api_key").length`))
	if !strings.Contains(bobPage, "different account") || keyFields != 0 {
		t.Fatalf("bob was not refused:\n%s", bobPage)
	}

	// Alice opens her own link, signs in and types the key.
	alice := newBrowser(t, exe)
	do(t, alice, "alice", chromedp.Navigate(link), chromedp.WaitVisible(id("username")))
	screenshot(t, alice, "alice-login")
	do(t, alice, "alice",
		chromedp.SendKeys(id("username"), "alice"),
		chromedp.Click(id("submit")),
		chromedp.WaitVisible(id("api_key")),
	)
	who := browserValue(t, alice, "alice", chromedp.Text(id("whoami")))
	screenshot(t, alice, "alice-key-page")
	do(t, alice, "alice",
		chromedp.SendKeys(id("api_key"), testKey),
		chromedp.Click(id("submit")),
		chromedp.WaitVisible(id("done")),
	)
	done := browserValue(t, alice, "alice", chromedp.Text(id("done")))
	screenshot(t, alice, "alice-done")
	if !strings.Contains(who, "alice") || !strings.Contains(done, "Accept") {
		t.Fatalf("whoami %q, done %q", who, done)
	}

	// The client accepts: the retry succeeds, and only alice is connected.
	r := e.connect(2, "alice", answer("accept", first.state()))
	if r.resultType() != "complete" || r.text() != billing.TextConnected {
		t.Fatalf("retry after the browser step: %s", r.Raw)
	}
	if r := e.mcp("bob", "tools/call", "billing_status", callBody(3, "billing_status", "", metaURL)); r.text() != billing.TextStatusNotConnected {
		t.Fatalf("bob: %s", r.Raw)
	}
	if strings.Contains(e.logs.String(), testKey) {
		t.Fatal("the key appears in the log")
	}
}
