package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"image/png"
	"io"
	"log/slog"
	"reflect"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcp-elicit/elicit/internal/transport"
	"github.com/mcp-elicit/elicit/jsonrpc"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpserver"
)

// Client capabilities used by the suite.
const (
	capsDefault  = `{"sampling":{},"elicitation":{},"roots":{"listChanged":true}}`
	capsNone     = `{}`
	capsSampling = `{"sampling":{}}`
)

// Harness answers: the mock responses the suite's input-required-result-*
// scenarios send.
var (
	samplingAnswer = obj(`{"role":"assistant","content":{"type":"text","text":"The capital of France is Paris."},"model":"test-model","stopReason":"endTurn"}`)
	rootsAnswer    = obj(`{"roots":[{"uri":"file:///test/root","name":"Test Root"}]}`)
)

func accept(content string) map[string]any {
	return obj(`{"action":"accept","content":` + content + `}`)
}

func obj(s string) map[string]any {
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		panic(err)
	}
	return m
}

type rpcError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}

type reply struct {
	Result map[string]any `json:"result"`
	Error  *rpcError      `json:"error"`
	// Notes are the notifications sent on the response stream, in order.
	Notes []map[string]any
}

type tester struct {
	t *testing.T
	s *mcpserver.Server
}

func newTester(t *testing.T) *tester {
	t.Helper()
	return &tester{t: t, s: newServer(slog.New(slog.NewTextHandler(io.Discard, nil)))}
}

// call sends one request with the given client capabilities (and extra
// _meta members) through Parse and Serve, exactly as a transport would,
// and returns the decoded response.
func (c *tester) call(method, caps string, params map[string]any, extraMeta ...string) reply {
	c.t.Helper()
	p := map[string]any{}
	for k, v := range params {
		p[k] = v
	}
	meta := obj(`{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientCapabilities":` + caps + `,` +
		`"io.modelcontextprotocol/clientInfo":{"name":"test","version":"1"}}`)
	for i := 0; i+1 < len(extraMeta); i += 2 {
		var v any
		if err := json.Unmarshal([]byte(extraMeta[i+1]), &v); err != nil {
			c.t.Fatalf("bad extra _meta value %q: %v", extraMeta[i+1], err)
		}
		meta[extraMeta[i]] = v
	}
	p["_meta"] = meta
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": method, "params": p})
	if err != nil {
		c.t.Fatal(err)
	}
	req, jerr := jsonrpc.DecodeRequest(body)
	if jerr != nil {
		c.t.Fatalf("DecodeRequest(%s): %v", body, jerr)
	}
	var r reply
	in, jerr := transport.Parse(req)
	if jerr != nil {
		c.t.Fatalf("Parse(%s): %v", body, jerr)
	}
	var mu sync.Mutex
	notify := func(n *jsonrpc.Notification) error {
		b, err := n.MarshalJSON()
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		r.Notes = append(r.Notes, obj(string(b)))
		return nil
	}
	resp := transport.Of(c.s).Serve(context.Background(), in, "", notify)
	out, err := resp.MarshalJSON()
	if err != nil {
		c.t.Fatal(err)
	}
	if bytes.ContainsRune(out, '\n') {
		c.t.Errorf("response spans several lines: %s", out)
	}
	if !strings.Contains(string(out), `"id":7`) {
		c.t.Errorf("response does not echo the id: %s", out)
	}
	if err := json.Unmarshal(out, &r); err != nil {
		c.t.Fatalf("response %s: %v", out, err)
	}
	if r.Result != nil {
		if rt, _ := r.Result["resultType"].(string); rt != mcp.ResultTypeComplete && rt != mcp.ResultTypeInputRequired {
			c.t.Errorf("result without a valid resultType: %s", out)
		}
	}
	return r
}

func (c *tester) tool(caps, name string, extra map[string]any, extraMeta ...string) reply {
	c.t.Helper()
	p := map[string]any{"name": name, "arguments": map[string]any{}}
	for k, v := range extra {
		p[k] = v
	}
	return c.call(mcp.MethodToolsCall, caps, p, extraMeta...)
}

// complete returns the result, failing unless it is a complete one.
func (r reply) complete(t *testing.T) map[string]any {
	t.Helper()
	if r.Error != nil {
		t.Fatalf("got error %d %q, want a complete result", r.Error.Code, r.Error.Message)
	}
	if r.Result["resultType"] != mcp.ResultTypeComplete {
		t.Fatalf("got resultType %v, want complete: %v", r.Result["resultType"], r.Result)
	}
	return r.Result
}

// inputRequired returns the inputRequests and requestState of an
// InputRequiredResult, failing on anything else.
func (r reply) inputRequired(t *testing.T) (map[string]any, string) {
	t.Helper()
	if r.Error != nil {
		t.Fatalf("got error %d %q, want input_required", r.Error.Code, r.Error.Message)
	}
	if r.Result["resultType"] != mcp.ResultTypeInputRequired {
		t.Fatalf("got resultType %v, want input_required: %v", r.Result["resultType"], r.Result)
	}
	reqs, _ := r.Result["inputRequests"].(map[string]any)
	state, _ := r.Result["requestState"].(string)
	if state == "" {
		t.Fatalf("input_required without requestState: %v", r.Result)
	}
	return reqs, state
}

func (r reply) errorCode(t *testing.T) int {
	t.Helper()
	if r.Error == nil {
		t.Fatalf("got result %v, want an error", r.Result)
	}
	return r.Error.Code
}

// text returns content[i].text of a complete tools/call result.
func text(t *testing.T, res map[string]any, i int) string {
	t.Helper()
	content, _ := res["content"].([]any)
	if len(content) <= i {
		t.Fatalf("content has %d items, want > %d: %v", len(content), i, res)
	}
	block, _ := content[i].(map[string]any)
	s, _ := block["text"].(string)
	return s
}

// request returns inputRequests[key], checking its method.
func request(t *testing.T, reqs map[string]any, key, method string) map[string]any {
	t.Helper()
	r, ok := reqs[key].(map[string]any)
	if !ok {
		t.Fatalf("inputRequests has no %q: %v", key, reqs)
	}
	if r["method"] != method {
		t.Fatalf("inputRequests[%q].method = %v, want %s", key, r["method"], method)
	}
	p, _ := r["params"].(map[string]any)
	return p
}

func jsonEqual(t *testing.T, got any, want string) {
	t.Helper()
	var w any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, w) {
		g, _ := json.Marshal(got)
		t.Errorf("got %s, want %s", g, want)
	}
}

// ---- listing ----

// expectedTools are the fixture tool names the suite calls, in list order.
var expectedTools = []string{
	"test_simple_text", "test_image_content", "test_audio_content", "test_embedded_resource",
	"test_multiple_content_types", "test_error_handling", "test_tool_with_progress",
	"test_missing_capability", "test_streaming_elicitation", "test_logging_tool",
	"test_input_required_result_elicitation", "test_input_required_result_sampling",
	"test_input_required_result_list_roots", "test_input_required_result_request_state",
	"test_input_required_result_multiple_inputs", "test_input_required_result_multi_round",
	"test_input_required_result_tampered_state", "test_input_required_result_capabilities",
	"json_schema_2020_12_tool", "test_custom_header",
	// The fixtures of the 2025-11-25 suite (legacy_fixtures.go).
	"test_tool_with_logging", "test_sampling", "test_elicitation",
	"test_elicitation_sep1034_defaults", "test_elicitation_sep1330_enums",
	// The fixtures of the tasks-* scenarios (tasks.go).
	"greet", "slow_compute", "failing_job", "protocol_error_job", "confirm_delete", "multi_input", "test_tool_with_task",
}

func listed(t *testing.T, c *tester, method, member string) map[string]map[string]any {
	t.Helper()
	res := c.call(method, capsNone, nil).complete(t)
	if _, ok := res["ttlMs"].(float64); !ok || res["cacheScope"] == nil {
		t.Errorf("%s result lacks caching hints: %v", method, res)
	}
	items, _ := res[member].([]any)
	out := map[string]map[string]any{}
	for i, it := range items {
		m := it.(map[string]any)
		key, _ := m["name"].(string)
		if member == "resources" {
			key, _ = m["uri"].(string)
		}
		m["#index"] = float64(i)
		out[key] = m
	}
	return out
}

func TestEveryToolIsListedWithADescription(t *testing.T) {
	c := newTester(t)
	got := listed(t, c, mcp.MethodToolsList, "tools")
	if len(got) != len(expectedTools) {
		t.Errorf("tools/list has %d tools, want %d", len(got), len(expectedTools))
	}
	for i, name := range expectedTools {
		t.Run(name, func(t *testing.T) {
			tool, ok := got[name]
			if !ok {
				t.Fatalf("tool %s not listed", name)
			}
			if d, _ := tool["description"].(string); strings.TrimSpace(d) == "" {
				t.Errorf("tool %s has no description", name)
			}
			if tool["#index"] != float64(i) {
				t.Errorf("tool %s listed at %v, want %d", name, tool["#index"], i)
			}
			schema, _ := tool["inputSchema"].(map[string]any)
			if schema["type"] != "object" {
				t.Errorf("tool %s inputSchema.type = %v", name, schema["type"])
			}
		})
	}
}

func TestJSONSchema2020ToolIsVerbatim(t *testing.T) {
	c := newTester(t)
	tool := listed(t, c, mcp.MethodToolsList, "tools")["json_schema_2020_12_tool"]
	var want any
	if err := json.Unmarshal(schema2020, &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(tool["inputSchema"], want) {
		t.Errorf("inputSchema changed on the way: %v", tool["inputSchema"])
	}
	s := tool["inputSchema"].(map[string]any)
	if s["$schema"] != "https://json-schema.org/draft/2020-12/schema" || s["additionalProperties"] != false {
		t.Errorf("missing $schema or additionalProperties:false: %v", s)
	}
	addr := s["$defs"].(map[string]any)["address"].(map[string]any)
	if addr["$anchor"] != "addressDef" {
		t.Errorf("$defs.address.$anchor = %v", addr["$anchor"])
	}
	res := c.tool(capsNone, "json_schema_2020_12_tool", map[string]any{"arguments": obj(`{"name":"Ann","email":"a@example.com"}`)}).complete(t)
	if !strings.Contains(text(t, res, 0), `"name":"Ann"`) {
		t.Errorf("text = %q", text(t, res, 0))
	}
}

func TestCustomHeaderTool(t *testing.T) {
	c := newTester(t)
	tool := listed(t, c, mcp.MethodToolsList, "tools")["test_custom_header"]
	region := tool["inputSchema"].(map[string]any)["properties"].(map[string]any)["region"].(map[string]any)
	if region["type"] != "string" || region["x-mcp-header"] != "Region" {
		t.Errorf("region property = %v", region)
	}
	params, ok := transport.Of(c.s).ToolHeaderParams("test_custom_header")
	if !ok || len(params) != 1 || params[0].Header != "Region" {
		t.Errorf("ToolHeaderParams = %v, %v", params, ok)
	}
	res := c.tool(capsNone, "test_custom_header", map[string]any{"arguments": obj(`{"region":"us-west1"}`)}).complete(t)
	if got := text(t, res, 0); got != "Region: us-west1" {
		t.Errorf("text = %q", got)
	}
}

func TestPromptsResourcesAndDiscover(t *testing.T) {
	c := newTester(t)
	prompts := listed(t, c, mcp.MethodPromptsList, "prompts")
	for _, name := range []string{"test_simple_prompt", "test_prompt_with_arguments", "test_prompt_with_embedded_resource",
		"test_prompt_with_image", "test_input_required_result_prompt"} {
		if d, _ := prompts[name]["description"].(string); d == "" {
			t.Errorf("prompt %s missing or without description", name)
		}
	}
	resources := listed(t, c, mcp.MethodResourcesList, "resources")
	if resources[uriStaticText]["#index"] != float64(0) || resources[uriStaticBinary] == nil {
		t.Errorf("resources/list = %v; want static-text first, then static-binary", resources)
	}
	tmpl := c.call(mcp.MethodResourceTemplatesList, capsNone, nil).complete(t)
	jsonEqual(t, tmpl["resourceTemplates"], `[{"uriTemplate":"test://template/{id}/data","name":"template-data","description":"JSON data for any id.","mimeType":"application/json"}]`)

	disc := c.call(mcp.MethodDiscover, capsNone, nil).complete(t)
	jsonEqual(t, disc["capabilities"], `{"tools":{},"prompts":{},"resources":{},"completions":{},"extensions":{"io.modelcontextprotocol/tasks":{}}}`)
	jsonEqual(t, disc["supportedVersions"], `["2026-07-28"]`)
	if info, _ := disc["_meta"].(map[string]any)[mcp.MetaServerInfo].(map[string]any); info["name"] != serverInfo.Name {
		t.Errorf("discover _meta serverInfo = %v", info)
	}
}

// ---- content tools ----

func TestContentTools(t *testing.T) {
	c := newTester(t)

	// The suite calls test_simple_text with no arguments key at all.
	r := c.call(mcp.MethodToolsCall, capsDefault, map[string]any{"name": "test_simple_text"}).complete(t)
	if got := text(t, r, 0); got != simpleText {
		t.Errorf("simple text = %q", got)
	}

	img := c.tool(capsDefault, "test_image_content", nil).complete(t)["content"].([]any)[0].(map[string]any)
	if img["type"] != "image" || img["mimeType"] != "image/png" {
		t.Errorf("image block = %v", img)
	}
	checkPNG(t, img["data"].(string))

	audio := c.tool(capsDefault, "test_audio_content", nil).complete(t)["content"].([]any)[0].(map[string]any)
	if audio["type"] != "audio" || audio["mimeType"] != "audio/wav" {
		t.Errorf("audio block = %v", audio)
	}
	checkWAV(t, audio["data"].(string))

	emb := c.tool(capsDefault, "test_embedded_resource", nil).complete(t)["content"].([]any)[0].(map[string]any)
	jsonEqual(t, emb, `{"type":"resource","resource":{"uri":"test://embedded-resource","mimeType":"text/plain","text":"This is an embedded resource content."}}`)

	mixed := c.tool(capsDefault, "test_multiple_content_types", nil).complete(t)["content"].([]any)
	var types []string
	for _, b := range mixed {
		types = append(types, b.(map[string]any)["type"].(string))
	}
	if strings.Join(types, ",") != "text,image,resource" {
		t.Errorf("mixed content types = %v", types)
	}
	jsonEqual(t, mixed[2].(map[string]any)["resource"], `{"uri":"test://mixed-content-resource","mimeType":"application/json","text":"{\"test\":\"data\",\"value\":123}"}`)

	e := c.tool(capsDefault, "test_error_handling", nil).complete(t)
	if e["isError"] != true || text(t, e, 0) != errorToolText {
		t.Errorf("error tool = %v", e)
	}
}

func checkPNG(t *testing.T, b64 string) {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		t.Fatalf("PNG base64: %v", err)
	}
	img, err := png.Decode(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("PNG: %v", err)
	}
	if b := img.Bounds(); b.Dx() != 1 || b.Dy() != 1 {
		t.Errorf("PNG is %v, want 1x1", b)
	}
}

func checkWAV(t *testing.T, b64 string) {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		t.Fatalf("WAV base64: %v", err)
	}
	if len(raw) < 44 || string(raw[0:4]) != "RIFF" || string(raw[8:12]) != "WAVE" || string(raw[12:16]) != "fmt " || string(raw[36:40]) != "data" {
		t.Fatalf("not a canonical WAV header: % x", raw[:min(len(raw), 44)])
	}
	le := binary.LittleEndian
	if int(le.Uint32(raw[4:8])) != len(raw)-8 || int(le.Uint32(raw[40:44])) != len(raw)-44 {
		t.Errorf("WAV chunk sizes do not match the data length %d", len(raw))
	}
	if format := le.Uint16(raw[20:22]); format != 1 {
		t.Errorf("WAV format %d, want PCM", format)
	}
}

// The progress notifications come progressStep apart (in the bubble's
// fake time: exactly).
func TestProgressTool(t *testing.T) { synctest.Test(t, testProgressTool) }

func testProgressTool(t *testing.T) {
	c := newTester(t)
	start := time.Now()
	r := c.tool(capsDefault, "test_tool_with_progress", nil, "progressToken", `"progress-test-1"`)
	if elapsed := time.Since(start); elapsed != 2*progressStep {
		t.Errorf("finished in %v; want the 3 progress steps %v apart", elapsed, progressStep)
	}
	r.complete(t)
	if len(r.Notes) != 3 {
		t.Fatalf("got %d notifications, want 3: %v", len(r.Notes), r.Notes)
	}
	for i, want := range []float64{0, 50, 100} {
		n := r.Notes[i]
		p := n["params"].(map[string]any)
		if n["method"] != mcp.NotificationProgress || p["progressToken"] != "progress-test-1" || p["progress"] != want || p["total"] != float64(100) {
			t.Errorf("notification %d = %v", i, n)
		}
	}

	// Numeric tokens are echoed as numbers; no token means no notification.
	r = c.tool(capsDefault, "test_tool_with_progress", nil, "progressToken", `42`)
	if len(r.Notes) != 3 || r.Notes[0]["params"].(map[string]any)["progressToken"] != float64(42) {
		t.Errorf("numeric token: %v", r.Notes)
	}
	if r = c.tool(capsDefault, "test_tool_with_progress", nil); len(r.Notes) != 0 {
		t.Errorf("progress sent without a progressToken: %v", r.Notes)
	}
}

func TestLoggingToolLogsOnlyWhenAsked(t *testing.T) {
	c := newTester(t)
	r := c.tool(capsDefault, "test_logging_tool", nil)
	r.complete(t)
	if len(r.Notes) != 0 {
		t.Errorf("notifications without logLevel: %v", r.Notes)
	}
	r = c.tool(capsDefault, "test_logging_tool", nil, mcp.MetaLogLevel, `"info"`)
	r.complete(t)
	var levels []string
	for _, n := range r.Notes {
		if n["method"] != mcp.NotificationMessage {
			t.Errorf("unexpected notification %v", n)
		}
		levels = append(levels, n["params"].(map[string]any)["level"].(string))
	}
	if strings.Join(levels, ",") != "info,warning" {
		t.Errorf("levels logged at info = %v, want info,warning", levels)
	}
}

// ---- capability checks ----

func TestMissingCapability(t *testing.T) {
	c := newTester(t)
	for _, caps := range []string{capsNone, `{"elicitation":{},"roots":{}}`} {
		r := c.tool(caps, "test_missing_capability", nil)
		if code := r.errorCode(t); code != mcp.CodeMissingRequiredClientCapability {
			t.Fatalf("caps %s: code %d, want -32021", caps, code)
		}
		if string(r.Error.Data) != `{"requiredCapabilities":{"sampling":{}}}` {
			t.Errorf("caps %s: data = %s", caps, r.Error.Data)
		}
	}
	res := c.tool(capsSampling, "test_missing_capability", nil).complete(t)
	if !strings.Contains(text(t, res, 0), "sampling") {
		t.Errorf("text = %q", text(t, res, 0))
	}
}

func TestCapabilitiesToolAsksOnlyForDeclared(t *testing.T) {
	c := newTester(t)

	reqs, state := c.tool(capsSampling, "test_input_required_result_capabilities", nil).inputRequired(t)
	if len(reqs) != 1 {
		t.Fatalf("with sampling only: inputRequests = %v, want one sampling request", reqs)
	}
	request(t, reqs, "capital_question", mcp.MethodSamplingCreate)
	res := c.tool(capsSampling, "test_input_required_result_capabilities", map[string]any{
		"inputResponses": map[string]any{"capital_question": samplingAnswer}, "requestState": state}).complete(t)
	if got := text(t, res, 0); !strings.Contains(got, "Paris") {
		t.Errorf("text = %q", got)
	}

	reqs, _ = c.tool(capsDefault, "test_input_required_result_capabilities", nil).inputRequired(t)
	request(t, reqs, "capital_question", mcp.MethodSamplingCreate)
	request(t, reqs, "user_name", mcp.MethodElicitationCreate)
	request(t, reqs, "client_roots", mcp.MethodRootsList)

	reqs, _ = c.tool(`{"elicitation":{}}`, "test_input_required_result_capabilities", nil).inputRequired(t)
	if len(reqs) != 1 || reqs["user_name"] == nil {
		t.Errorf("with elicitation only: %v", reqs)
	}

	res = c.tool(capsNone, "test_input_required_result_capabilities", nil).complete(t)
	if !strings.Contains(text(t, res, 0), "nothing to ask") {
		t.Errorf("with no capabilities: %q", text(t, res, 0))
	}
}

func TestStreamingElicitationUsesMRTR(t *testing.T) {
	c := newTester(t)
	r := c.tool(`{"elicitation":{}}`, "test_streaming_elicitation", nil)
	if len(r.Notes) != 0 {
		t.Errorf("messages on the stream: %v", r.Notes)
	}
	reqs, state := r.inputRequired(t)
	request(t, reqs, "confirm", mcp.MethodElicitationCreate)
	res := c.tool(`{"elicitation":{}}`, "test_streaming_elicitation", map[string]any{
		"inputResponses": map[string]any{"confirm": accept(`{"ok":true}`)}, "requestState": state}).complete(t)
	if text(t, res, 0) != "Elicitation answered: accepted." {
		t.Errorf("text = %q", text(t, res, 0))
	}
	c.tool(capsNone, "test_streaming_elicitation", nil).complete(t)
}

// ---- MRTR tools ----

func TestElicitationTwoRounds(t *testing.T) {
	c := newTester(t)
	const tool = "test_input_required_result_elicitation"
	reqs, state := c.tool(capsDefault, tool, nil).inputRequired(t)
	if len(reqs) != 1 {
		t.Errorf("inputRequests = %v", reqs)
	}
	p := request(t, reqs, "user_name", mcp.MethodElicitationCreate)
	if p["message"] != "What is your name?" {
		t.Errorf("message = %v", p["message"])
	}
	jsonEqual(t, p["requestedSchema"], string(schemaName))

	res := c.tool(capsDefault, tool, map[string]any{
		"inputResponses": map[string]any{"user_name": accept(`{"name":"Alice"}`)}, "requestState": state}).complete(t)
	if got := text(t, res, 0); got != "Hello, Alice!" {
		t.Errorf("text = %q", got)
	}

	// A declined answer completes without a name.
	res = c.tool(capsDefault, tool, map[string]any{
		"inputResponses": map[string]any{"user_name": obj(`{"action":"decline"}`)}, "requestState": state}).complete(t)
	if got := text(t, res, 0); got != "No name given (declined)." {
		t.Errorf("declined: text = %q", got)
	}

	// Elicitation needs the capability: the library refuses to ask.
	if code := c.tool(capsSampling, tool, nil).errorCode(t); code != mcp.CodeMissingRequiredClientCapability {
		t.Errorf("without elicitation: code %d", code)
	}
}

func TestElicitationReasksOnWrongOrInvalidAnswers(t *testing.T) {
	c := newTester(t)
	const tool = "test_input_required_result_elicitation"
	_, state := c.tool(capsDefault, tool, nil).inputRequired(t)

	cases := map[string]map[string]any{
		// input-required-result-missing-input-response: wrong key, no state.
		"wrong key, no state": {"inputResponses": map[string]any{"wrong_key": accept(`{"data":"wrong"}`)}},
		// input-required-result-validate-input: a number instead of an ElicitResult.
		"number answer":  {"inputResponses": map[string]any{"user_name": 12345}},
		"null responses": {"inputResponses": nil},
		// With state: answers that do not fit the schema asked.
		"wrong key with state":   {"inputResponses": map[string]any{"wrong_key": accept(`{"name":"Alice"}`)}, "requestState": state},
		"number name with state": {"inputResponses": map[string]any{"user_name": accept(`{"name":12345}`)}, "requestState": state},
		"no name with state":     {"inputResponses": map[string]any{"user_name": accept(`{}`)}, "requestState": state},
	}
	for name, extra := range cases {
		t.Run(name, func(t *testing.T) {
			reqs, newState := c.tool(capsDefault, tool, extra).inputRequired(t)
			request(t, reqs, "user_name", mcp.MethodElicitationCreate)
			if newState == state {
				t.Errorf("re-ask reused the previous requestState")
			}
		})
	}
}

func TestSamplingTwoRounds(t *testing.T) {
	c := newTester(t)
	const tool = "test_input_required_result_sampling"
	reqs, state := c.tool(capsDefault, tool, nil).inputRequired(t)
	p := request(t, reqs, "capital_question", mcp.MethodSamplingCreate)
	jsonEqual(t, p, `{"messages":[{"role":"user","content":{"type":"text","text":"What is the capital of France?"}}],"maxTokens":100}`)
	res := c.tool(capsDefault, tool, map[string]any{
		"inputResponses": map[string]any{"capital_question": samplingAnswer}, "requestState": state}).complete(t)
	if got := text(t, res, 0); got != "The model answered: The capital of France is Paris." {
		t.Errorf("text = %q", got)
	}
	// An answer that is not a CreateMessageResult is a client bug: -32602 (MRTR-S-11).
	if code := c.tool(capsDefault, tool, map[string]any{
		"inputResponses": map[string]any{"capital_question": obj(`{"action":"accept"}`)}, "requestState": state}).errorCode(t); code != -32602 {
		t.Errorf("malformed sampling answer: code %d, want -32602", code)
	}
}

// With a sealed state, an answer under an issued key that is not an
// ElicitResult is refused with -32602 rather than read as "no answer".
func TestMalformedAnswerWithStateIsAnError(t *testing.T) {
	c := newTester(t)
	const tool = "test_input_required_result_elicitation"
	_, state := c.tool(capsDefault, tool, nil).inputRequired(t)
	for _, bad := range []any{12345, "accept", []any{}, map[string]any{}, map[string]any{"action": "ACCEPT"}} {
		if code := c.tool(capsDefault, tool, map[string]any{"inputResponses": map[string]any{"user_name": bad}, "requestState": state}).errorCode(t); code != -32602 {
			t.Errorf("%v: code %d, want -32602", bad, code)
		}
	}
}

func TestListRootsTwoRounds(t *testing.T) {
	c := newTester(t)
	const tool = "test_input_required_result_list_roots"
	reqs, state := c.tool(capsDefault, tool, nil).inputRequired(t)
	p := request(t, reqs, "client_roots", mcp.MethodRootsList)
	if len(p) != 0 {
		t.Errorf("roots/list params = %v, want {}", p)
	}
	res := c.tool(capsDefault, tool, map[string]any{
		"inputResponses": map[string]any{"client_roots": rootsAnswer}, "requestState": state}).complete(t)
	if got := text(t, res, 0); got != "Found 1 root(s): file:///test/root" {
		t.Errorf("text = %q", got)
	}
}

func TestRequestStateIsEchoed(t *testing.T) {
	c := newTester(t)
	const tool = "test_input_required_result_request_state"
	reqs, state := c.tool(capsDefault, tool, nil).inputRequired(t)
	p := request(t, reqs, "confirm", mcp.MethodElicitationCreate)
	if p["message"] != "Please confirm" {
		t.Errorf("message = %v", p["message"])
	}
	jsonEqual(t, p["requestedSchema"], string(schemaOK))
	if strings.Contains(state, requestStateValue) {
		t.Errorf("application state readable in requestState %q", state)
	}
	res := c.tool(capsDefault, tool, map[string]any{
		"inputResponses": map[string]any{"confirm": accept(`{"ok":true}`)}, "requestState": state}).complete(t)
	if got := text(t, res, 0); !strings.Contains(got, "state-ok") || !strings.Contains(got, "ok=true") {
		t.Errorf("text = %q", got)
	}
	// Without the state, the answer is not trusted: asked again.
	c.tool(capsDefault, tool, map[string]any{"inputResponses": map[string]any{"confirm": accept(`{"ok":true}`)}}).inputRequired(t)
}

func TestMultipleInputs(t *testing.T) {
	c := newTester(t)
	const tool = "test_input_required_result_multiple_inputs"
	reqs, state := c.tool(capsDefault, tool, nil).inputRequired(t)
	if len(reqs) != 3 {
		t.Errorf("inputRequests = %v, want 3", reqs)
	}
	request(t, reqs, "user_name", mcp.MethodElicitationCreate)
	g := request(t, reqs, "greeting", mcp.MethodSamplingCreate)
	if g["maxTokens"] != float64(50) {
		t.Errorf("greeting maxTokens = %v", g["maxTokens"])
	}
	request(t, reqs, "client_roots", mcp.MethodRootsList)

	all := map[string]any{"user_name": accept(`{"name":"Alice"}`), "greeting": samplingAnswer, "client_roots": rootsAnswer}
	res := c.tool(capsDefault, tool, map[string]any{"inputResponses": all, "requestState": state}).complete(t)
	if got := text(t, res, 0); !strings.Contains(got, "Hello, Alice!") || !strings.Contains(got, "Found 1 root(s)") {
		t.Errorf("text = %q", got)
	}

	partial := map[string]any{"user_name": accept(`{"name":"Alice"}`), "greeting": samplingAnswer}
	reqs, _ = c.tool(capsDefault, tool, map[string]any{"inputResponses": partial, "requestState": state}).inputRequired(t)
	if len(reqs) != 3 {
		t.Errorf("partial answers: re-asked %v", reqs)
	}
}

func TestMultiRoundThreeRounds(t *testing.T) {
	c := newTester(t)
	const tool = "test_input_required_result_multi_round"
	reqs, state1 := c.tool(capsDefault, tool, nil).inputRequired(t)
	if len(reqs) != 1 {
		t.Errorf("round 1 inputRequests = %v", reqs)
	}
	if p := request(t, reqs, "step1", mcp.MethodElicitationCreate); p["message"] != "Step 1: What is your name?" {
		t.Errorf("step1 message = %v", p["message"])
	}

	reqs, state2 := c.tool(capsDefault, tool, map[string]any{
		"inputResponses": map[string]any{"step1": accept(`{"name":"Alice"}`)}, "requestState": state1}).inputRequired(t)
	if state2 == state1 {
		t.Error("round 2 reused the round-1 requestState")
	}
	if len(reqs) != 1 {
		t.Errorf("round 2 inputRequests = %v", reqs)
	}
	p := request(t, reqs, "step2", mcp.MethodElicitationCreate)
	if p["message"] != "Step 2: What is your favorite color?" {
		t.Errorf("step2 message = %v", p["message"])
	}
	jsonEqual(t, p["requestedSchema"], string(schemaColor))

	res := c.tool(capsDefault, tool, map[string]any{
		"inputResponses": map[string]any{"step2": accept(`{"color":"blue"}`)}, "requestState": state2}).complete(t)
	if got := text(t, res, 0); got != "Alice's favorite color is blue (completed in round 2)." {
		t.Errorf("text = %q", got)
	}

	// The step-2 answer under the round-1 state is not accepted: step 1 again.
	reqs, _ = c.tool(capsDefault, tool, map[string]any{
		"inputResponses": map[string]any{"step2": accept(`{"color":"blue"}`)}, "requestState": state1}).inputRequired(t)
	request(t, reqs, "step1", mcp.MethodElicitationCreate)
}

func TestTamperedStateIsRejected(t *testing.T) {
	c := newTester(t)
	const tool = "test_input_required_result_tampered_state"
	reqs, state := c.tool(capsDefault, tool, nil).inputRequired(t)
	key := "confirm"
	request(t, reqs, key, mcp.MethodElicitationCreate)
	answer := map[string]any{key: accept(`{"ok":true}`)}

	flipped := []byte(state)
	mid := len(flipped) / 2
	if flipped[mid] == 'A' {
		flipped[mid] = 'B'
	} else {
		flipped[mid] = 'A'
	}
	_, otherState := c.tool(capsDefault, "test_input_required_result_request_state", nil).inputRequired(t)
	for name, bad := range map[string]string{
		"suffix (as the suite does)": state + "-TAMPERED",
		"one character changed":      string(flipped),
		"truncated":                  state[:len(state)-4],
		"state of another tool":      otherState,
		"not base64":                 "!!not-a-state!!",
	} {
		t.Run(name, func(t *testing.T) {
			r := c.tool(capsDefault, tool, map[string]any{"inputResponses": answer, "requestState": bad})
			if code := r.errorCode(t); code != jsonrpc.CodeInvalidParams {
				t.Errorf("code %d, want -32602", code)
			}
		})
	}

	res := c.tool(capsDefault, tool, map[string]any{"inputResponses": answer, "requestState": state}).complete(t)
	if got := text(t, res, 0); !strings.Contains(got, "state-ok") {
		t.Errorf("untampered: text = %q", got)
	}
}

func TestInputRequiredPrompt(t *testing.T) {
	c := newTester(t)
	get := func(extra map[string]any) reply {
		p := map[string]any{"name": "test_input_required_result_prompt"}
		for k, v := range extra {
			p[k] = v
		}
		return c.call(mcp.MethodPromptsGet, capsDefault, p)
	}
	reqs, state := get(nil).inputRequired(t)
	p := request(t, reqs, "user_context", mcp.MethodElicitationCreate)
	if p["message"] != "What context should the prompt use?" {
		t.Errorf("message = %v", p["message"])
	}
	jsonEqual(t, p["requestedSchema"], string(schemaContext))
	res := get(map[string]any{"inputResponses": map[string]any{"user_context": accept(`{"context":"billing"}`)}, "requestState": state}).complete(t)
	jsonEqual(t, res["messages"], `[{"role":"user","content":{"type":"text","text":"Use this context: billing"}}]`)
}

func TestListsNeverAskForInput(t *testing.T) {
	c := newTester(t)
	for _, m := range []string{mcp.MethodToolsList, mcp.MethodPromptsList, mcp.MethodResourcesList, mcp.MethodResourceTemplatesList} {
		c.call(m, capsDefault, nil).complete(t)
	}
}

// ---- prompts, resources, completion ----

func TestPrompts(t *testing.T) {
	c := newTester(t)
	get := func(name, args string) []any {
		t.Helper()
		p := map[string]any{"name": name}
		if args != "" {
			p["arguments"] = obj(args)
		}
		return c.call(mcp.MethodPromptsGet, capsNone, p).complete(t)["messages"].([]any)
	}
	jsonEqual(t, get("test_simple_prompt", ""), `[{"role":"user","content":{"type":"text","text":"This is a simple prompt for testing."}}]`)
	jsonEqual(t, get("test_prompt_with_arguments", `{"arg1":"testValue1","arg2":"testValue2"}`),
		`[{"role":"user","content":{"type":"text","text":"Prompt with arguments: arg1='testValue1', arg2='testValue2'"}}]`)
	jsonEqual(t, get("test_prompt_with_embedded_resource", `{"resourceUri":"test://example-resource"}`),
		`[{"role":"user","content":{"type":"resource","resource":{"uri":"test://example-resource","mimeType":"text/plain","text":"Embedded resource content for testing."}}},`+
			`{"role":"user","content":{"type":"text","text":"Please process the embedded resource above."}}]`)
	msgs := get("test_prompt_with_image", "")
	img := msgs[0].(map[string]any)["content"].(map[string]any)
	if img["type"] != "image" || img["mimeType"] != "image/png" {
		t.Errorf("image message = %v", img)
	}
	checkPNG(t, img["data"].(string))

	if code := c.call(mcp.MethodPromptsGet, capsNone, map[string]any{"name": "test_prompt_with_arguments", "arguments": obj(`{"arg1":"x"}`)}).errorCode(t); code != jsonrpc.CodeInvalidParams {
		t.Errorf("missing arg2: code %d", code)
	}
}

func TestResources(t *testing.T) {
	c := newTester(t)
	read := func(uri string) reply {
		return c.call(mcp.MethodResourcesRead, capsNone, map[string]any{"uri": uri})
	}
	res := read(uriStaticText).complete(t)
	jsonEqual(t, res["contents"], `[{"uri":"test://static-text","mimeType":"text/plain","text":"This is the content of the static text resource."}]`)
	if _, ok := res["ttlMs"].(float64); !ok || (res["cacheScope"] != "private" && res["cacheScope"] != "public") {
		t.Errorf("resources/read caching hints = %v / %v", res["ttlMs"], res["cacheScope"])
	}

	bin := read(uriStaticBinary).complete(t)["contents"].([]any)[0].(map[string]any)
	if bin["uri"] != uriStaticBinary || bin["mimeType"] != "image/png" {
		t.Errorf("binary = %v", bin)
	}
	checkPNG(t, bin["blob"].(string))

	tmpl := read("test://template/123/data").complete(t)["contents"].([]any)[0].(map[string]any)
	if tmpl["uri"] != "test://template/123/data" || tmpl["mimeType"] != "application/json" {
		t.Errorf("template contents = %v", tmpl)
	}
	jsonEqual(t, obj(tmpl["text"].(string)), `{"id":"123","templateTest":true,"data":"Data for ID: 123"}`)
	tq := read(`test://template/a"b/data`).complete(t)["contents"].([]any)[0].(map[string]any)
	if obj(tq["text"].(string))["id"] != `a"b` {
		t.Errorf("template id not escaped: %v", tq["text"])
	}

	const missing = "test://nonexistent-resource-for-conformance-testing"
	r := read(missing)
	if code := r.errorCode(t); code != jsonrpc.CodeInvalidParams || string(r.Error.Data) != `{"uri":"`+missing+`"}` {
		t.Errorf("not found: code %d data %s", code, r.Error.Data)
	}
}

func TestCompletion(t *testing.T) {
	c := newTester(t)
	complete := func(ref, arg, value string) []any {
		t.Helper()
		res := c.call(mcp.MethodCompletionComplete, capsNone, map[string]any{
			"ref": obj(ref), "argument": map[string]any{"name": arg, "value": value}}).complete(t)
		return res["completion"].(map[string]any)["values"].([]any)
	}
	jsonEqual(t, complete(`{"type":"ref/prompt","name":"test_prompt_with_arguments"}`, "arg1", "test"), `["test","testValue1","test-default"]`)
	jsonEqual(t, complete(`{"type":"ref/prompt","name":"test_prompt_with_arguments"}`, "arg2", "testV"), `["testValue2"]`)
	jsonEqual(t, complete(`{"type":"ref/resource","uri":"test://template/{id}/data"}`, "id", "1"), `["1","123"]`)
	jsonEqual(t, complete(`{"type":"ref/prompt","name":"test_simple_prompt"}`, "x", ""), `[]`)
}
