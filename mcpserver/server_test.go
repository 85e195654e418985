package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/mcp-elicit/elicit/internal/transport"
	"reflect"
	"strings"
	"testing"

	"github.com/mcp-elicit/elicit/elicit"
	"github.com/mcp-elicit/elicit/jsonrpc"
	"github.com/mcp-elicit/elicit/mcp"
)

// appState is long enough that it cannot turn up in a random token by chance.
const appState = "application-state-s1"

const formSchema = `{"type":"object","properties":{"level":{"type":"string","enum":["summary","detailed"]},"label":{"type":"string","maxLength":20}},"required":["level"]}`

func newTestServer(t *testing.T) *Server {
	t.Helper()
	s := New(mcp.Implementation{Name: "test", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "ask_form", Description: "form"}, func(ctx context.Context, r *Request) (Reply, error) {
		if r.State == nil {
			return Ask().ElicitForm("opts", "Pick a level", json.RawMessage(formSchema)).WithState([]byte(appState)), nil
		}
		a := r.Elicitation("opts")
		switch a.Outcome {
		case elicit.Accepted:
			return Text("level=" + a.Content["level"].(string) + " state=" + string(r.State)), nil
		case elicit.Declined:
			return ToolError("declined"), nil
		case elicit.Cancelled:
			return ToolError("cancelled"), nil
		}
		return Ask().ElicitForm("opts", "Pick a level (again)", json.RawMessage(formSchema)).WithState(r.State), nil
	})
	s.AddTool(&mcp.Tool{Name: "ask_url", Description: "url"}, func(ctx context.Context, r *Request) (Reply, error) {
		return Ask().ElicitURL("k", "Open the page", "https://srv.example/ui/x?flow=1"), nil
	})
	s.AddTool(&mcp.Tool{Name: "ask_secret", Description: "bad"}, func(ctx context.Context, r *Request) (Reply, error) {
		return Ask().ElicitForm("k", "Key", json.RawMessage(`{"type":"object","properties":{"api_key":{"type":"string"}}}`)), nil
	})
	s.AddTool(&mcp.Tool{Name: "boom", Description: "panics"}, func(ctx context.Context, r *Request) (Reply, error) {
		panic("secret-detail")
	})
	s.AddTool(&mcp.Tool{Name: "fails", Description: "errors"}, func(ctx context.Context, r *Request) (Reply, error) {
		return nil, errors.New("db password wrong")
	})
	s.AddTool(&mcp.Tool{Name: "wrong_reply", Description: "x"}, func(ctx context.Context, r *Request) (Reply, error) {
		return PromptResult(&mcp.GetPromptResult{}), nil
	})
	s.AddPrompt(&mcp.Prompt{Name: "p", Description: "d", Arguments: []mcp.PromptArgument{{Name: "a", Required: true}}},
		func(ctx context.Context, r *Request) (Reply, error) {
			return PromptResult(&mcp.GetPromptResult{Messages: []mcp.PromptMessage{{Role: "user", Content: mcp.TextContent("hi")}}}), nil
		})
	s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "test://t/{id}/data", Name: "t"}, func(ctx context.Context, r *Request) (Reply, error) {
		return ResourceResult(&mcp.ReadResourceResult{Contents: []mcp.ResourceContents{{URI: r.Name, Text: r.TemplateVars["id"]}}}), nil
	})
	return s
}

type rpc struct {
	s         *Server
	principal string
}

func (c rpc) call(t *testing.T, body string) (map[string]any, *jsonrpc.Error) {
	t.Helper()
	req, jerr := jsonrpc.DecodeRequest([]byte(body))
	if jerr != nil {
		t.Fatalf("decode: %v", jerr)
	}
	in, jerr := transport.Parse(req)
	if jerr != nil {
		return nil, jerr
	}
	resp := c.s.serve(context.Background(), in, c.principal, nil)
	if resp.Error != nil {
		return nil, resp.Error
	}
	b, _ := json.Marshal(resp.Result)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return m, nil
}

func toolCall(name, caps, extra string) string {
	return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + name + `","arguments":{}` + extra +
		`,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + caps + `}}}`
}

func retry(state, responses string) string {
	b, _ := json.Marshal(state)
	return `,"requestState":` + string(b) + `,"inputResponses":` + responses
}

func text(m map[string]any) string {
	c, _ := m["content"].([]any)
	if len(c) == 0 {
		return ""
	}
	return c[0].(map[string]any)["text"].(string)
}

func TestFormRoundTrip(t *testing.T) {
	c := rpc{newTestServer(t), "alice"}
	r1, err := c.call(t, toolCall("ask_form", `{"elicitation":{}}`, ""))
	if err != nil {
		t.Fatal(err)
	}
	if r1["resultType"] != "input_required" {
		t.Fatalf("round 1: %v", r1)
	}
	state := r1["requestState"].(string)
	if strings.Contains(state, appState) {
		t.Fatal("application state readable in requestState")
	}
	tests := []struct {
		name, responses, wantType, wantText string
	}{
		{"accept", `{"opts":{"action":"accept","content":{"level":"summary"}}}`, "complete", "level=summary state=" + appState},
		{"decline", `{"opts":{"action":"decline"}}`, "complete", "declined"},
		{"cancel", `{"opts":{"action":"cancel"}}`, "complete", "cancelled"},
		{"invalid enum asks again", `{"opts":{"action":"accept","content":{"level":"huge"}}}`, "input_required", ""},
		{"unknown field is dropped", `{"opts":{"action":"accept","content":{"level":"summary","x":1}}}`, "complete", "level=summary state=" + appState},
		{"missing answer asks again (MRTR-S-14)", `{"other":{"action":"accept"}}`, "input_required", ""},
		{"null responses asks again", `null`, "input_required", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := c.call(t, toolCall("ask_form", `{"elicitation":{}}`, retry(state, tt.responses)))
			if err != nil {
				t.Fatal(err)
			}
			if r["resultType"] != tt.wantType || (tt.wantText != "" && text(r) != tt.wantText) {
				t.Fatalf("got %v", r)
			}
		})
	}
	// Answers without a sealed state are not trusted: the server asks.
	r, _ := c.call(t, toolCall("ask_form", `{"elicitation":{}}`, `,"inputResponses":{"opts":{"action":"accept","content":{"level":"summary"}}}`))
	if r["resultType"] != "input_required" {
		t.Fatalf("unsolicited answer accepted: %v", r)
	}
	// State bound to alice: bob gets the opaque error.
	bob := rpc{c.s, "bob"}
	if _, err := bob.call(t, toolCall("ask_form", `{"elicitation":{}}`, retry(state, `{"opts":{"action":"decline"}}`))); err == nil || err.Code != -32602 || err.Message != "invalid or expired requestState" {
		t.Fatalf("bob's retry: %v", err)
	}
	// Bound to the tool.
	if _, err := c.call(t, toolCall("ask_url", `{"elicitation":{"url":{}}}`, retry(state, `{}`))); err == nil || err.Code != -32602 {
		t.Fatalf("other tool: %v", err)
	}
}

func TestMalformedAnswerIsInvalidParams(t *testing.T) {
	c := rpc{newTestServer(t), "alice"}
	r1, _ := c.call(t, toolCall("ask_form", `{"elicitation":{}}`, ""))
	state := r1["requestState"].(string)
	for _, bad := range []string{`12345`, `"accept"`, `[]`, `{}`, `{"action":"ACCEPT"}`, `{"Action":"accept"}`} {
		_, err := c.call(t, toolCall("ask_form", `{"elicitation":{}}`, retry(state, `{"opts":`+bad+`}`)))
		if err == nil || err.Code != jsonrpc.CodeInvalidParams {
			t.Errorf("%s: err = %v, want -32602", bad, err)
		}
	}
	// Unasked keys and null entries are ignored (MRTR-S-13): asked again.
	r, err := c.call(t, toolCall("ask_form", `{"elicitation":{}}`, retry(state, `{"opts":null,"other":12}`)))
	if err != nil || r["resultType"] != "input_required" {
		t.Fatalf("null entry: %v %v", r, err)
	}
}

func TestCapabilityGate(t *testing.T) {
	c := rpc{newTestServer(t), ""}
	for _, caps := range []string{`{}`, `{"elicitation":{}}`, `{"elicitation":{"form":{}}}`, `{"sampling":{}}`} {
		_, err := c.call(t, toolCall("ask_url", caps, ""))
		if err == nil || err.Code != mcp.CodeMissingRequiredClientCapability {
			t.Fatalf("caps %s: err = %v", caps, err)
		}
		b, _ := json.Marshal(err.Data)
		if string(b) != `{"requiredCapabilities":{"elicitation":{"url":{}}}}` {
			t.Fatalf("data = %s", b)
		}
	}
	if r, err := c.call(t, toolCall("ask_url", `{"elicitation":{"url":{}}}`, "")); err != nil || r["resultType"] != "input_required" {
		t.Fatalf("url declared: %v %v", r, err)
	}
	_, err := c.call(t, toolCall("ask_form", `{"elicitation":{"url":{}}}`, ""))
	if err == nil || err.Code != mcp.CodeMissingRequiredClientCapability {
		t.Fatalf("url-only client asked a form: %v", err)
	}
}

func TestFaultsDoNotLeak(t *testing.T) {
	c := rpc{newTestServer(t), ""}
	for _, tool := range []string{"boom", "fails", "wrong_reply", "ask_secret"} {
		_, err := c.call(t, toolCall(tool, `{"elicitation":{"form":{},"url":{}}}`, ""))
		if err == nil || err.Code != jsonrpc.CodeInternalError || err.Message != "Internal error" {
			t.Fatalf("%s: %v", tool, err)
		}
	}
}

func TestMethods(t *testing.T) {
	c := rpc{newTestServer(t), ""}
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	r, err := c.call(t, `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{`+meta+`}}`)
	if err != nil || r["resultType"] != "complete" || r["cacheScope"] == nil || r["ttlMs"] == nil {
		t.Fatalf("discover: %v %v", r, err)
	}
	caps := r["capabilities"].(map[string]any)
	if caps["tools"] == nil || caps["prompts"] == nil || caps["resources"] == nil || caps["completions"] != nil {
		t.Fatalf("capabilities %v", caps)
	}
	tests := []struct {
		name, method, params string
		code                 int    // 0: a complete result
		want                 string // in the result, or in the error's data
	}{
		{"unadvertised completion", "completion/complete", ``, -32601, ""},
		{"missing prompt argument", "prompts/get", `"name":"p",`, -32602, ""},
		{"prompt", "prompts/get", `"name":"p","arguments":{"a":"x"},`, 0, `"resultType":"complete"`},
		{"template read", "resources/read", `"uri":"test://t/123/data",`, 0, `"text":"123"`},
		{"missing resource", "resources/read", `"uri":"test://none",`, -32602, `{"uri":"test://none"}`},
		{"requestState on tools/list", "tools/list", `"requestState":"x",`, -32602, ""},
	}
	for _, tt := range tests {
		r, err := c.call(t, `{"jsonrpc":"2.0","id":1,"method":"`+tt.method+`","params":{`+tt.params+meta+`}}`)
		got := mustJSON(r)
		if err != nil {
			got = mustJSON(err.Data)
		}
		if code := errCode(err); code != tt.code || !strings.Contains(got, tt.want) {
			t.Errorf("%s: %s %v; want code %d and %s", tt.name, got, err, tt.code, tt.want)
		}
	}
}

// errCode is the code of err, 0 for none.
func errCode(err *jsonrpc.Error) int {
	if err == nil {
		return 0
	}
	return err.Code
}

func mustJSON(v any) string { b, _ := json.Marshal(v); return string(b) }

func TestMatchTemplate(t *testing.T) {
	tests := []struct {
		tmpl, uri string
		ok        bool
		id        string
	}{
		{"test://template/{id}/data", "test://template/123/data", true, "123"},
		{"test://template/{id}/data", "test://template/1/2/data", false, ""},
		{"test://template/{id}/data", "test://template//data", false, ""},
		{"test://template/{id}", "test://template/abc", true, "abc"},
		{"test://x", "test://x", true, ""},
		{"test://x", "test://y", false, ""},
	}
	for _, tt := range tests {
		vars, ok := matchTemplate(tt.tmpl, tt.uri)
		if ok != tt.ok || (ok && vars["id"] != tt.id) {
			t.Errorf("matchTemplate(%q, %q) = %v, %v", tt.tmpl, tt.uri, vars, ok)
		}
	}
}

func FuzzDecodePayload(f *testing.F) {
	a := Ask().ElicitForm("opts", "m", json.RawMessage(formSchema)).ElicitURL("u", "m", "https://x.example/").WithState([]byte("app"))
	f.Add(encodePayload(a))
	f.Add([]byte{0})
	f.Add([]byte{200, 1})
	task := a.issued
	u := task["u"]
	u.wire, u.reasks = "u#2", 1
	task["u"] = u
	f.Add(encodeTaskAsked(task, map[string]bool{"u": true, "u#2": true}, []byte("app")))
	f.Fuzz(func(t *testing.T, b []byte) {
		iss, used, state, ok := decodeTaskPayload(b)
		if !ok {
			return
		}
		if len(iss)+len(used) > maxPayloadEntries {
			t.Fatal("too many entries accepted")
		}
		// What reads, writes back to what reads the same.
		iss2, used2, state2, ok := decodeTaskPayload(encodeTaskAsked(iss, used, state))
		if !ok || len(iss2) != len(iss) || len(used2) != len(used) || string(state2) != string(state) {
			t.Fatalf("round trip: %v %v %q, then %v %v %q", iss, used, state, iss2, used2, state2)
		}
		for k, is := range iss {
			if got := iss2[k]; got.kind != is.kind || got.reasks != is.reasks || got.wire != is.wire || string(got.schema) != string(is.schema) {
				t.Fatalf("round trip of %q: %+v, then %+v", k, is, got)
			}
		}
	})
}

func TestListCacheFollowsRegistration(t *testing.T) {
	s := newTestServer(t)
	c := rpc{s, ""}
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	before, _ := c.call(t, list)
	again, _ := c.call(t, list)
	if mustJSON(before) != mustJSON(again) {
		t.Fatal("cached list differs from the first")
	}
	s.AddTool(&mcp.Tool{Name: "late", Description: "added after serving"}, func(ctx context.Context, r *Request) (Reply, error) { return Text("x"), nil })
	after, _ := c.call(t, list)
	if !strings.Contains(mustJSON(after), `"name":"late"`) || strings.Contains(mustJSON(before), `"name":"late"`) {
		t.Fatalf("list after registration: %s", mustJSON(after))
	}
}

func TestUnavailableIsRetryable(t *testing.T) {
	s := New(mcp.Implementation{Name: "t", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "down", Description: "d"}, func(ctx context.Context, r *Request) (Reply, error) {
		return nil, fmt.Errorf("loading drafts: %w", ErrUnavailable)
	})
	s.AddTool(&mcp.Tool{Name: "bug", Description: "b"}, func(ctx context.Context, r *Request) (Reply, error) {
		return nil, errors.New("nil map")
	})
	c := rpc{s, ""}
	_, err := c.call(t, toolCall("down", `{}`, ""))
	if err == nil || err.Code != jsonrpc.CodeInternalError || mustJSON(err.Data) != `{"retryable":true,"retryAfterMs":1000}` {
		t.Fatalf("outage: %v data %s", err, mustJSON(err.Data))
	}
	_, err = c.call(t, toolCall("bug", `{}`, ""))
	if err == nil || err.Message != "Internal error" || err.Data != nil {
		t.Fatalf("bug: %v", err)
	}
}

// TestArgumentErrorsNameTheArgument: a -32602 for arguments names the
// argument and says what is wrong with it — the kind it must be and the
// kind found, unknown, given twice — never its value.
func TestArgumentErrorsNameTheArgument(t *testing.T) {
	type args struct {
		DraftID string   `json:"draft_id"`
		Count   int      `json:"count"`
		Ratio   float64  `json:"ratio"`
		Tags    []string `json:"tags"`
		Opts    struct {
			On bool `json:"on"`
		} `json:"opts"`
	}
	for _, tc := range []struct {
		raw  string
		want string
	}{
		{`{"draft_id":12345}`, `Invalid params: "draft_id" must be a string, not a number`},
		{`{"count":"SECRET"}`, `Invalid params: "count" must be a whole number, not a string`},
		{`{"count":1.5}`, `Invalid params: "count" must be a whole number`},
		{`{"ratio":true}`, `Invalid params: "ratio" must be a number, not a boolean`},
		{`{"tags":"SECRET"}`, `Invalid params: "tags" must be an array, not a string`},
		{`{"opts":{"on":"SECRET"}}`, `Invalid params: "opts.on" must be true or false, not a string`},
		{`{"draft_id":"a","draft_id":"b"}`, `Invalid params: "draft_id" appears twice`},
		{`{"colour":"SECRET"}`, `Invalid params: "colour" is not a known argument`},
		{`{"a/b~c":1}`, `Invalid params: "a/b~c" is not a known argument`},
		{`{"draft_id":"d1","count":2}`, ""},
	} {
		r := &Request{Arguments: json.RawMessage(tc.raw)}
		var a args
		err := r.BindArguments(&a)
		var je *jsonrpc.Error
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.raw, err)
		case tc.want != "" && (!errors.As(err, &je) || je.Code != jsonrpc.CodeInvalidParams || je.Message != tc.want):
			t.Errorf("%s: %v, want -32602 %q", tc.raw, err, tc.want)
		case err != nil && strings.Contains(err.Error(), "SECRET"):
			t.Errorf("%s: the value is quoted: %v", tc.raw, err)
		}
	}
}

// TestInputResponseErrorsSayWhy: an inputResponses entry that is not a
// result of its request is refused with -32602 saying what is wrong.
func TestInputResponseErrorsSayWhy(t *testing.T) {
	c := rpc{newTestServer(t), "alice"}
	r1, err := c.call(t, toolCall("ask_form", `{"elicitation":{}}`, ""))
	if err != nil {
		t.Fatal(err)
	}
	st := r1["requestState"].(string)
	for _, tc := range []struct{ answer, want string }{
		{`{"action":"acc"}`, `inputResponses["opts"] is not a valid result of the request issued under that key: the answer has no known action (accept, decline or cancel)`},
		{`{"action":"accept","content":[1]}`, ""},
		{`"accept"`, `inputResponses["opts"] is not a valid result of the request issued under that key: the answer could not be read (not an elicitation result)`},
	} {
		_, err := c.call(t, toolCall("ask_form", `{"elicitation":{}}`, retry(st, `{"opts":`+tc.answer+`}`)))
		if tc.want == "" {
			// Content is the handler's to judge: asked again, not refused.
			if err != nil {
				t.Errorf("%s: refused: %v", tc.answer, err)
			}
			continue
		}
		if err == nil || err.Code != jsonrpc.CodeInvalidParams || !strings.HasSuffix(err.Message, tc.want) {
			t.Errorf("%s: %v, want -32602 ending %q", tc.answer, err, tc.want)
		}
	}
}

// TestAlsoServed: versions served beside the server on its endpoint are
// listed in discover and in -32022, after its own; it still refuses them
// in its own request shape, saying where they are served.
func TestAlsoServed(t *testing.T) {
	s := New(mcp.Implementation{Name: "t", Version: "1"}, nil)
	supported := func(v string) []string {
		t.Helper()
		jerr := s.checkVersion(v)
		if jerr == nil || jerr.Code != mcp.CodeUnsupportedProtocolVersion {
			t.Fatalf("%s: %v, want -32022", v, jerr)
		}
		return jerr.Data.(mcp.UnsupportedVersionData).Supported
	}
	discover := func() []string {
		t.Helper()
		res, err := rpc{s, ""}.call(t, `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, v := range res["supportedVersions"].([]any) {
			out = append(out, v.(string))
		}
		return out
	}
	if got := supported("2099-01-01"); !reflect.DeepEqual(got, []string{"2026-07-28"}) || !reflect.DeepEqual(discover(), got) {
		t.Fatalf("before: -32022 %q, discover %q", got, discover())
	}
	s.alsoServed("2025-11-25", "2026-07-28", "2025-06-18")
	want := []string{"2026-07-28", "2025-11-25", "2025-06-18"}
	if got := supported("2099-01-01"); !reflect.DeepEqual(got, want) || !reflect.DeepEqual(discover(), want) {
		t.Errorf("after: -32022 %q, discover %q; want %q", got, discover(), want)
	}
	if jerr := s.checkVersion("2025-11-25"); jerr == nil || !strings.Contains(jerr.Message, "served on this endpoint through initialize") {
		t.Errorf("2025-11-25 in a 2026 request: %v", jerr)
	}
	if s.checkVersion("2026-07-28") != nil || !reflect.DeepEqual(s.versions, []string{"2026-07-28"}) {
		t.Error("its own version is no longer served alone")
	}
}
