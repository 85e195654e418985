package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-elicit/elicit/examples/billing"
	"github.com/mcp-elicit/elicit/internal/mcptest"
)

// testKey is the billing key the tests type; it must never show up
// anywhere but the encrypted vault.
const testKey = "sk_live_TESTKEY_5f3a9c1e7d"

// syncBuffer collects a stream written by several goroutines.
type syncBuffer = mcptest.SyncBuffer

// recorder keeps every URL, Location header and response body seen.
type recorder struct {
	mu   sync.Mutex
	seen []string
}

func (r *recorder) add(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen = append(r.seen, s)
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	r.add("URL " + req.URL.String())
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	r.add("LOCATION " + resp.Header.Get("Location"))
	r.add("BODY " + string(body))
	return resp, nil
}

type env struct {
	t     *testing.T
	url   string
	app   *app
	logs  *syncBuffer
	rec   *recorder
	clock atomic.Int64 // Unix nanoseconds
}

func newEnv(t *testing.T) *env {
	t.Helper()
	return newEnvWith(t, nil)
}

// newEnvWith lets configure adjust the config (addr, publicURL and the
// data directory are set) before the app is built.
func newEnvWith(t *testing.T, configure func(*config)) *env {
	t.Helper()
	e := &env{t: t, logs: &syncBuffer{}, rec: &recorder{}}
	e.clock.Store(time.Now().UnixNano())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := &config{addr: ln.Addr().String(), dataDir: t.TempDir(), publicURL: "http://" + ln.Addr().String(),
		demoOAuthAddr: "127.0.0.1:0", now: func() time.Time { return time.Unix(0, e.clock.Load()) }}
	if configure != nil {
		configure(cfg)
	}
	logger := slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	e.app, err = newApp(cfg, logger)
	if err != nil {
		t.Fatal(err)
	}
	ts := &httptest.Server{Listener: ln, Config: &http.Server{Handler: e.app}}
	ts.Start()
	t.Cleanup(func() { ts.Close(); e.app.Close() })
	e.url = ts.URL
	return e
}

func (e *env) advance(d time.Duration) { e.clock.Add(int64(d)) }

// mcpResponse is one MCP answer.
type mcpResponse struct {
	Status int
	Header http.Header
	Raw    string
	Result map[string]any
	Error  *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	}
}

// mcp POSTs body as user with the standard headers plus extra ("Name: value"
// pairs; "Name:" removes one).
func (e *env) mcp(user, method, name, body string, extra ...string) *mcpResponse {
	e.t.Helper()
	return e.mcpAt(e.url+"/mcp", user, method, name, body, extra...)
}

// mcpAt is mcp at endpoint, e.g. a front that watches the server.
func (e *env) mcpAt(endpoint, user, method, name, body string, extra ...string) *mcpResponse {
	e.t.Helper()
	req, _ := http.NewRequest("POST", endpoint, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Authorization", "Bearer "+user)
	req.Header.Set("Mcp-Method", method)
	if name != "" {
		req.Header.Set("Mcp-Name", name)
	}
	for _, h := range extra {
		k, v, _ := strings.Cut(h, ":")
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, strings.TrimSpace(v))
		}
	}
	resp, err := (&http.Client{Transport: e.rec}).Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	out := &mcpResponse{Status: resp.StatusCode, Header: resp.Header, Raw: string(b)}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b = lastSSEData(b) // a held call: keep-alives and progress, then the response
	}
	var env struct {
		Result map[string]any  `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if json.Unmarshal(b, &env) == nil {
		out.Result = env.Result
		if env.Error != nil {
			_ = json.Unmarshal(env.Error, &out.Error)
		}
	}
	return out
}

// lastSSEData returns the data of the last event of an event stream.
func lastSSEData(b []byte) []byte {
	var last []byte
	for _, line := range bytes.Split(b, []byte("\n")) {
		if d, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
			last = d
		}
	}
	return last
}

// The request _meta of a client that elicits with forms only
// ("elicitation":{} means form), and of one with both modes (docs/flows.md
// §connect_billing).
var (
	metaForm = mcptest.Meta(`{"elicitation":{}}`)
	metaURL  = mcptest.Meta(`{"elicitation":{"form":{},"url":{}}}`)
)

func callBody(id int, tool, extra, meta string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"%s","arguments":{},%s%s}}`, id, tool, extra, meta)
}

func answer(action, state string) string {
	return `"inputResponses":{"billing_key":{"action":"` + action + `"}},"requestState":"` + state + `",`
}

func (e *env) connect(id int, user, extra string) *mcpResponse {
	return e.mcp(user, "tools/call", billing.ToolName, callBody(id, billing.ToolName, extra, metaURL))
}

func (r *mcpResponse) resultType() string { s, _ := r.Result["resultType"].(string); return s }

func (r *mcpResponse) text() string {
	c, _ := r.Result["content"].([]any)
	if len(c) == 0 {
		return ""
	}
	s, _ := c[0].(map[string]any)["text"].(string)
	return s
}

func (r *mcpResponse) isError() bool { b, _ := r.Result["isError"].(bool); return b }

func (r *mcpResponse) state() string { s, _ := r.Result["requestState"].(string); return s }

// elicitation returns the URL-mode request under billing_key.
func (r *mcpResponse) elicitation(t *testing.T) (mode, message, link string) {
	t.Helper()
	reqs, _ := r.Result["inputRequests"].(map[string]any)
	ir, _ := reqs[billing.InputKey].(map[string]any)
	if ir == nil || ir["method"] != "elicitation/create" {
		t.Fatalf("no elicitation/create under %q: %s", billing.InputKey, r.Raw)
	}
	p := ir["params"].(map[string]any)
	mode, _ = p["mode"].(string)
	message, _ = p["message"].(string)
	link, _ = p["url"].(string)
	return
}

func (r *mcpResponse) wantError(t *testing.T, status, code int) {
	t.Helper()
	if r.Status != status || r.Error == nil || r.Error.Code != code {
		t.Fatalf("want HTTP %d and error %d, got HTTP %d: %s", status, code, r.Status, r.Raw)
	}
}

// browser is a user agent with its own cookie jar that does not follow redirects.
type browser struct {
	t      *testing.T
	client *http.Client
}

func (e *env) browser() *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: e.t, client: &http.Client{Jar: jar, Transport: e.rec,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

func (b *browser) get(u string) (int, string, string) {
	b.t.Helper()
	resp, err := b.client.Get(u)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Location"), string(body)
}

func (b *browser) post(u string, form url.Values) (int, string, string) {
	b.t.Helper()
	resp, err := b.client.PostForm(u, form)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Location"), string(body)
}

var csrfRe = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func csrfOf(t *testing.T, page string) string {
	t.Helper()
	m := csrfRe.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no csrf field in page:\n%s", page)
	}
	return m[1]
}

// openSignedOut opens link without a session and returns the sign-in page
// it redirects to.
func (b *browser) openSignedOut(link string) string {
	b.t.Helper()
	status, loc, _ := b.get(link)
	if status != http.StatusSeeOther || !strings.HasPrefix(loc, "/ui/login?next=") {
		b.t.Fatalf("opening %s without a session: %d %q", link, status, loc)
	}
	return loc
}

// login follows the redirect to the login page from link and signs in as user.
// It returns the key page that the login redirects back to.
func (b *browser) login(base, link, user string) (int, string) {
	b.t.Helper()
	loc := b.openSignedOut(link)
	status, _, page := b.get(base + loc)
	if status != 200 {
		b.t.Fatalf("login page: %d", status)
	}
	next, _ := url.ParseQuery(strings.TrimPrefix(loc, "/ui/login?"))
	status, loc, _ = b.post(base+"/ui/login", url.Values{"username": {user}, "csrf": {csrfOf(b.t, page)}, "next": {next.Get("next")}})
	if status != http.StatusSeeOther {
		b.t.Fatalf("login POST: %d", status)
	}
	status, _, page = b.get(base + loc)
	return status, page
}

// fillKey submits the key on the key page.
func (b *browser) fillKey(base, page, flowURL, key string) (int, string) {
	b.t.Helper()
	u, _ := url.Parse(flowURL)
	status, _, body := b.post(base+"/ui/set_api_key", url.Values{"api_key": {key}, "csrf": {csrfOf(b.t, page)}, "flow": {u.Query().Get("flow")}})
	return status, body
}

// TestBillingCurlFlow runs the four steps of docs/flows.md
// §connect_billing as its curl walkthrough does, with the page step
// between steps 2 and 3.
func TestBillingCurlFlow(t *testing.T) {
	e := newEnv(t)

	// 1. Form-only client: 400, -32021, requiredCapabilities in object form (CAP-S-03).
	r := e.mcp("alice", "tools/call", "connect_billing", callBody(1, "connect_billing", "", metaForm))
	r.wantError(t, 400, -32021)
	if got := string(r.Error.Data); got != `{"requiredCapabilities":{"elicitation":{"url":{}}}}` {
		t.Fatalf("-32021 data = %s", got)
	}
	if !strings.Contains(r.Raw, `"id":1`) {
		t.Fatalf("error does not echo the id: %s", r.Raw)
	}

	// 2. URL-capable client: input_required, mode url, the server's own page.
	link, state := wantBillingURLStep(t, e, e.connect(2, "alice", ""))

	// The user signs in as alice on the page and types the key.
	alice := e.browser()
	status, page := alice.login(e.url, link, "alice")
	if status != 200 || !strings.Contains(page, `id="key-form"`) {
		t.Fatalf("key page: %d\n%s", status, page)
	}
	status, page = alice.fillKey(e.url, page, link, testKey)
	if status != 200 || !strings.Contains(page, `id="done"`) {
		t.Fatalf("key POST: %d\n%s", status, page)
	}

	// 3. Accept: success, and the key is not in the result.
	r3 := e.connect(3, "alice", answer("accept", state))
	if r3.resultType() != "complete" || r3.isError() || r3.text() != billing.TextConnected {
		t.Fatalf("test 3: %s", r3.Raw)
	}

	// 4. Decline with the same state: a replay of an answered operation,
	// so step 3's result again (the first answer wins), no crash.
	r4 := e.connect(4, "alice", answer("decline", state))
	if r4.resultType() != "complete" || r4.isError() || r4.text() != billing.TextConnected {
		t.Fatalf("test 4: %s", r4.Raw)
	}

	// Afterwards: connected, and a new call says so without asking.
	if r := e.mcp("alice", "tools/call", "billing_status", callBody(5, "billing_status", "", metaURL)); r.text() != billing.TextStatusConnected {
		t.Fatalf("status: %s", r.Raw)
	}
	e.mcp("alice", "tools/call", "billing_status", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"billing_status","arguments":{"evil":1},`+metaURL+`}}`).wantError(t, 400, -32602)
	if r := e.connect(6, "alice", ""); r.resultType() != "complete" || r.text() != billing.TextAlreadyConnected {
		t.Fatalf("already connected: %s", r.Raw)
	}
	e.assertNoLeak(t)
}

// wantBillingURLStep checks the answer to a URL-capable client's first
// call: input_required in url mode on the server's own page, a state of
// at most 512 bytes, no user data in the URL (SEC-U-S-01: only a 128-bit
// opaque id). It returns the link and the state.
func wantBillingURLStep(t *testing.T, e *env, r *mcpResponse) (link, state string) {
	t.Helper()
	if r.Status != 200 || r.resultType() != "input_required" || r.state() == "" {
		t.Fatalf("test 2: %s", r.Raw)
	}
	mode, msg, link := r.elicitation(t)
	if mode != "url" || msg == "" || !strings.HasPrefix(link, e.url+"/ui/set_api_key?flow=") {
		t.Fatalf("test 2 elicitation: mode=%q url=%q", mode, link)
	}
	if len(r.state()) > 512 {
		t.Fatalf("requestState is %d bytes", len(r.state()))
	}
	if u, _ := url.Parse(link); !regexp.MustCompile(`^flow=[0-9a-f]{32}$`).MatchString(u.RawQuery) || strings.Contains(link, "alice") {
		t.Fatalf("elicitation URL carries more than an opaque id: %s", link)
	}
	return link, r.state()
}

func (e *env) assertNoLeak(t *testing.T) {
	t.Helper()
	if strings.Contains(e.logs.String(), testKey) {
		t.Fatal("the billing key appears in a log line")
	}
	for _, s := range e.rec.seen {
		if strings.HasPrefix(s, "URL ") || strings.HasPrefix(s, "LOCATION ") || strings.HasPrefix(s, "BODY ") {
			if strings.Contains(s, testKey) {
				t.Fatalf("the billing key appears in a %s", strings.SplitN(s, " ", 2)[0])
			}
		}
	}
	if len(e.rec.seen) < 10 {
		t.Fatalf("recorder saw only %d items: the leak check would prove nothing", len(e.rec.seen))
	}
}

func TestNegativeCases(t *testing.T) {
	e := newEnv(t)
	first := e.connect(1, "alice", "")
	state := first.state()
	_, _, link := first.elicitation(t)

	t.Run("accept with the page unfinished stays pending", func(t *testing.T) {
		for i := 0; i < 2; i++ {
			state = wantSamePending(t, e.connect(10+i, "alice", answer("accept", state)), link)
		}
	})
	t.Run("bob opening alice's link is refused and nothing is stored", func(t *testing.T) {
		testOtherUserRefused(t, e, link, state)
	})
	t.Run("decline and cancel are distinct isError results", func(t *testing.T) {
		d := e.connect(30, "alice", answer("decline", state))
		// Decline closed that flow for good; cancel is tried on a new one.
		c := e.connect(31, "alice", answer("cancel", e.connect(32, "alice", "").state()))
		if !d.isError() || !c.isError() || d.text() != billing.TextDeclined || c.text() != billing.TextCancelled || d.text() == c.text() {
			t.Fatalf("decline %s\ncancel %s", d.Raw, c.Raw)
		}
	})
	testInvalidStates(t, e, state)
	t.Run("expired state", func(t *testing.T) {
		testBillingExpiredState(t, e)
	})
	for _, reason := range []string{"other_principal", "tampered", "other_arguments", "other_target", "expired"} {
		if !strings.Contains(e.logs.String(), "reason="+reason) {
			t.Errorf("server log lacks the real reason %q", reason)
		}
	}
	t.Run("protocol errors", func(t *testing.T) {
		testProtocolErrors(t, e)
	})
}

// wantSamePending fails unless r asks again, with the same link; it
// returns r's new state.
func wantSamePending(t *testing.T, r *mcpResponse, link string) string {
	t.Helper()
	if r.resultType() != "input_required" {
		t.Fatalf("accept before completion: %s", r.Raw)
	}
	if _, _, again := r.elicitation(t); again != link {
		t.Fatalf("pending flow asked with another URL: %s", again)
	}
	return r.state()
}

// testOtherUserRefused: bob, signed in, opening or posting to alice's
// link is refused and audited; nothing is stored for either of them and
// alice's flow stays pending.
func testOtherUserRefused(t *testing.T, e *env, link, state string) {
	bob := e.browser()
	status, page := bob.login(e.url, link, "bob")
	if status != http.StatusForbidden || strings.Contains(page, `id="key-form"`) {
		t.Fatalf("bob on alice's page: %d\n%s", status, page)
	}
	// Bob posts anyway, with his own valid csrf.
	if status, _ = bob.fillKey(e.url, page, link, "sk_bob_attempt"); status != http.StatusForbidden {
		t.Fatalf("bob's POST: %d", status)
	}
	for _, u := range []string{"alice", "bob"} {
		if r := e.mcp(u, "tools/call", "billing_status", callBody(20, "billing_status", "", metaURL)); r.text() != billing.TextStatusNotConnected {
			t.Fatalf("%s: %s", u, r.Raw)
		}
	}
	if r := e.connect(21, "alice", answer("accept", state)); r.resultType() != "input_required" {
		t.Fatalf("bob's attempt completed alice's flow: %s", r.Raw)
	}
	if !strings.Contains(e.logs.String(), "flow_refused_other_user") {
		t.Fatal("no audit line for bob's attempt")
	}
}

// testInvalidStates: a state used by another user, changed, cut short or
// for another tool is refused with one message that says no more.
func testInvalidStates(t *testing.T, e *env, state string) {
	b := []byte(state)
	if i := len(b) / 2; b[i] == 'A' {
		b[i] = 'B'
	} else {
		b[i] = 'A'
	}
	tests := []struct {
		name string
		id   int
		user string
		tool string
		st   string
	}{
		{"alice's state with bob's token", 40, "bob", "connect_billing", state},
		{"tampered state", 41, "alice", "connect_billing", string(b)},
		{"tampered state, suffix", 42, "alice", "connect_billing", state + "-TAMPERED"},
		{"truncated state", 43, "alice", "connect_billing", state[:len(state)-8]},
		{"truncated state, short", 44, "alice", "connect_billing", state[:20]},
		{"another tool", 46, "alice", "billing_status", state},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.mcp(tt.user, "tools/call", tt.tool, callBody(tt.id, tt.tool, answer("accept", tt.st), metaURL))
			r.wantError(t, 400, -32602)
			if r.Error.Message != "invalid or expired requestState" {
				t.Fatalf("message %q says more than it should", r.Error.Message)
			}
		})
	}
	t.Run("changed arguments", func(t *testing.T) {
		// The step serves a stale state as a fresh call, which refuses
		// the arguments themselves; nothing is said about the state.
		body := `{"jsonrpc":"2.0","id":45,"method":"tools/call","params":{"name":"connect_billing","arguments":{"account":"other"},` + answer("accept", state) + metaURL + `}}`
		r := e.mcp("alice", "tools/call", "connect_billing", body)
		r.wantError(t, 400, -32602)
		if r.Error.Message != "Invalid params: connect_billing takes no arguments" {
			t.Fatalf("message %q", r.Error.Message)
		}
	})
}

// testBillingExpiredState: the flow's link expired with the state: a retry gets
// a new link and says why, never an unexplained error (connect.Step).
func testBillingExpiredState(t *testing.T, e *env) {
	fresh := e.connect(47, "alice", "")
	_, _, old := fresh.elicitation(t)
	e.advance(10*time.Minute + time.Second)
	r := e.connect(48, "alice", answer("accept", fresh.state()))
	if r.resultType() != "input_required" {
		t.Fatalf("retry with an expired state: %s", r.Raw)
	}
	if _, msg, link := r.elicitation(t); link == old || !strings.HasPrefix(msg, "The earlier link expired") {
		t.Fatalf("new link %q (old %q), message %q", link, old, msg)
	}
}

// testProtocolErrors: requests the transport refuses before any tool
// runs, each with its HTTP status and (for JSON-RPC answers) its code.
func testProtocolErrors(t *testing.T, e *env) {
	call := func(id int, name string) string { return callBody(id, name, "", metaURL) }
	future := strings.Replace(call(56, "connect_billing"), "2026-07-28", "2099-01-01", 1)
	big := callBody(58, "connect_billing", `"pad":"`+strings.Repeat("x", 1<<20)+`",`, metaURL)
	tests := []struct {
		name, user, method, header, body string
		extra                            []string
		status, code                     int // code 0: only the status is checked
	}{
		{"unknown tool", "alice", "tools/call", "nope", call(50, "nope"), nil, 400, -32602},
		{"Mcp-Name differs", "alice", "tools/call", "other", call(51, "connect_billing"), nil, 400, -32020},
		{"no Mcp-Name", "alice", "tools/call", "", call(52, "connect_billing"), nil, 400, -32020},
		{"Mcp-Method differs", "alice", "tools/list", "", call(53, "connect_billing"), []string{"Mcp-Method: tools/list"}, 400, -32020},
		{"no _meta", "alice", "tools/call", "connect_billing", `{"jsonrpc":"2.0","id":54,"method":"tools/call","params":{"name":"connect_billing","arguments":{}}}`, nil, 400, -32602},
		{"version header differs", "alice", "tools/call", "connect_billing", call(55, "connect_billing"), []string{"MCP-Protocol-Version: 2025-11-25"}, 400, -32020},
		{"unsupported version", "alice", "tools/call", "connect_billing", future, []string{"MCP-Protocol-Version: 2099-01-01"}, 400, -32022},
		{"ping is not a method", "alice", "ping", "", `{"jsonrpc":"2.0","id":57,"method":"ping","params":{` + metaURL + `}}`, nil, 404, -32601},
		{"oversized body", "alice", "tools/call", "connect_billing", big, nil, http.StatusRequestEntityTooLarge, 0},
		{"no token", "", "tools/call", "connect_billing", call(59, "connect_billing"), nil, http.StatusUnauthorized, 0},
		{"foreign origin", "alice", "tools/call", "connect_billing", call(60, "connect_billing"), []string{"Origin: http://evil.example"}, http.StatusForbidden, 0},
	}
	for _, tt := range tests {
		r := e.mcp(tt.user, tt.method, tt.header, tt.body, tt.extra...)
		if tt.code == 0 {
			if r.Status != tt.status {
				t.Fatalf("%s: HTTP %d, want %d", tt.name, r.Status, tt.status)
			}
			continue
		}
		r.wantError(t, tt.status, tt.code)
		if tt.code == -32022 && string(r.Error.Data) != `{"supported":["2026-07-28","2025-11-25","2025-06-18","2025-03-26"],"requested":"2099-01-01"}` {
			t.Fatalf("-32022 data %s", r.Error.Data)
		}
	}
	// The pages are guarded against DNS rebinding too.
	req, _ := http.NewRequest("GET", e.url+"/ui/login", nil)
	req.Host = "evil.example"
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("page with a foreign Host: %v %v", resp.StatusCode, err)
	}
}

func TestParseFlags(t *testing.T) {
	if _, err := parseFlags([]string{"--addr", "0.0.0.0:3000"}, io.Discard); err == nil {
		t.Fatal("non-loopback address accepted without --insecure-demo-auth")
	}
	if _, err := parseFlags([]string{"--addr", "0.0.0.0:3000", "--public-url", "https://mcp.example.com", "--insecure-demo-auth"}, io.Discard); err != nil {
		t.Fatal(err)
	}
	cfg, err := parseFlags(nil, io.Discard)
	if err != nil || cfg.addr != "127.0.0.1:3000" || cfg.dataDir != "./elicitd-data" || cfg.publicURL != "http://127.0.0.1:3000" {
		t.Fatalf("defaults: %+v %v", cfg, err)
	}
	for _, bad := range [][]string{{"--public-url", "ftp://x"}, {"--public-url", "https://x/path"}, {"--addr", "nohost"}, {"extra"}} {
		if _, err := parseFlags(bad, io.Discard); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

func TestSweepRemovesExpiredFlows(t *testing.T) {
	e := newEnv(t)
	first := e.connect(1, "alice", "")
	e.advance(16 * time.Minute) // past the flow's 10 minutes
	res, err := e.app.sweeper.sweep(t.Context())
	if err != nil || res.Flows != 1 || res.Total() != 1 {
		t.Fatalf("sweep = %+v, %v; want the one expired flow", res, err)
	}
	// The state is expired too: the retry is served as a fresh call,
	// which starts a new flow.
	_, _, old := first.elicitation(t)
	r := e.connect(2, "alice", answer("accept", first.state()))
	if _, _, link := r.elicitation(t); r.resultType() != "input_required" || link == old {
		t.Fatalf("new flow: %s", r.Raw)
	}
}
