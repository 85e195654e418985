package legacy_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcp-elicit/elicit/auth"
	"github.com/mcp-elicit/elicit/internal/mcptest"
	"github.com/mcp-elicit/elicit/legacy"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpserver"
	"github.com/mcp-elicit/elicit/streamhttp"
)

// rawServer is a legacy Handler on a loopback server, spoken to with raw
// HTTP so a test can play a client that abandons its prompts.
type rawServer struct {
	h   *legacy.Handler
	url string
	c   *http.Client
}

func startRaw(t *testing.T, opts *legacy.Options) *rawServer {
	t.Helper()
	rs := newRaw(opts)
	srv := httptest.NewServer(rs.h)
	t.Cleanup(srv.Close)
	// No keep-alive: connection goroutines end with their request, so the
	// goroutine count can return to its baseline.
	rs.url, rs.c = srv.URL, &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}
	return rs
}

// newRaw returns a rawServer's Handler, with a "page" tool that asks for a
// URL-mode step; the caller serves it.
func newRaw(opts *legacy.Options) *rawServer {
	s := newServer(nil)
	s.AddTool(&mcp.Tool{Name: "page"}, func(_ context.Context, req *mcpserver.Request) (mcpserver.Reply, error) {
		return mcpserver.Ask().ElicitURL("page", "Open the page", "https://example.com/page"), nil
	})
	if opts == nil {
		opts = &legacy.Options{}
	}
	opts.Logger = quiet
	return &rawServer{h: legacy.NewHandler(s, streamhttp.NewHandler(s, &streamhttp.Options{Auth: auth.DemoBearer{Realm: "t"}, Logger: quiet, MaxBodyBytes: 4096}), opts)}
}

// post sends one JSON-RPC message as user on session (none when "").
func (rs *rawServer) post(t *testing.T, user, session, body string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, rs.url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+user)
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	}
	resp, err := rs.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

const formCaps = `{"elicitation":{"form":{},"url":{}}}`

// open initializes a 2025-11-25 session for user and returns its id.
func (rs *rawServer) open(t *testing.T, user string) string {
	t.Helper()
	resp := rs.post(t, user, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":`+formCaps+`,"clientInfo":{"name":"t","version":"1"}}}`)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	id := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != 200 || id == "" {
		t.Fatalf("initialize: HTTP %d, session %q", resp.StatusCode, id)
	}
	resp = rs.post(t, user, id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	resp.Body.Close()
	return id
}

// message is one JSON-RPC message read from an SSE stream.
type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

// nextReply returns the next message of an SSE stream that is not a
// notification (go-sdk may send notifications/cancelled for a prompt
// before the call's answer), or nil at its end.
func nextReply(t *testing.T, sc *bufio.Scanner) *message {
	t.Helper()
	m := next(t, sc)
	for m != nil && m.Method != "" && len(m.ID) == 0 {
		m = next(t, sc)
	}
	return m
}

// next returns the next JSON-RPC message of an SSE stream, or nil at its end.
func next(t *testing.T, sc *bufio.Scanner) *message {
	t.Helper()
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || data == "" {
			continue
		}
		m := &message{}
		if err := json.Unmarshal([]byte(data), m); err != nil {
			t.Fatalf("SSE data %q: %v", data, err)
		}
		return m
	}
	return nil
}

// ask calls tools/call name on session and reads up to the server's
// first request (the prompt); the stream stays open for the caller.
func (rs *rawServer) ask(t *testing.T, user, session, name string) (*http.Response, *bufio.Scanner, *message) {
	t.Helper()
	resp := rs.post(t, user, session, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"`+name+`","arguments":{}}}`)
	sc := bufio.NewScanner(resp.Body)
	m := next(t, sc)
	if m == nil || m.Method != "elicitation/create" {
		t.Fatalf("want elicitation/create first, got %+v", m)
	}
	return resp, sc, m
}

// TestAbandonedPromptsEnd: calls whose prompt the client abandoned end
// with their idle session, and nothing is left running. The bubble's fake
// clock runs the session timeout only once every goroutine waits.
func TestAbandonedPromptsEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const idle = time.Minute
		rs := startPiped(t, &legacy.Options{SessionTimeout: idle})
		synctest.Wait()
		base := mcptest.BubbleGoroutines()
		var sessions []string
		for range 20 {
			s := rs.open(t, "alice")
			resp, _, _ := rs.ask(t, "alice", s, "ask_name")
			resp.Body.Close() // the client goes away without answering
			sessions = append(sessions, s)
		}
		// Fake time passes in the loop too (net/http waits a moment before
		// closing a connection), so only the last session is sure to be
		// younger than its timeout here.
		time.Sleep(idle / 2)
		synctest.Wait()
		if status := rs.ping(t, "alice", sessions[len(sessions)-1]); status != http.StatusOK {
			t.Fatalf("a session ended before its timeout: HTTP %d", status)
		}
		time.Sleep(idle + time.Second) // the ping restarted that session's timer
		synctest.Wait()
		if n := mcptest.BubbleGoroutines(); n != base {
			t.Fatalf("%d goroutines after the sessions timed out, %d before they opened", n, base)
		}
		for i, s := range sessions {
			if status := rs.ping(t, "alice", s); status != http.StatusNotFound {
				t.Fatalf("session %d after its timeout: HTTP %d, want 404", i, status)
			}
		}
	})
}

// startPiped is startRaw on an in-memory network (mcptest.PipeServer):
// call it inside a synctest bubble, whose fake clock then drives the
// Handler's timers. The cleanup closes the Handler too, so that no
// goroutine outlives the bubble.
func startPiped(t *testing.T, opts *legacy.Options) *rawServer {
	t.Helper()
	rs := newRaw(opts)
	rs.c = mcptest.PipeServer(t, rs.h)
	t.Cleanup(func() { rs.h.Close() })
	rs.url = "http://127.0.0.1/"
	return rs
}

// ping sends ping on session and returns the HTTP status.
func (rs *rawServer) ping(t *testing.T, user, session string) int {
	t.Helper()
	r := rs.post(t, user, session, `{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	_, _ = io.Copy(io.Discard, r.Body)
	r.Body.Close()
	return r.StatusCode
}

// TestInputTimeout: an unanswered prompt ends its call with a clear
// error, after exactly Options.InputTimeout.
func TestInputTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rs := startPiped(t, &legacy.Options{InputTimeout: 50 * time.Millisecond})
		s := rs.open(t, "alice")
		resp, sc, _ := rs.ask(t, "alice", s, "ask_name")
		defer resp.Body.Close()
		asked := time.Now()
		m := nextReply(t, sc)
		if m == nil || m.Error == nil || m.Error.Code != -32603 || m.Error.Message != "The client did not answer elicitation/create within 50ms" {
			t.Fatalf("want -32603 not answered, got %+v", m)
		}
		if waited := time.Since(asked); waited != 50*time.Millisecond {
			t.Fatalf("the call ended after %v, want 50ms", waited)
		}
	})
}

// TestDeleteWithPendingPrompt: DELETE answers at once and ends the call
// waiting on the prompt; the session is gone.
func TestDeleteWithPendingPrompt(t *testing.T) {
	rs := startRaw(t, nil)
	s := rs.open(t, "alice")
	resp, sc, _ := rs.ask(t, "alice", s, "ask_name")
	defer resp.Body.Close()
	for _, tc := range []struct {
		user   string
		status int
	}{{"bob", http.StatusForbidden}, {"alice", http.StatusNoContent}, {"alice", http.StatusNotFound}} {
		req, _ := http.NewRequest(http.MethodDelete, rs.url, nil)
		req.Header.Set("Authorization", "Bearer "+tc.user)
		req.Header.Set("Mcp-Session-Id", s)
		dr, err := rs.c.Do(req)
		if err != nil {
			t.Fatalf("DELETE as %s: %v", tc.user, err)
		}
		dr.Body.Close()
		if dr.StatusCode != tc.status {
			t.Fatalf("DELETE as %s: HTTP %d, want %d", tc.user, dr.StatusCode, tc.status)
		}
	}
	// The call's stream ends with its session (go-sdk may drop the
	// call's error response on the closing session).
	if m := nextReply(t, sc); m != nil && (m.Error == nil || m.Error.Message != "Session closed: the client ended the session") {
		t.Fatalf("pending call: got %+v", m)
	}
}

// TestClose: Handler.Close ends calls waiting on prompts and open GET
// streams, and refuses new sessions.
func TestClose(t *testing.T) {
	rs := startRaw(t, nil)
	s := rs.open(t, "alice")
	req, _ := http.NewRequest(http.MethodGet, rs.url, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer alice")
	req.Header.Set("Mcp-Session-Id", s)
	get, err := (&http.Client{}).Do(req) // no timeout: the stream is open until Close
	if err != nil || get.StatusCode != 200 {
		t.Fatalf("GET: %v %v", err, get)
	}
	defer get.Body.Close()
	resp, sc, _ := rs.ask(t, "alice", s, "ask_name")
	defer resp.Body.Close()

	if err := rs.h.Close(); err != nil {
		t.Fatal(err)
	}
	// The pending call gets its answer before the stream closes; a
	// notifications/cancelled for the prompt may come first.
	m := nextReply(t, sc)
	if m == nil || m.Error == nil || m.Error.Message != "Session closed: the server is shutting down" {
		t.Fatalf("pending call: got %+v", m)
	}
	if _, err := io.Copy(io.Discard, get.Body); err != nil {
		t.Logf("GET stream ended: %v", err)
	}
	r := rs.post(t, "alice", "", initBody)
	body, _ := io.ReadAll(r.Body)
	r.Body.Close()
	if r.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), `"code":-32603`) {
		t.Fatalf("initialize after Close: HTTP %d %s", r.StatusCode, body)
	}
}

// TestSessionCaps: a principal at its cap replaces its least recently
// used idle session, is refused with 429 when all are busy; the total
// cap refuses with 503.
func TestSessionCaps(t *testing.T) {
	rs := startRaw(t, &legacy.Options{MaxSessionsPerPrincipal: 2, MaxSessions: 3})
	a1 := rs.open(t, "alice")
	a2 := rs.open(t, "alice")
	rs.post(t, "alice", a1, `{"jsonrpc":"2.0","id":2,"method":"ping"}`).Body.Close() // a1 used last
	a3 := rs.open(t, "alice")                                                        // replaces a2
	status := func(user, s string) int {
		r := rs.post(t, user, s, `{"jsonrpc":"2.0","id":3,"method":"ping"}`)
		r.Body.Close()
		return r.StatusCode
	}
	if a, b, c := status("alice", a1), status("alice", a2), status("alice", a3); a != 200 || b != 404 || c != 200 {
		t.Fatalf("a1 %d a2 %d a3 %d, want 200 404 200", a, b, c)
	}
	for _, s := range []string{a1, a3} { // both busy
		resp, _, _ := rs.ask(t, "alice", s, "ask_name")
		defer resp.Body.Close()
	}
	rs.open(t, "bob") // the third session of the server
	for _, tc := range []struct {
		user   string
		status int
		msg    string
	}{
		{"alice", http.StatusTooManyRequests, "Too many sessions: this user has 2 sessions with requests in progress"},
		{"carol", http.StatusServiceUnavailable, "Too many sessions on this server"},
	} {
		r := rs.post(t, tc.user, "", initBody)
		body, _ := io.ReadAll(r.Body)
		r.Body.Close()
		if r.StatusCode != tc.status || r.Header.Get("Retry-After") == "" || !strings.Contains(string(body), `"code":-32603`) || !strings.Contains(string(body), tc.msg) {
			t.Fatalf("%s: HTTP %d Retry-After %q %s", tc.user, r.StatusCode, r.Header.Get("Retry-After"), body)
		}
	}
}

// TestWire2025: errors and results worded and shaped for a 2025 client.
func TestWire2025(t *testing.T) {
	rs := startRaw(t, &legacy.Options{MaxRounds: 4, URLPolls: -1})
	s := rs.open(t, "alice")
	t.Run("invalid action", func(t *testing.T) {
		resp, sc, m := rs.ask(t, "alice", s, "ask_name")
		defer resp.Body.Close()
		rs.answer(t, s, m, `{"action":"yolo"}`)
		if m := nextReply(t, sc); m == nil || m.Error == nil || m.Error.Code != -32602 || !strings.HasPrefix(m.Error.Message, "Invalid elicitation answer: ") {
			t.Fatalf("got %+v", m)
		}
	})
	t.Run("page accepted, never completed", func(t *testing.T) {
		testPageNeverCompleted(t, rs, s)
	})
	tests := []struct {
		name, session, body string
		prefix              string   // the answer, "STATUS BODY", starts with it
		want, not           []string // in it, not in it
	}{
		{"2026 _meta on a 2025 session is ignored", s,
			`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
			"200 ", []string{"principal=alice"}, nil},
		{"tools/list has no 2026 caching hints", s, `{"jsonrpc":"2.0","id":5,"method":"tools/list"}`,
			"200 ", []string{`"echo"`}, []string{"ttlMs", "cacheScope"}},
		{"body over the limit", s, `{"jsonrpc":"2.0","id":6,"method":"ping","params":{"_meta":{"x":"` + strings.Repeat("x", 5000) + `"}}}`,
			`413 {"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Request body too large"}}` + "\n", nil, nil},
		{"initialize with a non-object url capability", "",
			`{"jsonrpc":"2.0","id":9,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{"url":"yes"}},"clientInfo":{"name":"t","version":"1"}}}`,
			`400 {"jsonrpc":"2.0","id":9,"error":{"code":-32602,"message":"Invalid params: capabilities.elicitation.url must be an object, not string"}}` + "\n", nil, nil},
		{"initialize with array capabilities", "",
			`{"jsonrpc":"2.0","id":9,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":[],"clientInfo":{"name":"t","version":"1"}}}`,
			`400 {"jsonrpc":"2.0","id":9,"error":{"code":-32602,"message":"Invalid params: capabilities must be an object, not array"}}` + "\n", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := rs.post(t, "alice", tt.session, tt.body)
			b, _ := io.ReadAll(r.Body)
			r.Body.Close()
			got := fmt.Sprintf("%d %s", r.StatusCode, b)
			if !strings.HasPrefix(got, tt.prefix) {
				t.Fatalf("got  %s\nwant %s", got, tt.prefix)
			}
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Fatalf("got %s, without %s", got, w)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(got, n) {
					t.Fatalf("got %s, with %s", got, n)
				}
			}
		})
	}
}

// answer posts result as the answer to the server's request m.
func (rs *rawServer) answer(t *testing.T, session string, m *message, result string) {
	t.Helper()
	r := rs.post(t, "alice", session, `{"jsonrpc":"2.0","id":`+string(m.ID)+`,"result":`+result+`}`)
	r.Body.Close()
	if r.StatusCode != http.StatusAccepted {
		t.Fatalf("answer: HTTP %d", r.StatusCode)
	}
}

// testPageNeverCompleted: a URL elicitation accepted but whose page is
// never completed ends the call with -32042 naming the page.
func testPageNeverCompleted(t *testing.T, rs *rawServer, s string) {
	resp, sc, m := rs.ask(t, "alice", s, "page")
	defer resp.Body.Close()
	for m.Method == "elicitation/create" || m.ID == nil {
		if m.Method == "elicitation/create" {
			rs.answer(t, s, m, `{"action":"accept"}`)
		}
		if m = next(t, sc); m == nil {
			t.Fatal("stream ended")
		}
	}
	if m.Error == nil || m.Error.Code != -32042 || !strings.Contains(m.Error.Message, "did not complete the page") || !strings.Contains(string(m.Error.Data), "https://example.com/page") {
		t.Fatalf("got %+v", m.Error)
	}
}
