package main

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/mcp-elicit/elicit/examples/billing"
	"github.com/mcp-elicit/elicit/internal/fakeidp"
)

// TestBrowserJWTAuth runs the --auth jwt pages in a real browser: the
// redirect to the issuer, its sign-in page, and the callback with the
// sealed sign-in cookie. bob, signed in at the issuer, is refused alice's
// link; alice finishes it and her client's retry succeeds.
func TestBrowserJWTAuth(t *testing.T) {
	exe := chromiumPath(t)
	e, idp := newJWTEnv(t)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server log:\n%s", e.logs.String())
		}
	})
	aliceTok := idp.Sign(fakeidp.RS256, fakeidp.Claims{Subject: "alice", Audience: []string{e.url + "/mcp"}})
	first := e.connect(1, aliceTok, "")
	_, _, link := first.elicitation(t)
	id := func(s string) chromedp.ID { return chromedp.ID(s) }

	bob := newBrowser(t, exe)
	signIn(t, bob, link, "bob", "wrong-account") // the issuer's page has the same ids
	screenshot(t, bob, "jwt-bob-refused")
	if who := browserValue(t, bob, "bob", chromedp.Text(id("whoami"))); !strings.Contains(who, idp.URL+"#bob") {
		t.Fatalf("bob's page says %q", who)
	}

	alice := newBrowser(t, exe)
	signIn(t, alice, link, "alice", "api_key")
	screenshot(t, alice, "jwt-alice-key-page")
	do(t, alice, "alice",
		chromedp.SendKeys(id("api_key"), testKey),
		chromedp.Click(id("submit")),
		chromedp.WaitVisible(id("done")),
	)
	r := e.connect(2, aliceTok, answer("accept", first.state()))
	if r.resultType() != "complete" || r.text() != billing.TextConnected {
		t.Fatalf("retry after the browser step: %s", r.Raw)
	}
	if logs := e.logs.String(); strings.Contains(logs, testKey) || strings.Contains(logs, aliceTok) {
		t.Fatal("the key or the token appears in the log")
	}
}
