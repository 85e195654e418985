package main

import (
	"context"
	"fmt"
	"html"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/mcp-elicit/elicit/examples/billing"
	"github.com/mcp-elicit/elicit/examples/calendar"
	"github.com/mcp-elicit/elicit/internal/fakeoauth"
)

// tosser is the attacker's own site on another port of the same host:
// another origin, but the same site, and cookies ignore ports. Its pages
// plant the attacker's live session id under the narrow paths of the key
// page and of /connect/, then link to the attacker's own flow.
type tosser struct {
	*httptest.Server
	links map[string]string // page path -> the attacker's flow link
}

func newTosser(t *testing.T, sessionName, sessionID string, links map[string]string) *tosser {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ts := &tosser{links: links}
	names := []string{"elicit_session"}
	if sessionName != "elicit_session" {
		// The name the server really uses too: a browser refuses a
		// __Host- one under a narrow path, which is the point of it.
		names = append(names, sessionName)
	}
	ts.Server = &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		link, ok := ts.links[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		for _, name := range names {
			for _, path := range []string{"/ui/set_api_key", "/connect/"} {
				w.Header().Add("Set-Cookie", name+"="+sessionID+"; Path="+path+"; HttpOnly; SameSite=Lax")
			}
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><title>Free stuff</title><a id="go" href="%s">Connect now</a>`, html.EscapeString(link))
	})}}
	ts.Start()
	t.Cleanup(ts.Close)
	return ts
}

// TestBrowserCookieTossing is the cookie-tossing attack in a real browser,
// on both the key page (connect_billing) and the OAuth connect route
// (connect_calendar). mallory signs in herself, then has alice open a page
// of hers on another port of the same host, which plants mallory's
// session id under Path=/ui/set_api_key and Path=/connect/ (the browser
// sends the longer path first) and links to mallory's own flow. alice
// must see a refusal; nothing may be stored for anyone, and mallory's
// list_events must never show alice's calendar.
func TestBrowserCookieTossing(t *testing.T) {
	exe := chromiumPath(t)
	c := newCalEnv(t)
	c.provider.SetEvents("alice", []fakeoauth.Event{{ID: "a1", Title: "Alice's dentist"}})
	const aliceKey = "sk_live_ALICE_tossed_4e1d"

	// mallory: her own flows, and a live session of hers.
	_, _, billingLink := c.connect(1, "mallory", "").elicitation(t)
	calendarLink := c.link(c.call(2, "mallory", calendar.ToolName, ""))
	mb := c.browser()
	if status, page := c.open(mb, calendarLink, "mallory"); status != http.StatusOK || !strings.Contains(page, "mallory") {
		t.Fatalf("mallory's own page: %d\n%s", status, page)
	}
	name, sid := sessionCookie(t, mb, c.url)
	evil := newTosser(t, name, sid, map[string]string{"/billing": billingLink, "/calendar": calendarLink})
	if strings.HasPrefix(evil.URL, c.url) || !strings.HasPrefix(evil.URL, "http://127.0.0.1:") {
		t.Fatalf("attacker origin %s is not another port of %s", evil.URL, c.url)
	}
	id := func(s string) chromedp.ID { return chromedp.ID(s) }
	has := func(ctx context.Context, who, sel string) bool { return hasElement(t, ctx, who, sel) }
	visit := func(ctx context.Context, path, waitFor string) {
		t.Helper()
		followTossed(t, ctx, evil.URL+path, waitFor)
	}
	refused := func(ctx context.Context, who, what string) { t.Helper(); wantConflictRefusal(t, ctx, who, what) }

	// The key page. alice is signed in as herself, then visits mallory's
	// page and follows its link.
	alice := newBrowser(t, exe)
	signIn(t, alice, c.url+"/ui/login", "alice", "whoami")
	visit(alice, "/billing", "#cookie-conflict, #api_key")
	screenshot(t, alice, "tossing-key-page")
	refused(alice, "alice", "key page")
	if has(alice, "alice", "#api_key") {
		// Unfixed: the page is mallory's. alice does what it asks.
		do(t, alice, "alice",
			chromedp.SendKeys(id("api_key"), aliceKey),
			chromedp.Click(id("submit")),
			chromedp.WaitVisible(chromedp.CSS("#done, .alert, [role=alert]")),
		)
	}
	for i, who := range []string{"mallory", "alice"} {
		if r := c.mcp(who, "tools/call", "billing_status", callBody(10+i, "billing_status", "", metaURL)); r.text() != billing.TextStatusNotConnected {
			t.Errorf("%s has a billing key stored: %s", who, r.text())
		}
	}

	// The connect route, with a browser that is not signed in yet: the
	// planted cookie must not sign it in, and once alice signs in herself
	// it must not shadow her session.
	alice2 := newBrowser(t, exe)
	visit(alice2, "/calendar", "#cookie-conflict, #continue, #username")
	if has(alice2, "alice", "#username") {
		do(t, alice2, "alice",
			chromedp.SendKeys(id("username"), "alice"),
			chromedp.Click(id("submit")),
			chromedp.WaitVisible(chromedp.CSS("#cookie-conflict, #continue")),
		)
	}
	screenshot(t, alice2, "tossing-connect-page")
	refused(alice2, "alice", "connect page")
	if has(alice2, "alice", "#continue") {
		// Unfixed: continue to the provider and approve there as alice.
		do(t, alice2, "alice",
			chromedp.Click(id("continue")),
			chromedp.WaitVisible(id("approve")),
			chromedp.SendKeys(id("username"), "alice"),
			chromedp.Click(id("approve")),
			chromedp.WaitVisible(chromedp.CSS("#done, [role=alert]")),
		)
	}
	if r := c.call(20, "mallory", calendar.EventsToolName, ""); strings.Contains(r.text(), "Alice's dentist") {
		t.Errorf("mallory's list_events shows alice's calendar: %s", r.text())
	}
	if t.Failed() {
		t.FailNow()
	}
	c.assertNotConnected(21, "mallory", "alice")
	if n := c.provider.AuthorizeRequests(); n != 0 {
		t.Fatalf("the provider saw %d authorize requests", n)
	}
	if strings.Contains(c.logs.String(), aliceKey) || !strings.Contains(c.logs.String(), "cookie_conflict_refused") {
		t.Fatalf("the log holds the key, or no refusal:\n%s", c.logs.String())
	}
}

// sessionCookie returns the name and value of b's session cookie for base.
func sessionCookie(t *testing.T, b *browser, base string) (name, value string) {
	t.Helper()
	u, _ := url.Parse(base + "/")
	for _, ck := range b.client.Jar.Cookies(u) {
		if strings.HasSuffix(ck.Name, "elicit_session") {
			name, value = ck.Name, ck.Value
		}
	}
	if value == "" {
		t.Fatal("no session cookie")
	}
	return name, value
}

// hasElement reports whether the page shows an element matching sel.
func hasElement(t *testing.T, ctx context.Context, who, sel string) bool {
	return browserValue(t, ctx, who, chromedp.Evaluate[int](`document.querySelectorAll("`+sel+`").length`)) > 0
}

// followTossed opens the attacker's page and follows its link, until one
// of the elements in waitFor shows.
func followTossed(t *testing.T, ctx context.Context, page, waitFor string) {
	t.Helper()
	do(t, ctx, "alice", chromedp.Navigate(page), chromedp.Click(chromedp.ID("go")), chromedp.WaitVisible(chromedp.CSS(waitFor)))
}

// wantConflictRefusal checks that the page refuses the two sign-in
// cookies, and shows nothing of mallory's.
func wantConflictRefusal(t *testing.T, ctx context.Context, who, what string) {
	t.Helper()
	body := browserValue(t, ctx, who, chromedp.Text("body"))
	if !hasElement(t, ctx, who, "#cookie-conflict") || !strings.Contains(body, "more than one sign-in cookie") || strings.Contains(body, "mallory") {
		t.Errorf("%s: alice was not refused:\n%s", what, body)
	}
}
