package mcpserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"testing"

	"github.com/mcp-elicit/elicit/auth"
	"github.com/mcp-elicit/elicit/internal/delegate"
	"github.com/mcp-elicit/elicit/internal/transport"
	"github.com/mcp-elicit/elicit/jsonrpc"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpclient"
	"github.com/mcp-elicit/elicit/mcpserver"
	"github.com/mcp-elicit/elicit/streamhttp"
)

// fakeCore serves one tool, echo, whose Mcp-Param-Who header mirrors
// its "who" argument.
type fakeCore struct{ seen chan *transport.Incoming }

func (fakeCore) Known(m string) bool {
	return m == mcp.MethodDiscover || m == mcp.MethodToolsCall || m == mcp.MethodToolsList
}

func (fakeCore) ToolHeaderParams(name string) ([]mcp.HeaderParam, bool) {
	return []mcp.HeaderParam{{Header: "Who", Path: []string{"who"}, Type: "string"}}, name == "echo"
}

func (fakeCore) Capabilities() mcp.ServerCapabilities {
	return mcp.ServerCapabilities{Tools: &mcp.ListChangedCapability{}}
}

func (f fakeCore) Serve(_ context.Context, c *transport.Incoming, principal string, _ transport.Notifier) *jsonrpc.Response {
	f.seen <- c
	return &jsonrpc.Response{ID: c.ID, Result: json.RawMessage(`{"resultType":"complete","content":[{"type":"text","text":"` + principal + `"}]}`)}
}

// A Server with a delegate answers through it, behind the same
// transport checks: the version, the method known, Mcp-Param-* headers.
func TestDelegate(t *testing.T) {
	s := mcpserver.New(mcp.Implementation{Name: "d", Version: "1"}, nil)
	core := fakeCore{seen: make(chan *transport.Incoming, 4)}
	delegate.Install(s, core)
	if v := transport.Of(s); !v.Known(mcp.MethodToolsCall) || v.Known(mcp.MethodPromptsList) || s.Capabilities().Tools == nil {
		t.Fatal("Known and Capabilities are not the delegate's")
	}
	ts := httptest.NewServer(streamhttp.NewHandler(s, &streamhttp.Options{Auth: auth.DemoBearer{}}))
	defer ts.Close()
	c := mcpclient.New(ts.URL, &mcpclient.Options{Token: "alice"})
	if _, err := c.SendRaw(context.Background(), &mcpclient.RawRequest{Method: mcp.MethodToolsList}); err != nil {
		t.Fatal(err)
	}
	if got := <-core.seen; got.Method != mcp.MethodToolsList {
		t.Errorf("the delegate got %+v", got)
	}
	state := "s"
	raw, err := c.SendRaw(context.Background(), &mcpclient.RawRequest{Method: mcp.MethodToolsCall, Name: "echo",
		Arguments: json.RawMessage(`{"who":"x"}`), RequestState: &state, HeaderParams: []mcp.HeaderParam{{Header: "Who", Path: []string{"who"}, Type: "string"}}})
	if err != nil || string(raw) != `{"resultType":"complete","content":[{"type":"text","text":"alice"}]}` {
		t.Fatalf("tools/call = %s, %v", raw, err)
	}
	if got := <-core.seen; got.Name != "echo" || string(got.Arguments) != `{"who":"x"}` || got.RequestState == nil || *got.RequestState != "s" {
		t.Errorf("the delegate got %+v", got)
	}
	// The transport still checks Mcp-Param-Who against the delegate's
	// parameters: without the header, -32020 and the delegate sees nothing.
	_, err = c.SendRaw(context.Background(), &mcpclient.RawRequest{Method: mcp.MethodToolsCall, Name: "echo",
		Arguments: json.RawMessage(`{"who":"x"}`), HeaderParams: []mcp.HeaderParam{}})
	var rpc *mcpclient.RPCError
	if !asRPC(err, &rpc) || rpc.Code != mcp.CodeHeaderMismatch {
		t.Errorf("missing Mcp-Param-Who: %v", err)
	}
	if _, err := c.SendRaw(context.Background(), &mcpclient.RawRequest{Method: mcp.MethodPromptsList}); !asRPC(err, &rpc) || rpc.Code != jsonrpc.CodeMethodNotFound {
		t.Errorf("prompts/list: %v", err)
	}
	select {
	case got := <-core.seen:
		t.Errorf("the delegate served a refused request: %+v", got)
	default:
	}
}

func TestDelegateNeedsAnEmptyServer(t *testing.T) {
	s := mcpserver.New(mcp.Implementation{Name: "d", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "t"}, func(context.Context, *mcpserver.Request) (mcpserver.Reply, error) { return mcpserver.Text(""), nil })
	defer func() {
		if recover() == nil {
			t.Error("Install on a Server with a tool did not panic")
		}
	}()
	delegate.Install(s, fakeCore{})
}

func asRPC(err error, target **mcpclient.RPCError) bool { return errors.As(err, target) }
