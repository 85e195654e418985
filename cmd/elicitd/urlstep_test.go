package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdkjsonrpc "github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-elicit/elicit/examples/billing"
	"github.com/mcp-elicit/elicit/examples/calendar"
	"github.com/mcp-elicit/elicit/examples/reports"
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

// A 2025 client that answers elicitation/create with an error (go-sdk
// does, for an answer that fails its own schema check): the call ends
// with the client's code and words, and the ending is audited and counted
// as a fault of the operation.
func TestLegacyClientErrorAudited(t *testing.T) {
	audit := &syncBuffer{}
	e := newEnvWith(t, func(c *config) { c.auditOut = audit })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := e.connect2025(ctx, "alice", nil, func(int, *sdk.ElicitParams) *sdk.ElicitResult {
		return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"detail": "bogus", "label": "x"}}
	})
	_, err := c.cs.CallTool(ctx, &sdk.CallToolParams{Name: reports.ToolExport, Arguments: map[string]any{"period": "2026-Q2", "dataset": "sales"}})
	var we *sdkjsonrpc.Error
	if !errors.As(err, &we) || we.Code != -32602 || !strings.HasPrefix(we.Message, "The client answered elicitation/create with error -32602: ") || len(we.Message) < 70 {
		t.Fatalf("want the client's -32602 and its words, got %v", err)
	}
	var rounds []auditLine
	for _, l := range auditLines(t, audit.String()) {
		if l.Msg == "mcp_round" && l.Name == reports.ToolExport {
			rounds = append(rounds, l)
		}
	}
	if len(rounds) != 2 || rounds[1].Outcome != "fault" || rounds[1].Code != -32602 || rounds[1].OperationID != rounds[0].OperationID || *rounds[1].Round != 1 {
		t.Fatalf("audit: %+v", rounds)
	}
	resp, err := http.Get(e.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	m, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(m), `elicitd_faults_total{code="-32602",method="tools/call"} 1`) {
		t.Fatalf("the ending is not counted:\n%s", grepLines(string(m), "elicitd_faults_total"))
	}
}

// A 2025 client's early accept is held by the step too (the bridge passes
// the client's progressToken, so the client hears that the server waits),
// and the page finished meanwhile completes the call without a second
// prompt.
func TestLegacyURLWaits(t *testing.T) {
	e := newEnvWith(t, func(c *config) { c.urlWait = time.Minute })
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var asked atomic.Int32
	links := make(chan string, 4)
	var once sync.Once
	progressed := make(chan struct{})
	client := sdk.NewClient(&sdk.Implementation{Name: "gosdk-2025", Version: "v1.8.0"}, &sdk.ClientOptions{
		Capabilities: &sdk.ClientCapabilities{Elicitation: &sdk.ElicitationCapabilities{URL: &sdk.URLElicitationCapabilities{}}},
		ElicitationHandler: func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			asked.Add(1)
			links <- req.Params.URL
			return &sdk.ElicitResult{Action: "accept"}, nil // before the page
		},
		ProgressNotificationHandler: func(context.Context, *sdk.ProgressNotificationClientRequest) {
			once.Do(func() { close(progressed) })
		},
	})
	cs, err := client.Connect(ctx, e.gosdkTransport("alice", http.DefaultTransport), &sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	params := &sdk.CallToolParams{Name: billing.ToolName, Arguments: map[string]any{}}
	params.SetProgressToken("urlwait-1")
	done := make(chan struct{})
	var res *sdk.CallToolResult
	go func() {
		defer close(done)
		res, err = cs.CallTool(ctx, params)
	}()
	select {
	case <-progressed:
	case <-done:
		t.Fatalf("the call ended before the server said it waits: %v %+v", err, res)
	}
	e.connectBrowserStep(t, <-links)
	<-done
	if err != nil || res.IsError || toolText(t, res) != billing.TextConnected {
		t.Fatalf("result: %v %+v", err, res)
	}
	if n := asked.Load(); n != 1 {
		t.Fatalf("asked %d times, want once", n)
	}
}

// A 2025 client's early accept is held for one --url-wait in all, not one
// per bridge poll: when the step's wait ends with the page unfinished, the
// user is asked again at once (two connect_billing rounds before the second
// question: the first call and the one held retry).
func TestLegacyURLWaitHeldOnce(t *testing.T) {
	audit := &syncBuffer{}
	e := newEnvWith(t, func(c *config) { c.urlWait = 100 * time.Millisecond; c.auditOut = audit })
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	rounds := func() int {
		n := 0
		for _, l := range auditLines(t, audit.String()) {
			if l.Msg == "mcp_round" && l.Name == billing.ToolName {
				n++
			}
		}
		return n
	}
	var asked atomic.Int32
	var before int
	client := sdk.NewClient(&sdk.Implementation{Name: "gosdk-2025", Version: "v1.8.0"}, &sdk.ClientOptions{
		Capabilities: &sdk.ClientCapabilities{Elicitation: &sdk.ElicitationCapabilities{URL: &sdk.URLElicitationCapabilities{}}},
		ElicitationHandler: func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			if asked.Add(1) == 1 {
				return &sdk.ElicitResult{Action: "accept"}, nil // before the page, which is never finished
			}
			before = rounds()
			return &sdk.ElicitResult{Action: "decline"}, nil
		},
	})
	cs, err := client.Connect(ctx, e.gosdkTransport("alice", http.DefaultTransport), &sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	params := &sdk.CallToolParams{Name: billing.ToolName, Arguments: map[string]any{}}
	params.SetProgressToken("held-once")
	res, err := cs.CallTool(ctx, params)
	if err != nil || !res.IsError || toolText(t, res) != billing.TextDeclined {
		t.Fatalf("result: %v %+v", err, res)
	}
	if asked.Load() != 2 || before != 2 {
		t.Fatalf("asked %d times; %d rounds before the second question, want 2 (the first call, one held retry)", asked.Load(), before)
	}
}

// Once the page is finished, the first answer recorded for the operation
// wins: the same requestState replayed with cancel, accept and decline gets
// the first one's result every time, and the audit shows one outcome.
func TestURLStepFinishedFirstAnswerWins(t *testing.T) {
	for _, tc := range []struct {
		first   string
		text    string
		isError bool
		outcome string
	}{
		{"cancel", billing.TextCancelledKept, true, "cancelled"},
		{"accept", billing.TextConnected, false, "accepted"},
		{"decline", billing.TextDeclinedKept, true, "declined"},
	} {
		t.Run(tc.first, func(t *testing.T) {
			audit := &syncBuffer{}
			e := newEnvWith(t, func(c *config) { c.auditOut = audit })
			first := e.connect(1, "alice", "")
			_, _, link := first.elicitation(t)
			e.connectBrowserStep(t, link)
			order := []string{tc.first}
			for _, a := range []string{"cancel", "accept", "decline"} {
				if a != tc.first {
					order = append(order, a)
				}
			}
			for i, a := range order {
				r := e.connect(2+i, "alice", answer(a, first.state()))
				if r.resultType() != "complete" || r.isError() != tc.isError || r.text() != tc.text {
					t.Fatalf("%s after the page (first answer %s): %s", a, tc.first, r.Raw)
				}
			}
			var outcomes []string
			for _, l := range auditLines(t, audit.String()) {
				if l.Msg == "mcp_round" && l.Name == billing.ToolName {
					outcomes = append(outcomes, l.Outcome)
				}
			}
			want := "input_required " + strings.Repeat(tc.outcome+" ", 3)
			if got := strings.Join(outcomes, " ") + " "; got != want {
				t.Fatalf("audit outcomes %q, want %q", got, want)
			}
		})
	}
}

// A denial at the calendar provider ends a held retry at once (the wait is
// an hour) with a result saying the provider denied access, an isError the
// user can restart from; the link then takes nothing, and a new call
// starts afresh.
func TestCalendarDenialEndsTheWait(t *testing.T) {
	w := newWaitEnvFor(t, calendar.ToolName)
	c := &calEnv{env: w.env, provider: w.app.calendarProvider, pages: &recorder{}}
	first := c.call(1, "alice", calendar.ToolName, "")
	link := c.link(first)
	held := make(chan *mcpResponse, 1)
	go func() {
		// Through the front that sees the server hold the retry.
		held <- c.mcpAt(w.mcpURL, "alice", "tools/call", calendar.ToolName, callBody(2, calendar.ToolName, calAnswer("accept", first.state()), metaURL))
	}()
	select {
	case <-w.held: // deny only once the server holds the retry
	case r := <-held:
		t.Fatalf("the retry was not held: %s", r.Raw)
	}
	alice := c.browser()
	auth := c.startAttempt(alice, link, "alice")
	status, _, page := alice.get(c.url + "/connect/callback?error=access_denied&state=" + url.QueryEscape(stateOf(t, auth)))
	if status != 200 || !strings.Contains(page, "Access was not granted") {
		t.Fatalf("callback with a denial: %d\n%s", status, page)
	}
	r := <-held
	if !r.isError() || r.text() != calendar.TextDenied {
		t.Fatalf("held retry after the denial: %s", r.Raw)
	}
	if r := c.call(3, "alice", calendar.ToolName, calAnswer("accept", first.state())); !r.isError() || r.text() != calendar.TextDenied {
		t.Fatalf("replay after the denial: %s", r.Raw)
	}
	if again := c.link(c.call(4, "alice", calendar.ToolName, "")); again == link {
		t.Fatal("a new call reuses the denied link")
	}
}
