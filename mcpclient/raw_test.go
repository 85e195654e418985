package mcpclient_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
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
