package main

import (
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcp-elicit/elicit/examples/calendar"
	"github.com/mcp-elicit/elicit/internal/fakeoauth"
)

// calEnv is an elicitd with the demo calendar provider, whose browsers
// record their traffic apart from the MCP client's (e.rec), so the leak
// check can tell what the MCP client saw.
type calEnv struct {
	*env
	provider *fakeoauth.Server
	pages    *recorder // browser traffic (our pages and the provider's)
}

func newCalEnv(t *testing.T, configure ...func(*config)) *calEnv {
	t.Helper()
	e := newEnvWith(t, func(c *config) {
		for _, f := range configure {
			f(c)
		}
	})
	if e.app.calendarProvider == nil {
		t.Fatal("elicitd started no calendar provider")
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server log:\n%s", e.logs.String())
		}
	})
	return &calEnv{env: e, provider: e.app.calendarProvider, pages: &recorder{}}
}

// browser returns a user agent with its own cookie jar that records into
// c.pages and does not follow redirects.
func (c *calEnv) browser() *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: c.t, client: &http.Client{Jar: jar, Transport: c.pages,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

func calAnswer(action, state string) string {
	return `"inputResponses":{"` + calendar.InputKey + `":{"action":"` + action + `"}},"requestState":"` + state + `",`
}

func (c *calEnv) call(id int, user, tool, extra string) *mcpResponse {
	return c.mcp(user, "tools/call", tool, callBody(id, tool, extra, metaURL))
}

// link returns the URL-mode elicitation URL of r under the calendar key,
// checking that it is our own /connect/<flow id> route.
func (c *calEnv) link(r *mcpResponse) string {
	c.t.Helper()
	reqs, _ := r.Result["inputRequests"].(map[string]any)
	ir, _ := reqs[calendar.InputKey].(map[string]any)
	if r.resultType() != "input_required" || ir == nil {
		c.t.Fatalf("no calendar elicitation: %s", r.Raw)
	}
	p := ir["params"].(map[string]any)
	link, _ := p["url"].(string)
	if p["mode"] != "url" || !regexp.MustCompile(`^`+regexp.QuoteMeta(c.url)+`/connect/[0-9a-f]{32}$`).MatchString(link) {
		c.t.Fatalf("elicitation is not a URL to our own connect route: %v", p)
	}
	return link
}

// open signs b in as user on the way to link (if it has no session yet)
// and returns the status and page at link.
func (c *calEnv) open(b *browser, link, user string) (int, string) {
	c.t.Helper()
	status, loc, page := b.get(link)
	if status == http.StatusSeeOther && strings.HasPrefix(loc, "/ui/login?") {
		return b.login(c.url, link, user)
	}
	return status, page
}

// toProvider presses Continue on the connect page and returns the
// redirect's status and Location.
func (c *calEnv) toProvider(b *browser, link, page string) (int, string) {
	c.t.Helper()
	status, loc, _ := b.post(link, url.Values{"csrf": {csrfOf(c.t, page)}})
	return status, loc
}

var providerRequestRe = regexp.MustCompile(`name="request" value="([^"]+)"`)

// approve signs in at the provider as user and approves; it returns the
// callback URL the provider redirects to (not visited yet).
func (c *calEnv) approve(b *browser, authorizeURL, user string) string {
	c.t.Helper()
	status, _, page := b.get(authorizeURL)
	m := providerRequestRe.FindStringSubmatch(page)
	if status != 200 || m == nil {
		c.t.Fatalf("provider page: %d\n%s", status, page)
	}
	status, loc, _ := b.post(c.provider.AuthURL(), url.Values{"request": {m[1]}, "username": {user}, "decision": {"approve"}})
	if status != http.StatusSeeOther || !strings.HasPrefix(loc, c.url+"/connect/callback?") {
		c.t.Fatalf("provider approve: %d %q", status, loc)
	}
	return loc
}

// startAttempt opens link as user in b and presses Continue, checking the
// redirect to the provider; it returns the authorize URL.
func (c *calEnv) startAttempt(b *browser, link, user string) string {
	c.t.Helper()
	status, page := c.open(b, link, user)
	if status != 200 || !strings.Contains(page, `id="connect-form"`) {
		c.t.Fatalf("%s's connect page: %d\n%s", user, status, page)
	}
	status, loc := c.toProvider(b, link, page)
	u, err := url.Parse(loc)
	if status != http.StatusSeeOther || err != nil || !strings.HasPrefix(loc, c.provider.AuthURL()+"?") {
		c.t.Fatalf("continue: %d %q", status, loc)
	}
	q := u.Query()
	if q.Get("code_challenge_method") != "S256" || len(q.Get("code_challenge")) != 43 || len(q.Get("state")) != 43 ||
		q.Get("client_id") != demoOAuthClientID || q.Get("redirect_uri") != c.url+"/connect/callback" || q.Has("code_verifier") {
		c.t.Fatalf("authorize URL: %s", loc)
	}
	return loc
}

func stateOf(t *testing.T, rawURL string) string {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Query().Get("state")
}

func codeOf(t *testing.T, rawURL string) string {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Query().Get("code")
}

func (c *calEnv) callback(code, state string) string {
	return c.url + "/connect/callback?" + url.Values{"code": {code}, "state": {state}}.Encode()
}

// assertNotConnected checks, through the MCP tools, that nobody in users
// has a calendar token stored.
func (c *calEnv) assertNotConnected(id int, users ...string) {
	c.t.Helper()
	for i, u := range users {
		if r := c.call(id+i, u, calendar.EventsToolName, ""); !r.isError() || r.text() != calendar.TextNotConnected {
			c.t.Fatalf("%s has a calendar stored: %s", u, r.Raw)
		}
	}
}

// Acceptance 1: bob, signed in as bob, opens alice's link: refused before
// any redirect, and nothing stored for anyone.
func TestCalendarOtherUserRefusedBeforeRedirect(t *testing.T) {
	c := newCalEnv(t)
	first := c.call(1, "alice", calendar.ToolName, "")
	link := c.link(first)

	bob := c.browser()
	status, page := c.open(bob, link, "bob")
	if status != http.StatusForbidden || !strings.Contains(page, `id="wrong-account"`) || strings.Contains(page, `id="connect-form"`) {
		t.Fatalf("bob on alice's link: %d\n%s", status, page)
	}
	// Bob presses a forged Continue with his own valid CSRF token.
	status, loc := c.toProvider(bob, link, page)
	if status != http.StatusForbidden || loc != "" {
		t.Fatalf("bob's POST: %d, Location %q", status, loc)
	}
	for _, s := range c.pages.seen {
		if strings.HasPrefix(s, "LOCATION ") && strings.Contains(s, c.provider.URL()) {
			t.Fatalf("a redirect to the provider happened: %s", s)
		}
	}
	if n := c.provider.AuthorizeRequests(); n != 0 {
		t.Fatalf("the provider saw %d authorize requests", n)
	}
	if n := strings.Count(c.logs.String(), "event=flow_refused_other_user"); n != 2 {
		t.Fatalf("%d audit lines for bob's two attempts, want 2", n)
	}
	if strings.Contains(c.logs.String(), "event=oauth_redirect") {
		t.Fatal("an OAuth attempt was started for bob")
	}
	c.assertNotConnected(10, "alice", "bob")
	if r := c.call(20, "alice", calendar.ToolName, calAnswer("accept", first.state())); c.link(r) != link {
		t.Fatalf("alice's flow moved on: %s", r.Raw)
	}
}

// Acceptance 2: tampered callbacks are refused and store nothing.
func TestCalendarCallbackTampering(t *testing.T) {
	c := newCalEnv(t)
	aliceLink := c.link(c.call(1, "alice", calendar.ToolName, ""))
	bobLink := c.link(c.call(2, "bob", calendar.ToolName, ""))
	alice, bob := c.browser(), c.browser()
	cb1 := c.approve(alice, c.startAttempt(alice, aliceLink, "alice"), "alice")
	code1, state1 := codeOf(t, cb1), stateOf(t, cb1)
	bobCB := c.approve(bob, c.startAttempt(bob, bobLink, "bob"), "bob")

	refused := func(t *testing.T, b *browser, u string, wantStatus int, wantID string) {
		t.Helper()
		status, loc, page := b.get(u)
		if status != wantStatus || loc != "" || !strings.Contains(page, `id="`+wantID+`"`) || strings.Contains(page, `id="done"`) {
			t.Fatalf("GET %s: %d %q\n%s", u, status, loc, page)
		}
	}
	const random = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQ" // well-formed, never issued
	cases := []struct {
		name   string
		b      *browser
		url    string
		status int
		id     string
		reason string
	}{
		{"wrong state", alice, c.callback(code1, random), 400, "refused", "unknown_state"},
		{"malformed state", alice, c.callback(code1, "x"), 400, "refused", "malformed_state"},
		{"no state", alice, c.url + "/connect/callback?code=" + url.QueryEscape(code1), 400, "refused", "malformed_state"},
		{"state of another flow (bob's), in alice's browser", alice, c.callback(code1, stateOf(t, bobCB)), 403, "wrong-account", "flow_refused_other_user"},
		{"bob's state, now used, in bob's browser", bob, bobCB, 400, "refused", "replayed_state"},
		{"alice's callback in bob's browser", bob, cb1, 403, "wrong-account", "flow_refused_other_user"},
		{"alice's callback replayed in her browser", alice, cb1, 400, "refused", "replayed_state"},
		{"no browser session", c.browser(), c.callback(code1, state1), 400, "refused", "replayed_state"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := strings.Count(c.logs.String(), tc.reason)
			refused(t, tc.b, tc.url, tc.status, tc.id)
			if strings.Count(c.logs.String(), tc.reason) <= before {
				t.Fatalf("no audit line with %q", tc.reason)
			}
		})
	}
	t.Run("no browser session, fresh state", func(t *testing.T) {
		cb := c.approve(alice, c.startAttempt(alice, aliceLink, "alice"), "alice")
		refused(t, c.browser(), cb, 403, "refused")
		refused(t, alice, cb, 400, "refused") // consumed by the first callback
	})
	t.Run("code of one attempt with the state of another (PKCE)", func(t *testing.T) {
		cbA := c.approve(alice, c.startAttempt(alice, aliceLink, "alice"), "alice")
		authB := c.startAttempt(alice, aliceLink, "alice")
		refused(t, alice, c.callback(codeOf(t, cbA), stateOf(t, authB)), http.StatusBadGateway, "exchange-failed")
		if !strings.Contains(c.logs.String(), "reason=provider_invalid_grant") {
			t.Fatal("the provider's refusal is not in the log")
		}
	})
	t.Run("Continue without CSRF or from another origin", func(t *testing.T) {
		status, page := c.open(alice, aliceLink, "alice")
		if status != 200 {
			t.Fatalf("connect page: %d", status)
		}
		if status, loc, _ := alice.post(aliceLink, url.Values{"csrf": {"x"}}); status != 403 || loc != "" {
			t.Fatalf("bad csrf: %d %q", status, loc)
		}
		req, _ := http.NewRequest("POST", aliceLink, strings.NewReader(url.Values{"csrf": {csrfOf(t, page)}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Sec-Fetch-Site", "cross-site")
		resp, err := alice.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 403 || resp.Header.Get("Location") != "" {
			t.Fatalf("cross-site POST: %d %q", resp.StatusCode, resp.Header.Get("Location"))
		}
		req, _ = http.NewRequest("GET", aliceLink, nil)
		req.Host = "evil.example"
		if resp, err := alice.client.Do(req); err != nil || resp.StatusCode != http.StatusForbidden {
			t.Fatalf("connect page with a foreign Host: %v %v", resp.StatusCode, err)
		}
	})
	c.assertNotConnected(100, "alice", "bob")
	if r := c.call(110, "alice", calendar.ToolName, calAnswer("accept", "")); r.Status != 400 {
		t.Fatalf("an empty state was accepted: %s", r.Raw)
	}
	t.Run("provider error", func(t *testing.T) {
		// Last: a denial closes the flow, so the link then takes nothing.
		auth := c.startAttempt(alice, aliceLink, "alice")
		refused(t, alice, c.url+"/connect/callback?error=access_denied&state="+url.QueryEscape(stateOf(t, auth)), 200, "denied")
	})
}

// Acceptance 3 and 4: alice and bob each connect their own calendar; each
// sees only their own events; no provider code or token appears in any
// MCP exchange, any URL the MCP client saw, or the log; no MCP token
// reached the provider.
func TestCalendarHappyPathAndNoLeak(t *testing.T) {
	c := newCalEnv(t)
	c.provider.SetEvents("alice", []fakeoauth.Event{{ID: "a1", Title: "Alice's dentist", Start: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)}})
	c.provider.SetEvents("bob", []fakeoauth.Event{{ID: "b1", Title: "Bob's job interview", Start: time.Date(2026, 12, 2, 15, 0, 0, 0, time.UTC)}})

	c.assertNotConnected(1, "alice")
	c.connectUser(t, "alice", 10)
	c.connectUser(t, "bob", 20)

	for user, want := range map[string][2]string{"alice": {"Alice's dentist", "Bob"}, "bob": {"Bob's job interview", "Alice"}} {
		r := c.call(30, user, calendar.EventsToolName, "")
		if r.isError() || !strings.Contains(r.text(), `"`+want[0]+`"`) || strings.Contains(r.text(), want[1]) {
			t.Fatalf("%s's events: %s", user, r.Raw)
		}
	}

	t.Run("access revoked at the provider", func(t *testing.T) {
		c.provider.Revoke("bob")
		if r := c.call(35, "bob", calendar.EventsToolName, ""); !r.isError() || r.text() != calendar.TextRejected {
			t.Fatalf("bob after revocation: %s", r.Raw)
		}
		if r := c.call(36, "alice", calendar.EventsToolName, ""); r.isError() {
			t.Fatalf("alice after bob's revocation: %s", r.Raw)
		}
		// connect_calendar no longer says "already connected": bob
		// connects again, and his events come back.
		c.connectUser(t, "bob", 60)
		if r := c.call(37, "bob", calendar.EventsToolName, ""); r.isError() || !strings.Contains(r.text(), "Bob's job interview") {
			t.Fatalf("bob after reconnecting: %s", r.Raw)
		}
	})
	t.Run("decline and cancel are distinct, on a fresh user", func(t *testing.T) {
		st := c.call(40, "carol", calendar.ToolName, "").state()
		d := c.call(41, "carol", calendar.ToolName, calAnswer("decline", st))
		// Decline is final for that flow: cancel is tried on a new one.
		x := c.call(42, "carol", calendar.ToolName, calAnswer("cancel", c.call(44, "carol", calendar.ToolName, "").state()))
		if !d.isError() || !x.isError() || d.text() != calendar.TextDeclined || x.text() != calendar.TextCancelled {
			t.Fatalf("decline %s\ncancel %s", d.Raw, x.Raw)
		}
		c.call(43, "carol", calendar.ToolName, "").wantResultType(t, "input_required")
	})
	t.Run("a form-only client is refused with -32021", func(t *testing.T) {
		c.mcp("dave", "tools/call", calendar.ToolName, callBody(50, calendar.ToolName, "", metaForm)).wantError(t, 400, -32021)
	})

	// Acceptance 4: the leak check.
	c.checkNoProviderSecretLeaked(t)
}

// connectUser runs connect_calendar for user end to end (request ids
// from id): asked, accepted before the provider step (same link again),
// approved at the provider, the callback's replay refused, the retry
// connected, a new call already connected. It returns the link.
func (c *calEnv) connectUser(t *testing.T, user string, id int) string {
	t.Helper()
	first := c.call(id, user, calendar.ToolName, "")
	link := c.link(first)
	// Accepting before the provider step is still pending: same link.
	pending := c.call(id+1, user, calendar.ToolName, calAnswer("accept", first.state()))
	if c.link(pending) != link {
		t.Fatalf("pending re-ask has another link: %s", pending.Raw)
	}
	b := c.browser()
	cb := c.approve(b, c.startAttempt(b, link, user), user)
	status, _, page := b.get(cb)
	if status != 200 || !strings.Contains(page, `id="done"`) {
		t.Fatalf("%s's callback: %d\n%s", user, status, page)
	}
	// A replay of the successful callback is refused.
	if status, _, _ := b.get(cb); status != 400 {
		t.Fatalf("replayed callback: %d", status)
	}
	r := c.call(id+2, user, calendar.ToolName, calAnswer("accept", pending.state()))
	if r.resultType() != "complete" || r.isError() || r.text() != fmt.Sprintf(calendar.TextConnectedAs, `"`+user+`"`) {
		t.Fatalf("%s's retry: %s", user, r.Raw)
	}
	if r := c.call(id+3, user, calendar.ToolName, ""); r.text() != calendar.TextAlreadyConnected {
		t.Fatalf("%s again: %s", user, r.Raw)
	}
	return link
}

// checkNoProviderSecretLeaked checks that no code or token of the
// provider reached the log or an MCP exchange, that every URL the MCP
// client saw is ours, and that no MCP token reached the provider.
func (c *calEnv) checkNoProviderSecretLeaked(t *testing.T) {
	t.Helper()
	secrets := c.provider.Issued()
	if len(secrets) != 9 { // three codes (bob connected twice), three access and three refresh tokens
		t.Fatalf("provider issued %d values, want 9", len(secrets))
	}
	mcpSeen := c.rec.seen // every MCP request URL, response body and Location
	if len(mcpSeen) < 40 {
		t.Fatalf("only %d MCP items recorded: the check would prove nothing", len(mcpSeen))
	}
	logs := c.logs.String()
	for _, sec := range secrets {
		if strings.Contains(logs, sec) {
			t.Fatal("a provider code or token appears in the log")
		}
		for _, s := range mcpSeen {
			if strings.Contains(s, sec) {
				t.Fatalf("a provider code or token appears in an MCP exchange: %.40s…", s)
			}
		}
	}
	// Every URL the MCP client was shown is our own connect route.
	for _, u := range regexp.MustCompile(`https?://[^"\s\\]+`).FindAllString(strings.Join(mcpSeen, "\n"), -1) {
		if !strings.HasPrefix(u, c.url+"/") {
			t.Fatalf("the MCP client saw a URL off our server: %s", u)
		}
	}
	// The browser did carry the code (that is its job), so the check above
	// is not vacuous.
	if !strings.Contains(strings.Join(c.pages.seen, "\n"), secrets[0]) {
		t.Fatal("the first code never reached a browser: the leak check is vacuous")
	}
	// No MCP token (here "Bearer alice" etc.) reached the provider: only
	// client authentication and its own access tokens.
	issued := map[string]bool{}
	for _, s := range secrets {
		issued[s] = true
	}
	hdrs := c.provider.AuthorizationHeaders()
	if len(hdrs) < 4 {
		t.Fatalf("provider saw %d Authorization headers", len(hdrs))
	}
	for _, h := range hdrs {
		if !strings.HasPrefix(h, "Basic ") && !(strings.HasPrefix(h, "Bearer ") && issued[strings.TrimPrefix(h, "Bearer ")]) {
			t.Fatalf("the provider received a foreign Authorization header: %q", h)
		}
	}
}

func (r *mcpResponse) wantResultType(t *testing.T, want string) {
	t.Helper()
	if r.resultType() != want {
		t.Fatalf("want resultType %q: %s", want, r.Raw)
	}
}
