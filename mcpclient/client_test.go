package mcpclient_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"reflect"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcp-elicit/elicit/internal/mcptest"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpclient"
)

func TestStandardHeadersAndMeta(t *testing.T) {
	hs, rec := newServer(t, nil)
	info := mcp.Implementation{Name: "tester", Version: "9"}
	c := mcpclient.New(hs.URL, &mcpclient.Options{ClientInfo: info, Token: "alice", Handlers: formHandlers()})
	ctx := context.Background()
	if _, err := c.Discover(ctx); err != nil {
		t.Fatal(err)
	}
	r, err := c.CallTool(ctx, "regional", map[string]any{"region": "us-west1", "priority": 42, "verbose": nil, "query": "SELECT 1"})
	if err != nil {
		t.Fatal(err)
	}
	if firstText(r) != "regional ok" || r.ResultType != mcp.ResultTypeComplete {
		t.Fatalf("result %+v", r)
	}
	if got := c.Server(); got == nil || got.Name != "test-server" {
		t.Fatalf("server info %+v", got)
	}
	// discover, then the lazy tools/list for the annotations, then the call.
	methods := []string{}
	for _, s := range rec.all() {
		methods = append(methods, s.Msg.Method)
	}
	if want := []string{"server/discover", "tools/list", "tools/call"}; !reflect.DeepEqual(methods, want) {
		t.Fatalf("methods %v, want %v", methods, want)
	}
	for _, s := range rec.all() {
		h := s.Header
		checks := map[string]string{
			"Content-Type":         "application/json",
			"Accept":               "application/json, text/event-stream",
			"Mcp-Protocol-Version": mcp.ProtocolVersion,
			"Mcp-Method":           s.Msg.Method,
			"Authorization":        "Bearer alice",
		}
		for k, want := range checks {
			if got := h.Values(k); len(got) != 1 || got[0] != want {
				t.Errorf("%s: header %s = %q, want %q", s.Msg.Method, k, got, want)
			}
		}
		m := s.Msg.Params.Meta
		if string(m[mcp.MetaProtocolVersion]) != `"2026-07-28"` {
			t.Errorf("%s: _meta protocolVersion %s", s.Msg.Method, m[mcp.MetaProtocolVersion])
		}
		if string(m[mcp.MetaClientCapabilities]) != `{"elicitation":{"form":{},"url":{}}}` {
			t.Errorf("%s: _meta clientCapabilities %s", s.Msg.Method, m[mcp.MetaClientCapabilities])
		}
		if string(m[mcp.MetaClientInfo]) != `{"name":"tester","version":"9"}` {
			t.Errorf("%s: _meta clientInfo %s", s.Msg.Method, m[mcp.MetaClientInfo])
		}
	}
	call := rec.byMethod("tools/call")[0].Header
	want := map[string]string{"Mcp-Name": "regional", "Mcp-Param-Region": "us-west1", "Mcp-Param-Priority": "42"}
	for k, v := range want {
		if got := call.Get(k); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	for _, absent := range []string{"Mcp-Param-Verbose", "Mcp-Param-Query"} {
		if _, ok := call[absent]; ok {
			t.Errorf("%s sent for a null or unannotated argument", absent)
		}
	}
}

func TestMcpNameEncoding(t *testing.T) {
	hs, rec := newServer(t, nil)
	c := mcpclient.New(hs.URL, nil)
	ctx := context.Background()
	// The real server decodes Mcp-Name and compares it with the body: a
	// plain non-ASCII or sentinel-like value would be refused with -32020.
	p, err := c.GetPrompt(ctx, "café menu", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Messages) != 1 || p.Messages[0].Content.Text != "menu of café menu" {
		t.Fatalf("prompt %+v", p)
	}
	r, err := c.ReadResource(ctx, "=?base64?looks-encoded?=")
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Contents) != 1 || r.Contents[0].Text != "sentinel-like" {
		t.Fatalf("resource %+v", r)
	}
	names := []string{}
	for _, s := range rec.all() {
		names = append(names, s.Header.Get("Mcp-Name"))
	}
	want := []string{"=?base64?Y2Fmw6kgbWVudQ==?=", "=?base64?PT9iYXNlNjQ/bG9va3MtZW5jb2RlZD89?="}
	if !reflect.DeepEqual(names, want) {
		t.Fatalf("Mcp-Name %q, want %q", names, want)
	}
}

func TestFormRoundTripNewIDPerRound(t *testing.T) {
	hs, rec := newServer(t, nil)
	var asked []string
	h := formHandlers()
	form := h.ElicitForm
	h.ElicitForm = func(ctx context.Context, who mcpclient.Asker, key string, p *mcp.ElicitRequestParams) (*mcp.ElicitResult, error) {
		asked = append(asked, fmt.Sprintf("%s|%s|%s|%s", who.Endpoint, who.Server.Name, key, p.Message))
		return form(ctx, who, key, p)
	}
	c := mcpclient.New(hs.URL, &mcpclient.Options{Handlers: h})
	args := map[string]any{"unused": []any{1, "two"}}
	before := fmt.Sprint(args)
	r, err := c.CallTool(context.Background(), "ask_form", args)
	if err != nil {
		t.Fatal(err)
	}
	if firstText(r) != "hello Ada (round 1)" {
		t.Fatalf("result %q", firstText(r))
	}
	if want := []string{hs.URL + "|test-server|who|What is your name?"}; !reflect.DeepEqual(asked, want) {
		t.Fatalf("asked %q, want %q", asked, want)
	}
	if fmt.Sprint(args) != before {
		t.Fatal("caller's arguments were modified")
	}
	calls := rec.byMethod("tools/call")
	if len(calls) != 2 {
		t.Fatalf("%d tools/call, want 2", len(calls))
	}
	first, retry := calls[0].Msg, calls[1].Msg
	if bytes.Equal(first.ID, retry.ID) {
		t.Fatalf("retry reused id %s (MRTR-C-03)", first.ID)
	}
	if !bytes.Equal(first.Params.Arguments, retry.Params.Arguments) || first.Params.Name != retry.Params.Name {
		t.Fatal("retry changed name or arguments")
	}
	if first.Params.RequestState != nil || first.Params.InputResponses != nil {
		t.Fatal("first round carried MRTR fields")
	}
	if retry.Params.RequestState == nil || string(retry.Params.InputResponses["who"]) != `{"action":"accept","content":{"name":"Ada"}}` {
		t.Fatalf("retry params: state %v responses %s", retry.Params.RequestState, retry.Params.InputResponses["who"])
	}
	if retry.Params.Meta[mcp.MetaProtocolVersion] == nil || calls[1].Header.Get("Mcp-Name") != "ask_form" {
		t.Fatal("retry lacks fresh _meta or headers (MRTR-C-06)")
	}
}

func TestPromptAndResourceRounds(t *testing.T) {
	hs, rec := newServer(t, nil)
	c := mcpclient.New(hs.URL, &mcpclient.Options{Handlers: formHandlers()})
	ctx := context.Background()
	p, err := c.GetPrompt(ctx, "ask_prompt", map[string]string{"tone": "warm"})
	if err != nil || len(p.Messages) != 1 || p.Messages[0].Content.Text != "prompt for Ada" {
		t.Fatalf("prompt: %v %+v", err, p)
	}
	r, err := c.ReadResource(ctx, "test://ask")
	if err != nil || len(r.Contents) != 1 || r.Contents[0].Text != "resource for Ada" {
		t.Fatalf("resource: %v %+v", err, r)
	}
	for _, m := range []string{"prompts/get", "resources/read"} {
		rounds := rec.byMethod(m)
		if len(rounds) != 2 || bytes.Equal(rounds[0].Msg.ID, rounds[1].Msg.ID) || rounds[1].Msg.Params.RequestState == nil {
			t.Fatalf("%s: %d rounds", m, len(rounds))
		}
		if !bytes.Equal(rounds[0].Msg.Params.Arguments, rounds[1].Msg.Params.Arguments) || rounds[0].Msg.Params.URI != rounds[1].Msg.Params.URI {
			t.Fatalf("%s: the retry changed the params", m)
		}
	}
	if got := string(rec.byMethod("prompts/get")[0].Msg.Params.Arguments); got != `{"tone":"warm"}` {
		t.Fatalf("prompt arguments %s", got)
	}
	// One round by hand, for each.
	if _, ir, err := c.GetPromptOnce(ctx, "ask_prompt", nil, nil); err != nil || ir == nil {
		t.Fatalf("GetPromptOnce: %v %v", err, ir)
	}
	if _, ir, err := c.ReadResourceOnce(ctx, "test://ask", nil); err != nil || ir == nil {
		t.Fatalf("ReadResourceOnce: %v %v", err, ir)
	}
}

func TestSamplingAndRoots(t *testing.T) {
	hs, rec := newServer(t, nil)
	var prompt string
	c := mcpclient.New(hs.URL, &mcpclient.Options{Handlers: &mcpclient.Handlers{
		Sampling: func(ctx context.Context, who mcpclient.Asker, key string, p *mcp.CreateMessageRequestParams) (*mcp.CreateMessageResult, error) {
			prompt = fmt.Sprintf("%s %d %s", key, p.MaxTokens, p.Messages[0].Content.Text)
			return &mcp.CreateMessageResult{Role: "assistant", Model: "m-1", Content: json.RawMessage(`{"type":"text","text":"ok"}`)}, nil
		},
		Roots: func(ctx context.Context, who mcpclient.Asker, key string) (*mcp.ListRootsResult, error) {
			return &mcp.ListRootsResult{}, nil // nil Roots goes out as []
		},
	}})
	r, err := c.CallTool(context.Background(), "ask_model", nil)
	if err != nil || firstText(r) != "model m-1, 0 roots" {
		t.Fatalf("%v %+v", err, r)
	}
	if prompt != "summary 20 Summarise." {
		t.Fatalf("sampling params %q", prompt)
	}
	retry := rec.byMethod("tools/call")[1].Msg.Params
	if string(retry.InputResponses["where"]) != `{"roots":[]}` {
		t.Fatalf("roots answer %s", retry.InputResponses["where"])
	}
	if string(retry.Meta[mcp.MetaClientCapabilities]) != `{"sampling":{},"roots":{}}` {
		t.Fatalf("capabilities %s", retry.Meta[mcp.MetaClientCapabilities])
	}
}

func TestDeclineAndCancelCarryNoContent(t *testing.T) {
	for action, text := range map[string]string{mcp.ActionDecline: "declined", mcp.ActionCancel: "cancelled"} {
		t.Run(action, func(t *testing.T) {
			hs, rec := newServer(t, nil)
			c := mcpclient.New(hs.URL, &mcpclient.Options{Handlers: &mcpclient.Handlers{
				ElicitForm: func(ctx context.Context, who mcpclient.Asker, key string, p *mcp.ElicitRequestParams) (*mcp.ElicitResult, error) {
					// Content typed before deciding must not leave (ELI-RA-01).
					return &mcp.ElicitResult{Action: action, Content: map[string]any{"name": "typed"}}, nil
				}}})
			r, err := c.CallTool(context.Background(), "ask_form", nil)
			if err != nil {
				t.Fatal(err)
			}
			if !r.IsError || firstText(r) != text {
				t.Fatalf("result %+v", r)
			}
			if got := string(rec.byMethod("tools/call")[1].Msg.Params.InputResponses["who"]); got != `{"action":"`+action+`"}` {
				t.Fatalf("answer %s", got)
			}
		})
	}
}

func TestURLModeAndMissingCapability(t *testing.T) {
	hs, _ := newServer(t, nil)
	ctx := context.Background()
	// URL mode declared: the loop answers and completes.
	c := mcpclient.New(hs.URL, &mcpclient.Options{Handlers: formHandlers()})
	r, err := c.CallTool(ctx, "ask_url", nil)
	if err != nil || firstText(r) != "connected" {
		t.Fatalf("url flow: %v %+v", err, r)
	}
	// Form only: the server's capability gate answers -32021.
	h := formHandlers()
	h.ElicitURL = nil
	c = mcpclient.New(hs.URL, &mcpclient.Options{Handlers: h})
	_, err = c.CallTool(ctx, "ask_url", nil)
	var mce *mcpclient.MissingCapabilityError
	if !errors.As(err, &mce) {
		t.Fatalf("err = %v, want *MissingCapabilityError", err)
	}
	if !mce.RequiredCapabilities.ElicitationURL() || mce.RPC.HTTPStatus != http.StatusBadRequest || mce.RPC.Code != mcp.CodeMissingRequiredClientCapability {
		t.Fatalf("error %+v / %+v", mce, mce.RPC)
	}
	var rpc *mcpclient.RPCError
	if !errors.As(err, &rpc) {
		t.Fatal("*MissingCapabilityError does not unwrap to *RPCError")
	}
}

func TestCapabilitiesFromHandlers(t *testing.T) {
	form := func(context.Context, mcpclient.Asker, string, *mcp.ElicitRequestParams) (*mcp.ElicitResult, error) {
		return nil, nil
	}
	sampling := func(context.Context, mcpclient.Asker, string, *mcp.CreateMessageRequestParams) (*mcp.CreateMessageResult, error) {
		return nil, nil
	}
	roots := func(context.Context, mcpclient.Asker, string) (*mcp.ListRootsResult, error) { return nil, nil }
	tests := []struct {
		name string
		h    *mcpclient.Handlers
		want string
	}{
		{"nil", nil, `{}`},
		{"none", &mcpclient.Handlers{}, `{}`},
		{"form", &mcpclient.Handlers{ElicitForm: form}, `{"elicitation":{"form":{}}}`},
		{"url", &mcpclient.Handlers{ElicitURL: form}, `{"elicitation":{"url":{}}}`},
		{"both", &mcpclient.Handlers{ElicitForm: form, ElicitURL: form}, `{"elicitation":{"form":{},"url":{}}}`},
		{"all", &mcpclient.Handlers{ElicitForm: form, ElicitURL: form, Sampling: sampling, Roots: roots},
			`{"elicitation":{"form":{},"url":{}},"sampling":{},"roots":{}}`},
	}
	hs, rec := newServer(t, nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := mcpclient.New(hs.URL, &mcpclient.Options{Handlers: tt.h})
			caps := c.Capabilities()
			if b, _ := json.Marshal(caps); string(b) != tt.want {
				t.Fatalf("Capabilities() = %s, want %s", b, tt.want)
			}
			if _, err := c.Discover(context.Background()); err != nil {
				t.Fatal(err)
			}
			all := rec.all()
			if got := string(all[len(all)-1].Msg.Params.Meta[mcp.MetaClientCapabilities]); got != tt.want {
				t.Fatalf("sent %s, want %s", got, tt.want)
			}
		})
	}
}

func TestUnsupportedVersionRetry(t *testing.T) {
	hs, rec := newServer(t, nil)
	// The server serves 2026-07-28 only; the client asks 2027-01-01 first.
	c := mcpclient.New(hs.URL, &mcpclient.Options{ProtocolVersion: "2027-01-01"})
	if _, err := c.Discover(context.Background()); err != nil {
		t.Fatal(err)
	}
	all := rec.all()
	if len(all) != 2 {
		t.Fatalf("%d requests, want 2", len(all))
	}
	for i, want := range []string{"2027-01-01", "2026-07-28"} {
		if got := all[i].Header.Get("Mcp-Protocol-Version"); got != want {
			t.Errorf("request %d: version %q, want %q", i, got, want)
		}
		if got := string(all[i].Msg.Params.Meta[mcp.MetaProtocolVersion]); got != `"`+want+`"` {
			t.Errorf("request %d: _meta version %s, want %q", i, got, want)
		}
	}
	if c.Version() != "2026-07-28" {
		t.Fatalf("Version() = %q after the switch", c.Version())
	}

	// Same version re-offered (the conformance mock does this): retried once.
	var n atomic.Int32
	fs, frec := fake(t, func(w http.ResponseWriter, s seen) {
		if n.Add(1) == 1 {
			replyError(w, s, 400, `{"code":-32022,"message":"Unsupported protocol version","data":{"supported":["2026-07-28"],"requested":"2026-07-28"}}`)
			return
		}
		reply(w, s, `{"resultType":"complete","tools":[],"ttlMs":0,"cacheScope":"private"}`)
	})
	if _, err := mcpclient.New(fs.URL, nil).ListTools(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := len(frec.all()); got != 2 {
		t.Fatalf("%d requests, want 2", got)
	}

	// No common version: a typed error, after one request.
	ns, nrec := fake(t, func(w http.ResponseWriter, s seen) {
		replyError(w, s, 400, `{"code":-32022,"message":"no","data":{"supported":["2030-01-01"],"requested":"2026-07-28"}}`)
	})
	_, err := mcpclient.New(ns.URL, nil).Discover(context.Background())
	var uve *mcpclient.UnsupportedVersionError
	if !errors.As(err, &uve) || !reflect.DeepEqual(uve.Supported, []string{"2030-01-01"}) || len(nrec.all()) != 1 {
		t.Fatalf("err = %v after %d requests", err, len(nrec.all()))
	}
}

// TestRequestStateEcho: the state goes back exactly as received, escapes
// and all (RS-C-01), and is never sent when there was none (RS-C-03).
func TestRequestStateEcho(t *testing.T) {
	ask := `"inputRequests":{"k":{"method":"elicitation/create","params":{"message":"ok?","requestedSchema":{"type":"object","properties":{}}}}}`
	tests := []struct {
		name, stateJSON string // the requestState member as the server writes it ("" for none)
	}{
		{"plain", `"requestState":"v1.abc_DEF-123"`},
		{"escapes and HTML characters", `"requestState":"a\u002fb<c>&d\"e\u00e9\ud83d\ude00 \\"`},
		{"empty string is still a state", `"requestState":""`},
		{"none", ``},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs, rec := fake(t, func(w http.ResponseWriter, s seen) {
				switch {
				case s.Msg.Method == "tools/list":
					reply(w, s, `{"resultType":"complete","tools":[{"name":"t","inputSchema":{"type":"object"}}],"ttlMs":0,"cacheScope":"private"}`)
				case s.Msg.Params.InputResponses == nil:
					sep := ""
					if tt.stateJSON != "" {
						sep = ","
					}
					reply(w, s, `{"resultType":"input_required",`+ask+sep+tt.stateJSON+`}`)
				default:
					reply(w, s, `{"resultType":"complete","content":[{"type":"text","text":"done"}]}`)
				}
			})
			c := mcpclient.New(fs.URL, &mcpclient.Options{Handlers: formHandlers()})
			if _, err := c.CallTool(context.Background(), "t", nil); err != nil {
				t.Fatal(err)
			}
			calls := rec.byMethod("tools/call")
			if len(calls) != 2 {
				t.Fatalf("%d calls", len(calls))
			}
			body := calls[1].Body
			if tt.stateJSON == "" {
				if bytes.Contains(body, []byte("requestState")) {
					t.Fatalf("retry invented a requestState: %s", body)
				}
				return
			}
			if !bytes.Contains(body, []byte(tt.stateJSON)) {
				t.Fatalf("retry body %s\ndoes not contain %s byte for byte", body, tt.stateJSON)
			}
		})
	}
}

func TestRoundCap(t *testing.T) {
	fs, rec := fake(t, func(w http.ResponseWriter, s seen) {
		if s.Msg.Method == "tools/list" {
			reply(w, s, `{"resultType":"complete","tools":[],"ttlMs":0,"cacheScope":"private"}`)
			return
		}
		reply(w, s, `{"resultType":"input_required","inputRequests":{"k":{"method":"elicitation/create","params":{"message":"again","requestedSchema":{"type":"object","properties":{}}}}},"requestState":"s"}`)
	})
	c := mcpclient.New(fs.URL, &mcpclient.Options{Handlers: formHandlers(), MaxRounds: 3})
	_, err := c.CallTool(context.Background(), "loop", nil)
	if !errors.Is(err, mcpclient.ErrRoundLimit) {
		t.Fatalf("err = %v, want ErrRoundLimit", err)
	}
	calls := rec.byMethod("tools/call")
	if len(calls) != 4 { // the call and MaxRounds retries
		t.Fatalf("%d calls, want 4", len(calls))
	}
	ids := map[string]bool{}
	for _, s := range calls {
		ids[string(s.Msg.ID)] = true
	}
	if len(ids) != 4 {
		t.Fatalf("ids repeat: %v", ids)
	}
}

// State-only answers are retried after StateOnlyDelay, doubling each
// time; the bubble's fake clock makes the waits exact.
func TestStateOnlyBackoff(t *testing.T) {
	for _, tt := range []struct {
		name      string
		stateOnly int // state-only answers before complete
		wantErr   error
	}{
		{"three then complete", 3, nil},
		{"four in a row", 4, mcpclient.ErrStateOnlyLimit},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var n atomic.Int32
				var times []time.Time
				rec := fakeRecorder(func(w http.ResponseWriter, s seen) {
					if s.Msg.Method == "tools/list" {
						reply(w, s, `{"resultType":"complete","tools":[],"ttlMs":0,"cacheScope":"private"}`)
						return
					}
					times = append(times, time.Now())
					if i := int(n.Add(1)); i <= tt.stateOnly {
						reply(w, s, fmt.Sprintf(`{"resultType":"input_required","requestState":"wait-%d"}`, i))
						return
					}
					reply(w, s, `{"resultType":"complete","content":[]}`)
				})
				const base = 20 * time.Millisecond
				c := mcpclient.New("http://127.0.0.1/mcp", &mcpclient.Options{HTTPClient: mcptest.PipeServer(t, rec), StateOnlyDelay: base})
				_, err := c.CallTool(context.Background(), "later", nil)
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				calls := rec.byMethod("tools/call")
				if len(calls) != 4 {
					t.Fatalf("%d calls, want 4", len(calls))
				}
				for i := 1; i < len(calls); i++ {
					if gap, want := times[i].Sub(times[i-1]), base<<(i-1); gap != want {
						t.Errorf("retry %d after %v, want %v", i, gap, want)
					}
					want := fmt.Sprintf(`"wait-%d"`, i)
					if s := calls[i].Msg.Params.RequestState; s == nil || string(*s) != want || calls[i].Msg.Params.InputResponses != nil {
						t.Errorf("retry %d: state %v, responses %v", i, s, calls[i].Msg.Params.InputResponses)
					}
				}
			})
		})
	}
}

func TestSSEResponses(t *testing.T) {
	hs, _ := newServer(t, nil)
	var got []mcpclient.Progress
	c := mcpclient.New(hs.URL, &mcpclient.Options{OnProgress: func(p mcpclient.Progress) { got = append(got, p) }})
	r, err := c.CallTool(context.Background(), "slow", nil)
	if err != nil || firstText(r) != "done" {
		t.Fatalf("%v %+v", err, r)
	}
	want := []mcpclient.Progress{
		{Method: "tools/call", Target: "slow", Progress: 1, Total: 2, Message: "step"},
		{Method: "tools/call", Target: "slow", Progress: 2, Total: 2, Message: "step"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("progress %+v, want %+v", got, want)
	}

	// A hand-written stream: CRLF lines, comments, a priming event, a
	// notification, a request (forbidden, skipped), another id, then ours.
	fs, _ := fake(t, func(w http.ResponseWriter, s seen) {
		if s.Msg.Method == "tools/list" {
			reply(w, s, `{"resultType":"complete","tools":[],"ttlMs":0,"cacheScope":"private"}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, ": keep-alive\r\n\r\nid: 1\r\nretry: 10\r\ndata:\r\n\r\n")
		fmt.Fprint(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"x\"}}\r\n\r\n")
		fmt.Fprint(w, "data: {\"jsonrpc\":\"2.0\",\"id\":99,\"method\":\"roots/list\"}\n\n")
		fmt.Fprint(w, "data: {\"jsonrpc\":\"2.0\",\"id\":12345,\"result\":{}}\n\n")
		fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\n:comment inside\ndata: \"result\":{\"content\":[{\"type\":\"text\",\"text\":\"split\"}]}}\n\n", s.Msg.ID)
	})
	c = mcpclient.New(fs.URL, &mcpclient.Options{Logger: quiet()})
	r, err = c.CallTool(context.Background(), "x", nil)
	if err != nil || firstText(r) != "split" || r.ResultType != "complete" {
		t.Fatalf("%v %+v", err, r)
	}

	// A stream that ends without the response.
	es, _ := fake(t, func(w http.ResponseWriter, s seen) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, ": nothing\n\n")
	})
	_, err = mcpclient.New(es.URL, nil).Discover(context.Background())
	if !errors.Is(err, mcpclient.ErrStreamEnded) {
		t.Fatalf("err = %v, want ErrStreamEnded", err)
	}
}

func TestServerFaults(t *testing.T) {
	list := `{"resultType":"complete","tools":[],"ttlMs":0,"cacheScope":"private"}`
	ask := func(req string) string {
		return `{"resultType":"input_required","inputRequests":{"k":` + req + `}}`
	}
	tests := []struct {
		name    string
		handle  func(w http.ResponseWriter, s seen)
		handler *mcpclient.Handlers
		check   func(t *testing.T, err error)
	}{
		{"unknown resultType", func(w http.ResponseWriter, s seen) { reply(w, s, `{"resultType":"maybe","content":[]}`) }, nil,
			wantRule("MRTR-C-08")},
		{"no resultType is complete", func(w http.ResponseWriter, s seen) {
			reply(w, s, `{"content":[{"type":"text","text":"old server"}]}`)
		}, nil, wantNil},
		{"input_required for tools/list", nil, nil, nil}, // filled below
		{"neither requests nor state", func(w http.ResponseWriter, s seen) { reply(w, s, `{"resultType":"input_required"}`) }, nil,
			wantRule("MRTR-S-07")},
		{"url mode not declared", func(w http.ResponseWriter, s seen) {
			reply(w, s, ask(`{"method":"elicitation/create","params":{"mode":"url","message":"m","url":"https://x.example/"}}`))
		}, &mcpclient.Handlers{ElicitForm: formHandlers().ElicitForm}, wantRule("CAP-S-01")},
		{"form mode not declared", func(w http.ResponseWriter, s seen) {
			reply(w, s, ask(`{"method":"elicitation/create","params":{"message":"m","requestedSchema":{"type":"object","properties":{}}}}`))
		}, &mcpclient.Handlers{ElicitURL: formHandlers().ElicitURL}, wantRule("CAP-S-01")},
		{"sampling not declared", func(w http.ResponseWriter, s seen) {
			reply(w, s, ask(`{"method":"sampling/createMessage","params":{"messages":[],"maxTokens":5}}`))
		}, formHandlers(), wantRule("MRTR-S-08")},
		{"unknown input method", func(w http.ResponseWriter, s seen) { reply(w, s, ask(`{"method":"ping"}`)) }, formHandlers(),
			wantRule("MRTR-S-06")},
		{"result is not an object", func(w http.ResponseWriter, s seen) { reply(w, s, `[1,2]`) }, nil, wantType[*mcpclient.ProtocolError]},
		{"wrong id", func(w http.ResponseWriter, s seen) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"jsonrpc":"2.0","id":"other","result":{}}`)
		}, nil, wantType[*mcpclient.ProtocolError]},
		{"JSON-RPC error", func(w http.ResponseWriter, s seen) {
			replyError(w, s, 400, `{"code":-32602,"message":"Unknown tool: x\u001b[2J","data":{"why":1}}`)
		}, nil, func(t *testing.T, err error) {
			var rpc *mcpclient.RPCError
			if !errors.As(err, &rpc) || rpc.Code != -32602 || rpc.HTTPStatus != 400 || string(rpc.Data) != `{"why":1}` {
				t.Fatalf("err = %#v", err)
			}
			if strings.ContainsRune(err.Error(), 0x1b) {
				t.Fatalf("control character reached the message: %q", err.Error())
			}
		}},
		{"HTML page", func(w http.ResponseWriter, s seen) {
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, "<html>hello</html>")
		}, nil, wantType[*mcpclient.NotMCPError]},
		{"404 text", func(w http.ResponseWriter, s seen) { http.NotFound(w, nil) }, nil, wantType[*mcpclient.NotMCPError]},
		{"JSON that is not JSON-RPC", func(w http.ResponseWriter, s seen) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"error":"nope"}`)
		}, nil, wantType[*mcpclient.NotMCPError]},
		{"401", func(w http.ResponseWriter, s seen) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="mcp"`)
			replyError(w, s, 401, `{"code":-32600,"message":"Unauthorized"}`)
		}, nil, func(t *testing.T, err error) {
			var ae *mcpclient.AuthError
			if !errors.As(err, &ae) || ae.StatusCode != 401 || ae.WWWAuthenticate != `Bearer realm="mcp"` || ae.RPC == nil {
				t.Fatalf("err = %#v", err)
			}
		}},
		{"202 for a request", func(w http.ResponseWriter, s seen) { w.WriteHeader(202) }, nil, wantType[*mcpclient.ProtocolError]},
		{"handler error is returned", func(w http.ResponseWriter, s seen) {
			reply(w, s, ask(`{"method":"elicitation/create","params":{"message":"m","requestedSchema":{"type":"object","properties":{}}}}`))
		}, &mcpclient.Handlers{ElicitForm: func(context.Context, mcpclient.Asker, string, *mcp.ElicitRequestParams) (*mcp.ElicitResult, error) {
			return nil, errUserQuit
		}}, func(t *testing.T, err error) {
			if !errors.Is(err, errUserQuit) {
				t.Fatalf("err = %v", err)
			}
		}},
	}
	tests[2].handle = func(w http.ResponseWriter, s seen) {
		reply(w, s, `{"resultType":"input_required","requestState":"x"}`)
	}
	tests[2].check = wantRule("MRTR-S-04")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs, rec := fake(t, func(w http.ResponseWriter, s seen) {
				if s.Msg.Method == "tools/list" && tt.name != "input_required for tools/list" {
					reply(w, s, list)
					return
				}
				tt.handle(w, s)
			})
			c := mcpclient.New(fs.URL, &mcpclient.Options{Handlers: tt.handler, Logger: quiet()})
			var err error
			if tt.name == "input_required for tools/list" {
				_, err = c.ListTools(context.Background())
			} else {
				_, err = c.CallTool(context.Background(), "t", nil)
			}
			tt.check(t, err)
			if n := len(rec.byMethod("tools/call")); tt.name != "no resultType is complete" && n > 1 {
				t.Fatalf("%d tools/call sent: the client retried after a fault", n)
			}
		})
	}
}

var errUserQuit = errors.New("user quit")

func wantNil(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func wantRule(rule string) func(t *testing.T, err error) {
	return func(t *testing.T, err error) {
		t.Helper()
		var pe *mcpclient.ProtocolError
		if !errors.As(err, &pe) || pe.Rule != rule {
			t.Fatalf("err = %v, want a *ProtocolError for %s", err, rule)
		}
	}
}

func wantType[E error](t *testing.T, err error) {
	t.Helper()
	var target E
	if !errors.As(err, &target) {
		t.Fatalf("err = %v (%T), want %T", err, err, target)
	}
}

func TestConnectionRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, err = mcpclient.New("http://"+addr+"/mcp", nil).Discover(context.Background())
	var ce *mcpclient.ConnectionError
	if !errors.As(err, &ce) || !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("err = %v, want a *ConnectionError for ECONNREFUSED", err)
	}
	if !strings.Contains(err.Error(), "cannot reach the MCP server at http://"+addr+"/mcp") {
		t.Fatalf("message %q", err)
	}
}

func TestListToolsPagingAndDropping(t *testing.T) {
	pages := map[string]string{
		"": `{"resultType":"complete","nextCursor":"p2","ttlMs":0,"cacheScope":"private","tools":[
			{"name":"good","inputSchema":{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}},
			{"name":"bad_number","inputSchema":{"type":"object","properties":{"score":{"type":"number","x-mcp-header":"Score"}}}}]}`,
		"p2": `{"resultType":"complete","ttlMs":0,"cacheScope":"private","tools":[
			{"name":"bad_dup","inputSchema":{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"X"},"b":{"type":"string","x-mcp-header":"x"}}}},
			{"name":"plain","inputSchema":{"type":"object","$defs":{"d":{"type":"string"}},"properties":{"id":{"$ref":"#/$defs/d"}}}}]}`,
	}
	fs, rec := fake(t, func(w http.ResponseWriter, s seen) {
		var p struct {
			Cursor string `json:"cursor"`
		}
		var env struct {
			Params json.RawMessage `json:"params"`
		}
		_ = json.Unmarshal(s.Body, &env)
		_ = json.Unmarshal(env.Params, &p)
		if s.Msg.Method == "tools/list" {
			reply(w, s, pages[p.Cursor])
			return
		}
		reply(w, s, `{"resultType":"complete","content":[]}`)
	})
	var logs bytes.Buffer
	c := mcpclient.New(fs.URL, &mcpclient.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	tools, err := c.ListTools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name)
	}
	if !reflect.DeepEqual(names, []string{"good", "plain"}) {
		t.Fatalf("tools %v", names)
	}
	if !strings.Contains(string(tools[1].InputSchema), `"$ref":"#/$defs/d"`) {
		t.Fatalf("inputSchema not kept verbatim: %s", tools[1].InputSchema)
	}
	for _, want := range []string{"tool=bad_number", "tool=bad_dup", "HTTP-C-12"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logs.String())
		}
	}
	if _, err := c.CallTool(context.Background(), "bad_dup", nil); !errors.Is(err, mcpclient.ErrToolDropped) {
		t.Fatalf("calling a dropped tool: %v", err)
	}
	if _, err := c.CallTool(context.Background(), "good", map[string]string{"region": "eu west"}); err != nil {
		t.Fatal(err)
	}
	calls := rec.byMethod("tools/call")
	if len(calls) != 1 || calls[0].Header.Get("Mcp-Param-Region") != "eu west" {
		t.Fatalf("calls %d", len(calls))
	}
}

// TestManualDriving drives the loop by hand: one round, an unrelated call
// in between (which carries nothing of the first, MRTR-C-04), then the
// retry built from the interim result.
func TestManualDriving(t *testing.T) {
	hs, rec := newServer(t, nil)
	c := mcpclient.New(hs.URL, &mcpclient.Options{Handlers: formHandlers()})
	ctx := context.Background()
	ir := wantAskFormRound(t, c)
	if r, err := c.CallTool(ctx, "echo", map[string]string{"text": "between"}); err != nil || firstText(r) != "between" {
		t.Fatalf("unrelated call: %v %+v", err, r)
	}
	answers, err := c.Answer(ctx, ir)
	if err != nil {
		t.Fatal(err)
	}
	res, ir2, err := c.CallToolOnce(ctx, "ask_form", nil, ir.Retry(answers))
	if err != nil || ir2 != nil || firstText(res) != "hello Ada (round 1)" {
		t.Fatalf("retry: %v %+v %+v", err, ir2, res)
	}
	echo := rec.byMethod("tools/call")[1]
	if echo.Msg.Params.Name != "echo" || echo.Msg.Params.RequestState != nil || echo.Msg.Params.InputResponses != nil {
		t.Fatalf("unrelated call carried MRTR fields: %s", echo.Body)
	}
	checkRetryMisuse(t, c, rec, ir, answers)
}

// wantAskFormRound sends ask_form's first round by hand and checks its
// interim result: one form question, "who", and a requestState.
func wantAskFormRound(t *testing.T, c *mcpclient.Client) *mcpclient.InputRequired {
	t.Helper()
	res, ir, err := c.CallToolOnce(t.Context(), "ask_form", nil, nil)
	if err != nil || res != nil || ir == nil {
		t.Fatalf("round 1: %v %v %v", err, res, ir)
	}
	if !ir.HasRequestState() || !reflect.DeepEqual(ir.Keys(), []string{"who"}) {
		t.Fatalf("interim %+v", ir)
	}
	p, err := ir.InputRequests["who"].ElicitParams()
	if err != nil || p.Message != "What is your name?" {
		t.Fatalf("params %v %+v", err, p)
	}
	return ir
}

// checkRetryMisuse: the retry of one request cannot be used for another
// (MRTR-C-04); a Retry made by hand carries no state, so the server asks
// afresh.
func checkRetryMisuse(t *testing.T, c *mcpclient.Client, rec *recorder, ir *mcpclient.InputRequired, answers map[string]any) {
	t.Helper()
	ctx := t.Context()
	if _, _, err := c.CallToolOnce(ctx, "echo", nil, ir.Retry(answers)); err == nil || !strings.Contains(err.Error(), "MRTR-C-04") {
		t.Fatalf("retry used for another tool: %v", err)
	}
	_, ir3, err := c.CallToolOnce(ctx, "ask_form", nil, &mcpclient.Retry{InputResponses: answers})
	if err != nil || ir3 == nil {
		t.Fatalf("hand-made retry: %v %v", err, ir3)
	}
	last := rec.all()[len(rec.all())-1]
	if last.Msg.Params.RequestState != nil {
		t.Fatal("a hand-made Retry sent a requestState")
	}
}

func TestHeaderMismatchRefreshesTools(t *testing.T) {
	var listed atomic.Int32
	fs, rec := fake(t, func(w http.ResponseWriter, s seen) {
		switch s.Msg.Method {
		case "tools/list":
			annotation := ""
			if listed.Add(1) > 1 { // the server added an annotation since
				annotation = `,"x-mcp-header":"Region"`
			}
			reply(w, s, `{"resultType":"complete","ttlMs":0,"cacheScope":"private","tools":[{"name":"t","inputSchema":{"type":"object","properties":{"region":{"type":"string"`+annotation+`}}}}]}`)
		default:
			if s.Header.Get("Mcp-Param-Region") == "" {
				replyError(w, s, 400, `{"code":-32020,"message":"Header mismatch: missing Mcp-Param-Region header"}`)
				return
			}
			reply(w, s, `{"resultType":"complete","content":[]}`)
		}
	})
	c := mcpclient.New(fs.URL, nil)
	if _, err := c.CallTool(context.Background(), "t", map[string]string{"region": "r1"}); err != nil {
		t.Fatal(err)
	}
	if n := len(rec.byMethod("tools/call")); n != 2 || listed.Load() != 2 {
		t.Fatalf("%d calls, %d lists", n, listed.Load())
	}
}

func TestArgumentsMustBeAnObject(t *testing.T) {
	hs, rec := newServer(t, nil)
	c := mcpclient.New(hs.URL, nil)
	for _, args := range []any{[]int{1}, "text", json.RawMessage(`{bad`), 3} {
		if _, err := c.CallTool(context.Background(), "echo", args); err == nil {
			t.Errorf("args %v accepted", args)
		}
	}
	if n := len(rec.byMethod("tools/call")); n != 0 {
		t.Fatalf("%d calls sent", n)
	}
	// Raw arguments go out byte for byte, HTML characters unescaped.
	raw := json.RawMessage(`{"text":"<b>&amp;</b>","n":1.50}`)
	if r, err := c.CallTool(context.Background(), "echo", raw); err != nil || firstText(r) != "<b>&amp;</b>" {
		t.Fatalf("%v %+v", err, r)
	}
	if got := rec.byMethod("tools/call")[0].Msg.Params.Arguments; !bytes.Equal(got, raw) {
		t.Fatalf("arguments sent as %s", got)
	}
}

// The context ends a state-only wait: at its deadline, not the delay's.
func TestContextCancelsStateOnlyWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := fakeRecorder(func(w http.ResponseWriter, s seen) {
			if s.Msg.Method == "tools/list" {
				reply(w, s, `{"resultType":"complete","tools":[],"ttlMs":0,"cacheScope":"private"}`)
				return
			}
			reply(w, s, `{"resultType":"input_required","requestState":"later"}`)
		})
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		start := time.Now()
		c := mcpclient.New("http://127.0.0.1/mcp", &mcpclient.Options{HTTPClient: mcptest.PipeServer(t, rec), StateOnlyDelay: time.Hour})
		_, err := c.CallTool(ctx, "t", nil)
		if waited := time.Since(start); !errors.Is(err, context.DeadlineExceeded) || waited != 50*time.Millisecond {
			t.Fatalf("err = %v after %v, want the deadline after 50ms", err, waited)
		}
	})
}

// An ordinary JSON-RPC error is returned as is, with no retry.
func TestNoRetryOnOrdinaryErrors(t *testing.T) {
	hs, rec := newServer(t, nil)
	c := mcpclient.New(hs.URL, nil)
	_, err := c.CallTool(context.Background(), "no_such_tool", nil)
	var rpc *mcpclient.RPCError
	if !errors.As(err, &rpc) || rpc.Code != -32602 {
		t.Fatalf("err = %v", err)
	}
	if n := len(rec.byMethod("tools/call")); n != 1 {
		t.Fatalf("%d calls", n)
	}
}
