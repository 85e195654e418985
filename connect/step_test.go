package connect_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-elicit/elicit/auth"
	"github.com/mcp-elicit/elicit/connect"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpclient"
	"github.com/mcp-elicit/elicit/mcpserver"
	"github.com/mcp-elicit/elicit/reqstate"
	"github.com/mcp-elicit/elicit/streamhttp"
)

const stepTool = "connect_billing"

// stepEnv is a Step on an MCP endpoint (its own server) beside the
// harness's pages, sharing the harness's clock for the flows and the
// sealed states.
type stepEnv struct {
	*harness
	step   *connect.Step
	mcpURL string
	calls  atomic.Int32 // tools/call POSTs

	mu     sync.Mutex
	rounds []mcpserver.Round
	seen   chan mcpserver.Round // every round, as observed
}

func newStepEnv(t *testing.T, wait time.Duration) *stepEnv {
	t.Helper()
	return newStepEnvWith(t, wait, nil)
}

// newStepEnvWith is newStepEnv with the harness's Options adjusted by
// configure (newHarnessWith).
func newStepEnvWith(t *testing.T, wait time.Duration, configure func(*connect.Options)) *stepEnv {
	t.Helper()
	e := &stepEnv{harness: newHarnessWith(t, configure), seen: make(chan mcpserver.Round, 100)}
	sealer, err := reqstate.New([]reqstate.Key{reqstate.NewKey("k")}, &reqstate.Options{Now: e.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	srv := mcpserver.New(mcp.Implementation{Name: "steptest", Version: "1"}, &mcpserver.Options{
		Sealer: sealer,
		Logger: slog.New(slog.DiscardHandler),
		Observer: func(_ context.Context, r *mcpserver.Round) {
			e.mu.Lock()
			e.rounds = append(e.rounds, *r)
			e.mu.Unlock()
			e.seen <- *r
		},
	})
	e.step = &connect.Step{Flows: e.svc, Purpose: "billing_key", Name: "your billing account", Wait: wait}
	e.step.Register(srv, &mcp.Tool{Name: stepTool})
	h := streamhttp.NewHandler(srv, &streamhttp.Options{Auth: auth.DemoBearer{Realm: "t"}, Logger: slog.New(slog.DiscardHandler)})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Mcp-Method") == mcp.MethodToolsCall {
			e.calls.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	e.mcpURL = ts.URL
	return e
}

func (e *stepEnv) lastRound() mcpserver.Round {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.rounds[len(e.rounds)-1]
}

func (e *stepEnv) texts() connect.StepTexts {
	return connect.DefaultTexts("your billing account", stepTool)
}

// client is alice's MCP client; elicitURL answers the URL request.
func (e *stepEnv) client(elicitURL func(p *mcp.ElicitRequestParams) string, onProgress func(mcpclient.Progress)) *mcpclient.Client {
	return mcpclient.New(e.mcpURL, &mcpclient.Options{Token: "alice", OnProgress: onProgress,
		Handlers: &mcpclient.Handlers{ElicitURL: func(_ context.Context, _ mcpclient.Asker, _ string, p *mcp.ElicitRequestParams) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: elicitURL(p)}, nil
		}}})
}

// finishPage signs a new browser in as user and enters a key on the page
// of link.
func (e *stepEnv) finishPage(user, link string) {
	e.t.Helper()
	c := e.client0()
	u, _ := url.Parse(link)
	e.login(c, user, u.RequestURI())
	resp, body := e.get(c, u.RequestURI())
	if resp.StatusCode != http.StatusOK {
		e.t.Fatalf("key page: %d\n%s", resp.StatusCode, body)
	}
	resp, body = e.post(c, "/ui/set_api_key", url.Values{"api_key": {"sk_step_0123456789"}, "csrf": {field(e.t, csrfRE, body)}, "flow": {u.Query().Get("flow")}})
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `id="done"`) {
		e.t.Fatalf("key POST: %d\n%s", resp.StatusCode, body)
	}
}

func (e *stepEnv) client0() *http.Client { return e.harness.client() }

func text(r *mcp.CallToolResult) string {
	if r == nil || len(r.Content) == 0 {
		return ""
	}
	return r.Content[0].Text
}

// first makes the first call and returns its interim result.
func (e *stepEnv) first(c *mcpclient.Client) *mcpclient.InputRequired {
	e.t.Helper()
	_, ir, err := c.CallToolOnce(e.t.Context(), stepTool, nil, nil)
	if err != nil || ir == nil {
		e.t.Fatalf("first call: %v", err)
	}
	return ir
}

// answer retries ir with action for the URL request.
func (e *stepEnv) answer(c *mcpclient.Client, ir *mcpclient.InputRequired, action string) (*mcp.CallToolResult, *mcpclient.InputRequired) {
	e.t.Helper()
	res, next, err := c.CallToolOnce(e.t.Context(), stepTool, nil, ir.Retry(map[string]any{"billing_key": &mcp.ElicitResult{Action: action}}))
	if err != nil {
		e.t.Fatalf("%s: %v", action, err)
	}
	return res, next
}

// rawAccept posts the accept retry of ir by hand, without a progressToken,
// with the Accept header accept, and returns the response (open).
func (e *stepEnv) rawAccept(ir *mcpclient.InputRequired, accept string) *http.Response {
	e.t.Helper()
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":%q,"arguments":{},`+
		`"inputResponses":{"billing_key":{"action":"accept"}},"requestState":%q,`+
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"url":{}}}}}}`,
		stepTool, ir.RequestState)
	req, _ := http.NewRequestWithContext(e.t.Context(), http.MethodPost, e.mcpURL, strings.NewReader(body))
	for k, v := range map[string]string{"Content-Type": "application/json", "Accept": accept,
		"Authorization": "Bearer alice", "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": stepTool} {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func accepting(*mcp.ElicitRequestParams) string { return mcp.ActionAccept }

func elicitParams(t *testing.T, ir *mcpclient.InputRequired) *mcp.ElicitRequestParams {
	t.Helper()
	if ir == nil {
		t.Fatal("want input_required")
	}
	p, err := ir.InputRequests["billing_key"].ElicitParams()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// An accept that comes before the page is finished is held, and answered
// as soon as the page is finished: one retry, one question. The wait is an
// hour, so a step that polled, or did not wait, could not pass.
func TestStepWaitsForThePage(t *testing.T) {
	e := newStepEnv(t, time.Hour)
	var link string
	asked := 0
	finished := false
	c := e.client(func(p *mcp.ElicitRequestParams) string {
		asked++
		link = p.URL
		return mcp.ActionAccept // before the page: the user has not typed the key yet
	}, func(p mcpclient.Progress) {
		// The server says it is waiting: now the user finishes the page.
		if !finished {
			finished = true
			e.finishPage("alice", link)
		}
	})
	res, err := c.CallTool(t.Context(), stepTool, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError || text(res) != e.texts().Connected {
		t.Fatalf("result %+v", res)
	}
	if asked != 1 || e.calls.Load() != 2 || !finished {
		t.Fatalf("asked %d times, %d tools/call requests, page finished %v; want 1, 2 (one retry), true", asked, e.calls.Load(), finished)
	}
	if r := e.lastRound(); r.Outcome != mcpserver.OutcomeAccepted {
		t.Fatalf("round outcome %q", r.Outcome)
	}
}

// Past the wait the step answers input_required again, with the same link.
func TestStepWaitEnds(t *testing.T) {
	e := newStepEnv(t, time.Millisecond)
	c := e.client(accepting, nil)
	ir := e.first(c)
	link := elicitParams(t, ir).URL
	_, ir2 := e.answer(c, ir, mcp.ActionAccept)
	if p := elicitParams(t, ir2); p.URL != link || p.Message != e.texts().Pending {
		t.Fatalf("after the wait: %q %q", p.URL, p.Message)
	}
	if r := e.lastRound(); r.Outcome != mcpserver.OutcomePending {
		t.Fatalf("round outcome %q", r.Outcome)
	}
}

// Without a progressToken the held response is kept alive with SSE
// comments, and ends with the result once the page is finished.
func TestStepKeepAliveWithoutProgressToken(t *testing.T) {
	e := newStepEnv(t, time.Hour)
	ir := e.first(e.client(accepting, nil))
	resp := e.rawAccept(ir, "application/json, text/event-stream")
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	rd := bufio.NewReader(resp.Body)
	line, err := rd.ReadString('\n')
	if err != nil || line != ": keep-alive\n" {
		t.Fatalf("first line %q, %v; want an SSE comment", line, err)
	}
	e.finishPage("alice", elicitParams(t, ir).URL)
	rest, _ := io.ReadAll(rd)
	var final struct {
		Result mcp.CallToolResult `json:"result"`
	}
	_, data, _ := strings.Cut(string(rest), "data: ")
	if err := json.Unmarshal([]byte(data), &final); err != nil || text(&final.Result) != e.texts().Connected {
		t.Fatalf("rest of the stream %q: %v", rest, err)
	}
}

// A client that accepts JSON only still gets its answer, when the wait
// ends: nothing is streamed to it.
func TestStepWaitJSONOnlyClient(t *testing.T) {
	e := newStepEnv(t, time.Millisecond)
	resp := e.rawAccept(e.first(e.client(accepting, nil)), "application/json")
	b, _ := io.ReadAll(resp.Body)
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" || !strings.Contains(string(b), `"resultType":"input_required"`) {
		t.Fatalf("%s: %s", ct, b)
	}
}

// Decline and cancel are final: the page stops taking the key and says
// why, and a replay of the state, even with accept, gets the same result
// (and is audited so); a new call starts a new flow.
func TestStepDeclineAndCancelAreFinal(t *testing.T) {
	for _, tc := range []struct {
		action  string
		text    func(connect.StepTexts) string
		outcome mcpserver.Outcome
		page    string
	}{
		{mcp.ActionDecline, func(t connect.StepTexts) string { return t.Declined }, mcpserver.OutcomeDeclined, "You declined this step"},
		{mcp.ActionCancel, func(t connect.StepTexts) string { return t.Cancelled }, mcpserver.OutcomeCancelled, "This step was cancelled"},
	} {
		t.Run(tc.action, func(t *testing.T) {
			e := newStepEnv(t, time.Hour)
			c := e.client(func(*mcp.ElicitRequestParams) string { return tc.action }, nil)
			ir := e.first(c)
			link := elicitParams(t, ir).URL
			// The user opens the page before answering in the client.
			b := e.client0()
			u, _ := url.Parse(link)
			e.login(b, "alice", u.RequestURI())
			_, form := e.get(b, u.RequestURI())
			csrf := field(t, csrfRE, form)

			answer := func(action string) *mcp.CallToolResult {
				t.Helper()
				res, next := e.answer(c, ir, action)
				if next != nil {
					t.Fatalf("%s: input_required again", action)
				}
				return res
			}
			if r := answer(tc.action); !r.IsError || text(r) != tc.text(e.texts()) {
				t.Fatalf("%s: %+v", tc.action, r)
			}
			// The page no longer takes the key, and says why.
			resp, body := e.post(b, "/ui/set_api_key", url.Values{"api_key": {"sk_late_0123456789"}, "csrf": {csrf}, "flow": {u.Query().Get("flow")}})
			if resp.StatusCode != http.StatusGone || !strings.Contains(body, `id="closed"`) || !strings.Contains(body, tc.page) {
				t.Fatalf("key after %s: %d\n%s", tc.action, resp.StatusCode, body)
			}
			e.wantNoSecret("alice")
			// A replay, whatever it answers, gets the recorded outcome.
			for _, again := range []string{mcp.ActionAccept, mcp.ActionDecline, mcp.ActionCancel} {
				if r := answer(again); !r.IsError || text(r) != tc.text(e.texts()) {
					t.Fatalf("replay with %s: %+v", again, r)
				}
				if r := e.lastRound(); r.Outcome != tc.outcome {
					t.Fatalf("replay with %s audited as %q", again, r.Outcome)
				}
			}
			e.wantNoSecret("alice")
			// A new call is a new flow.
			if elicitParams(t, e.first(c)).URL == link {
				t.Fatal("a new call reuses the closed flow")
			}
		})
	}
}

// A client that goes away while its retry is held leaves the step
// pending: no fault, and the page can still be finished.
func TestStepClientGoesAway(t *testing.T) {
	e := newStepEnv(t, time.Hour)
	ctx, cancel := context.WithCancel(t.Context())
	c := e.client(accepting, func(mcpclient.Progress) { cancel() }) // gone at the first keep-alive
	ir := e.first(c)
	if r := <-e.seen; r.Outcome != mcpserver.OutcomeInputRequired {
		t.Fatalf("first round %q", r.Outcome)
	}
	if _, _, err := c.CallToolOnce(ctx, stepTool, nil, ir.Retry(map[string]any{"billing_key": &mcp.ElicitResult{Action: mcp.ActionAccept}})); !errors.Is(err, context.Canceled) {
		t.Fatalf("held retry: %v", err)
	}
	if r := <-e.seen; r.Outcome != mcpserver.OutcomePending || r.Code != 0 {
		t.Fatalf("the abandoned retry was reported as %q (code %d), want pending", r.Outcome, r.Code)
	}
	e.finishPage("alice", elicitParams(t, ir).URL)
}

// A decline from another retry ends a retry that is waiting for the page.
func TestStepDeclineEndsAWait(t *testing.T) {
	e := newStepEnv(t, time.Hour)
	waiting := make(chan struct{})
	var once sync.Once
	c := e.client(accepting, func(mcpclient.Progress) { once.Do(func() { close(waiting) }) })
	ir := e.first(c)
	done := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, _, err := c.CallToolOnce(context.Background(), stepTool, nil, ir.Retry(map[string]any{"billing_key": &mcp.ElicitResult{Action: mcp.ActionAccept}}))
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	<-waiting
	if res, _ := e.answer(c, ir, mcp.ActionDecline); text(res) != e.texts().Declined {
		t.Fatalf("decline: %+v", res)
	}
	if r := <-done; r == nil || text(r) != e.texts().Declined {
		t.Fatalf("the waiting retry: %+v", r)
	}
}

// One rule for the lifetimes: a page finished before the link expired is
// reported as connected even when the state carrying it expired; a link
// that expired is replaced by a new one, and the retry says why.
func TestStepLifetimes(t *testing.T) {
	t.Run("page finished, state expired", func(t *testing.T) {
		e := newStepEnv(t, -1)
		c := e.client(accepting, nil)
		ir := e.first(c)
		e.clock.Advance(9 * time.Minute)
		e.finishPage("alice", elicitParams(t, ir).URL)
		e.clock.Advance(time.Minute + time.Second) // the state lived reqstate.DefaultTTL
		if res, _ := e.answer(c, ir, mcp.ActionAccept); res == nil || res.IsError || text(res) != e.texts().Connected {
			t.Fatalf("retry after the state expired: %+v", res)
		}
	})
	t.Run("link expired, state alive", func(t *testing.T) {
		e := newStepEnv(t, -1)
		c := e.client(accepting, nil)
		ir := e.first(c)
		link := elicitParams(t, ir).URL
		e.clock.Advance(9 * time.Minute) // accepted early: pending, with a state sealed now
		if _, ir = e.answer(c, ir, mcp.ActionAccept); elicitParams(t, ir).URL != link {
			t.Fatal("pending: another link")
		}
		e.clock.Advance(2 * time.Minute) // the link's 10 minutes are over; the new state's are not
		_, ir = e.answer(c, ir, mcp.ActionAccept)
		if p := elicitParams(t, ir); p.URL == link || p.Message != e.texts().Expired+e.texts().Ask {
			t.Fatalf("after the link expired: %q %q", p.URL, p.Message)
		}
	})
}

// A Step needs a user: serving it anonymously fails when the handler is
// built, whichever comes first.
func TestStepRequiresPrincipal(t *testing.T) {
	h := newHarness(t)
	wantPanic := func(what, want string, f func()) {
		t.Helper()
		defer func() {
			r := recover()
			if s, _ := r.(string); !strings.Contains(s, want) {
				t.Fatalf("%s: panic %v, want one naming %q", what, r, want)
			}
		}()
		f()
	}
	srv := mcpserver.New(mcp.Implementation{Name: "x", Version: "1"}, nil)
	step := &connect.Step{Flows: h.svc, Purpose: "billing_key"}
	step.Register(srv, &mcp.Tool{Name: stepTool})
	wantPanic("NewHandler after Register", "tool "+stepTool, func() { streamhttp.NewHandler(srv, nil) })

	srv2 := mcpserver.New(mcp.Implementation{Name: "x", Version: "1"}, nil)
	streamhttp.NewHandler(srv2, &streamhttp.Options{Auth: auth.Anonymous{}})
	wantPanic("Register after NewHandler", stepTool, func() { step.Register(srv2, &mcp.Tool{Name: stepTool}) })

	// With an authenticator all is well.
	srv3 := mcpserver.New(mcp.Implementation{Name: "x", Version: "1"}, nil)
	step.Register(srv3, &mcp.Tool{Name: stepTool})
	streamhttp.NewHandler(srv3, &streamhttp.Options{Auth: auth.DemoBearer{Realm: "t"}})
}

// EndWaits (the server shutting down) answers a held retry at once with
// the same question, and later accepts are not held at all.
func TestStepEndWaits(t *testing.T) {
	e := newStepEnv(t, time.Hour)
	c := e.client(accepting, nil)
	ir := e.first(c)
	link := elicitParams(t, ir).URL
	resp := e.rawAccept(ir, "application/json, text/event-stream")
	rd := bufio.NewReader(resp.Body)
	if line, err := rd.ReadString('\n'); err != nil || line != ": keep-alive\n" {
		t.Fatalf("first line %q, %v; want the retry held", line, err)
	}
	e.svc.EndWaits()
	rest, _ := io.ReadAll(rd)
	if !strings.Contains(string(rest), `"resultType":"input_required"`) || !strings.Contains(string(rest), link) {
		t.Fatalf("held retry after EndWaits: %s", rest)
	}
	_, again := e.answer(c, ir, mcp.ActionAccept) // would be held an hour
	if p := elicitParams(t, again); p.URL != link || p.Message != e.texts().Pending {
		t.Fatalf("accept after EndWaits: %q %q", p.URL, p.Message)
	}
}
