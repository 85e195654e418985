package main

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcp-elicit/elicit/examples/billing"
	"github.com/mcp-elicit/elicit/examples/calendar"
)

// One rule for the lifetimes of flow, link and state: a page finished
// while its link lived is reported as connected, even after the state
// carrying the link expired; a link that expired takes no key and its
// retry gets a new link saying why. Never "-32602 invalid or expired
// requestState" for a finished page.
func TestURLStepLifetimes(t *testing.T) {
	t.Run("page at 9 minutes, accept at 10", func(t *testing.T) {
		e := newEnv(t)
		first := e.connect(1, "alice", "")
		_, _, link := first.elicitation(t)
		e.advance(9 * time.Minute)
		e.connectBrowserStep(t, link)
		e.advance(time.Minute + time.Second) // the state's 10 minutes are over
		r := e.connect(2, "alice", answer("accept", first.state()))
		if r.Status != 200 || r.resultType() != "complete" || r.isError() || r.text() != billing.TextConnected {
			t.Fatalf("accept after the state expired, page finished: %s", r.Raw)
		}
	})
	t.Run("page after the link expired", func(t *testing.T) {
		e := newEnv(t)
		first := e.connect(1, "alice", "")
		_, _, link := first.elicitation(t)
		e.advance(11 * time.Minute)
		alice := e.browser()
		if status, page := alice.login(e.url, link, "alice"); status != http.StatusNotFound || strings.Contains(page, `id="key-form"`) {
			t.Fatalf("an expired link still offers the key form: %d\n%s", status, page)
		}
		r := e.connect(2, "alice", answer("accept", first.state()))
		if r.resultType() != "input_required" {
			t.Fatalf("retry after the link expired: %s", r.Raw)
		}
		if _, msg, again := r.elicitation(t); again == link || !strings.HasPrefix(msg, "The earlier link expired; this is a new one.") {
			t.Fatalf("new link %q (old %q), message %q", again, link, msg)
		}
	})
}

// Decline and cancel of connect_billing are final: the link stops taking
// the key (and says why), a replay of the state with accept gets the
// recorded outcome, the audit trail shows one outcome for the operation,
// and billing is not connected. A new call starts over.
func TestURLStepDeclineCancelFinal(t *testing.T) {
	for _, tc := range []struct {
		action, text, page string
	}{
		{"decline", billing.TextDeclined, "You declined this step in your MCP client"},
		{"cancel", billing.TextCancelled, "This step was cancelled in your MCP client"},
	} {
		t.Run(tc.action, func(t *testing.T) {
			audit := &syncBuffer{}
			e := newEnvWith(t, func(c *config) { c.auditOut = audit })
			first := e.connect(1, "alice", "")
			_, _, link := first.elicitation(t)
			alice := e.browser()
			_, form := alice.login(e.url, link, "alice") // the page is open

			if r := e.connect(2, "alice", answer(tc.action, first.state())); !r.isError() || r.text() != tc.text {
				t.Fatalf("%s: %s", tc.action, r.Raw)
			}
			status, page := alice.fillKey(e.url, form, link, testKey)
			if status != http.StatusGone || !strings.Contains(page, tc.page) {
				t.Fatalf("key after %s: %d\n%s", tc.action, status, page)
			}
			if status, _, page := alice.get(link); status != http.StatusGone || !strings.Contains(page, tc.page) {
				t.Fatalf("link after %s: %d\n%s", tc.action, status, page)
			}
			if r := e.connect(3, "alice", answer("accept", first.state())); !r.isError() || r.text() != tc.text {
				t.Fatalf("replay with accept after %s: %s", tc.action, r.Raw)
			}
			if r := e.mcp("alice", "tools/call", billing.StatusToolName, callBody(4, billing.StatusToolName, "", metaURL)); r.text() != billing.TextStatusNotConnected {
				t.Fatalf("status: %s", r.Raw)
			}
			var outcomes []string
			for _, l := range auditLines(t, audit.String()) {
				if l.Msg == "mcp_round" && l.Name == billing.ToolName {
					outcomes = append(outcomes, l.Outcome)
				}
			}
			want := "input_required " + tc.action + "d " + tc.action + "d"
			if tc.action == "cancel" {
				want = "input_required cancelled cancelled"
			}
			if got := strings.Join(outcomes, " "); got != want {
				t.Fatalf("audit outcomes %q, want %q", got, want)
			}
			// Calling again is a fresh start, with a new link.
			if _, _, again := e.connect(5, "alice", "").elicitation(t); again == link {
				t.Fatal("a new call reopened the closed link")
			}
			e.assertNoLeak(t)
		})
	}
}

// The server's instructions say what every tool it lists is for.
func TestInstructionsNameEveryTool(t *testing.T) {
	e := newEnv(t)
	d := e.mcp("alice", "server/discover", "", `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{`+metaURL+`}}`)
	instr, _ := d.Result["instructions"].(string)
	l := e.mcp("alice", "tools/list", "", `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{`+metaURL+`}}`)
	tools, _ := l.Result["tools"].([]any)
	if len(tools) < 7 {
		t.Fatalf("tools/list: %s", l.Raw)
	}
	for _, tl := range tools {
		name := tl.(map[string]any)["name"].(string)
		if !strings.Contains(instr, name) {
			t.Errorf("the instructions do not name %s: %q", name, instr)
		}
	}
}

// The calendar result names the account the provider connected: alice,
// signed in at the provider as carol, learns it.
func TestCalendarNamesProviderAccount(t *testing.T) {
	c := newCalEnv(t)
	first := c.call(1, "alice", calendar.ToolName, "")
	link := c.link(first)
	b := c.browser()
	cb := c.approve(b, c.startAttempt(b, link, "alice"), "carol")
	if status, _, page := b.get(cb); status != 200 || !strings.Contains(page, `id="done"`) {
		t.Fatalf("callback: %d\n%s", status, page)
	}
	r := c.call(2, "alice", calendar.ToolName, calAnswer("accept", first.state()))
	if want := fmt.Sprintf(calendar.TextConnectedAs, `"carol"`); r.isError() || r.text() != want {
		t.Fatalf("result %s\nwant %q", r.Raw, want)
	}
}
