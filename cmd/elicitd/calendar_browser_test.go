package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/mcp-elicit/elicit/examples/calendar"
	"github.com/mcp-elicit/elicit/internal/fakeoauth"
)

// TestBrowserCalendarFlow runs the third-party OAuth flow in a real
// browser: bob, signed in as bob, is refused on alice's link before any
// redirect; alice signs in, continues to the provider's authorize page,
// approves there, and lands back on the server's callback; her retry then
// succeeds and list_events shows her events only.
func TestBrowserCalendarFlow(t *testing.T) {
	exe := chromiumPath(t)
	c := newCalEnv(t)
	c.provider.SetEvents("alice", []fakeoauth.Event{{ID: "a1", Title: "Alice's dentist"}})
	c.provider.SetEvents("bob", []fakeoauth.Event{{ID: "b1", Title: "Bob's job interview"}})
	first := c.call(1, "alice", calendar.ToolName, "")
	link := c.link(first)
	id := func(s string) chromedp.ID { return chromedp.ID(s) }

	// Bob gets alice's link and signs in as himself: refused, no button.
	bob := newBrowser(t, exe)
	signIn(t, bob, link, "bob", "wrong-account")
	screenshot(t, bob, "calendar-bob-refused")
	bobPage := browserValue(t, bob, "bob", chromedp.Text("body"))
	buttons := browserValue(t, bob, "bob", chromedp.Evaluate[int](`document.querySelectorAll("#continue").length`))
	bobURL := browserValue(t, bob, "bob", chromedp.Location())
	if !strings.Contains(bobPage, "different account") || buttons != 0 || bobURL != link {
		t.Fatalf("bob was not refused at %s:\n%s", bobURL, bobPage)
	}
	if n := c.provider.AuthorizeRequests(); n != 0 {
		t.Fatalf("the provider saw %d authorize requests after bob's attempt", n)
	}

	// Alice opens her link, signs in, and continues to the provider.
	alice := newBrowser(t, exe)
	signIn(t, alice, link, "alice", "continue")
	screenshot(t, alice, "calendar-alice-connect")
	who := browserValue(t, alice, "alice", chromedp.Text(id("whoami")))
	do(t, alice, "alice",
		chromedp.Click(id("continue")),
		chromedp.WaitVisible(id("approve")),
	)
	at := browserValue(t, alice, "alice", chromedp.Location())
	if !strings.HasPrefix(at, c.provider.AuthURL()+"?") {
		t.Fatalf("alice is at %s, not the provider's authorize page", at)
	}
	screenshot(t, alice, "calendar-provider-approve")
	do(t, alice, "alice",
		chromedp.SendKeys(id("username"), "alice"),
		chromedp.Click(id("approve")),
		chromedp.WaitVisible(id("done")),
	)
	done := browserValue(t, alice, "alice", chromedp.Text(id("done")))
	back := browserValue(t, alice, "alice", chromedp.Location())
	screenshot(t, alice, "calendar-alice-done")
	if !strings.Contains(who, "alice") || !strings.Contains(done, "Accept") || !strings.HasPrefix(back, c.url+"/connect/callback?") {
		t.Fatalf("whoami %q, done %q at %s", who, done, back)
	}

	// The client accepts: the retry succeeds; only alice is connected.
	if r := c.call(2, "alice", calendar.ToolName, calAnswer("accept", first.state())); r.resultType() != "complete" || r.text() != fmt.Sprintf(calendar.TextConnectedAs, `"alice"`) {
		t.Fatalf("retry after the browser step: %s", r.Raw)
	}
	if r := c.call(3, "alice", calendar.EventsToolName, ""); !strings.Contains(r.text(), "Alice's dentist") || strings.Contains(r.text(), "Bob") {
		t.Fatalf("alice's events: %s", r.Raw)
	}
	c.assertNotConnected(4, "bob")
	for _, sec := range c.provider.Issued() {
		if strings.Contains(c.logs.String(), sec) {
			t.Fatal("a provider code or token appears in the log")
		}
	}
}
