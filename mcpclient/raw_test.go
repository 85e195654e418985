package mcpclient_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpclient"
)

// SendRaw sends exactly what it is given: its own capabilities, the
// answers as raw JSON, a requestState the server never sent; and returns
// the raw result or the typed error.
func TestSendRaw(t *testing.T) {
	hs, rec := rawFake(t)
	c := mcpclient.New(hs.URL, &mcpclient.Options{Token: "alice"})
	state := `tampered "state"`
	caps := mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{URL: &mcp.Empty{}}}
	raw, err := c.SendRaw(context.Background(), &mcpclient.RawRequest{
		Method: mcp.MethodToolsCall, Name: "t", Arguments: json.RawMessage(`{"a":1}`),
		InputResponses: map[string]json.RawMessage{"k_x": json.RawMessage(`{"action":"accept","content":{"n":"x"}}`)},
		RequestState:   &state, Capabilities: &caps,
	})
	if err != nil || string(raw) != `{"resultType":"input_required","requestState":"next"}` {
		t.Fatalf("SendRaw = %s, %v", raw, err)
	}
	got := rec.all()[0]
	p := got.Msg.Params
	var st string
	if p.RequestState == nil || json.Unmarshal(*p.RequestState, &st) != nil || st != state {
		t.Errorf("requestState sent as %v", p.RequestState)
	}
	if string(p.InputResponses["k_x"]) != `{"action":"accept","content":{"n":"x"}}` || string(p.Arguments) != `{"a":1}` {
		t.Errorf("answers %s, arguments %s", p.InputResponses["k_x"], p.Arguments)
	}
	if string(p.Meta[mcp.MetaClientCapabilities]) != `{"elicitation":{"url":{}}}` {
		t.Errorf("capabilities %s", p.Meta[mcp.MetaClientCapabilities])
	}
	if got.Header.Get("Mcp-Name") != "t" || got.Header.Get("Mcp-Method") != "tools/call" || got.Header.Get("Authorization") != "Bearer alice" {
		t.Errorf("headers %v", got.Header)
	}
}

// Without overrides SendRaw sends the client's own capabilities ({}), no
// state and no answers; its errors are CallTool's.
func TestSendRawDefaults(t *testing.T) {
	hs, rec := rawFake(t)
	c := mcpclient.New(hs.URL, &mcpclient.Options{Token: "alice"})
	if _, err := c.SendRaw(context.Background(), &mcpclient.RawRequest{Method: mcp.MethodToolsCall, Name: "t"}); err != nil {
		t.Fatal(err)
	}
	p := rec.all()[0].Msg.Params
	if p.RequestState != nil || p.InputResponses != nil || string(p.Meta[mcp.MetaClientCapabilities]) != `{}` {
		t.Errorf("plain request: state %v, answers %v, capabilities %s", p.RequestState, p.InputResponses, p.Meta[mcp.MetaClientCapabilities])
	}

	var rpc *mcpclient.RPCError
	if _, err := c.SendRaw(context.Background(), &mcpclient.RawRequest{Method: mcp.MethodToolsCall, Name: "fails"}); !errors.As(err, &rpc) || rpc.Code != -32602 || rpc.HTTPStatus != 400 {
		t.Errorf("error = %v", err)
	}
	if _, err := c.SendRaw(context.Background(), &mcpclient.RawRequest{}); err == nil {
		t.Error("a request without a method was sent")
	}
}

// rawFake answers the tool "fails" with -32602 and any other with a
// state-only input_required.
func rawFake(t *testing.T) (*httptest.Server, *recorder) {
	return fake(t, func(w http.ResponseWriter, s seen) {
		if s.Msg.Params.Name == "fails" {
			replyError(w, s, http.StatusBadRequest, `{"code":-32602,"message":"invalid or expired requestState"}`)
			return
		}
		reply(w, s, `{"resultType":"input_required","requestState":"next"}`)
	})
}

// A gateway's request: the URI of resources/read, a cursor, completion's
// ref and argument, _meta members of its own (the client's win), the
// x-mcp-header parameters it learnt elsewhere, and every notification and
// keep-alive of the SSE answer, in order.
func TestSendRawForwarding(t *testing.T) {
	hs, rec := fake(t, func(w http.ResponseWriter, s seen) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte(": keep-alive\n\n" +
			`data: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":7,"progress":1}}` + "\n\n" +
			`data: {"jsonrpc":"2.0","id":` + string(s.Msg.ID) + `,"result":{"resultType":"complete"}}` + "\n\n"))
	})
	c := mcpclient.New(hs.URL, nil)
	var got []string
	raw, err := c.SendRaw(context.Background(), &mcpclient.RawRequest{
		Method: mcp.MethodResourcesRead, URI: "file:///a b",
		Meta: map[string]json.RawMessage{"progressToken": json.RawMessage(`7`), "x.example/id": json.RawMessage(`"c1"`),
			mcp.MetaProtocolVersion: json.RawMessage(`"1999-01-01"`)},
		OnMessage: func(method string, params json.RawMessage) { got = append(got, method+" "+string(params)) },
	})
	if err != nil || string(raw) != `{"resultType":"complete"}` {
		t.Fatalf("SendRaw = %s, %v", raw, err)
	}
	want := []string{" ", `notifications/progress {"progressToken":7,"progress":1}`}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("messages %q, want %q", got, want)
	}
	s := rec.all()[0]
	p := s.Msg.Params
	if p.URI != "file:///a b" || s.Header.Get("Mcp-Name") != mcp.EncodeHeaderValue("file:///a b") {
		t.Errorf("uri %q, Mcp-Name %q", p.URI, s.Header.Get("Mcp-Name"))
	}
	if string(p.Meta["progressToken"]) != "7" || string(p.Meta["x.example/id"]) != `"c1"` || string(p.Meta[mcp.MetaProtocolVersion]) != `"2026-07-28"` {
		t.Errorf("_meta %v", p.Meta)
	}

	// Mcp-Param-* from the given parameters; one that cannot be mirrored
	// is an error, nothing is sent.
	params := []mcp.HeaderParam{{Header: "Region", Path: []string{"region"}, Type: "string"}}
	n := len(rec.all())
	if _, err := c.SendRaw(context.Background(), &mcpclient.RawRequest{Method: mcp.MethodToolsCall, Name: "t",
		Arguments: json.RawMessage(`{"region":"eu west"}`), HeaderParams: params}); err != nil {
		t.Fatal(err)
	}
	if h := rec.all()[n].Header.Get("Mcp-Param-Region"); h != "eu west" {
		t.Errorf("Mcp-Param-Region = %q", h)
	}
	if _, err := c.SendRaw(context.Background(), &mcpclient.RawRequest{Method: mcp.MethodToolsCall, Name: "t",
		Arguments: json.RawMessage(`{"region":{"a":1}}`), HeaderParams: params}); err == nil || len(rec.all()) != n+1 {
		t.Errorf("an argument that cannot be mirrored: err %v, %d requests", err, len(rec.all())-n)
	}

	// Completion's members and a cursor go out as given.
	if _, err := c.SendRaw(context.Background(), &mcpclient.RawRequest{Method: mcp.MethodCompletionComplete,
		Ref: json.RawMessage(`{"type":"ref/prompt","name":"p"}`), Argument: json.RawMessage(`{"name":"a","value":"b"}`)}); err != nil {
		t.Fatal(err)
	}
	body := string(rec.all()[n+1].Body)
	for _, want := range []string{`"ref":{"type":"ref/prompt","name":"p"}`, `"argument":{"name":"a","value":"b"}`} {
		if !strings.Contains(body, want) {
			t.Errorf("completion body %s lacks %s", body, want)
		}
	}
	if _, err := c.SendRaw(context.Background(), &mcpclient.RawRequest{Method: mcp.MethodToolsList, Cursor: "p2"}); err != nil {
		t.Fatal(err)
	}
	if body := string(rec.all()[n+2].Body); !strings.Contains(body, `"cursor":"p2"`) {
		t.Errorf("list body %s", body)
	}
}
