package stdio_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-elicit/elicit/elicit"
	"github.com/mcp-elicit/elicit/legacy"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpserver"
	"github.com/mcp-elicit/elicit/stdio"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// Who is the form the ask tool shows.
type Who struct {
	Name string `json:"name" title:"Your name" minLength:"1"`
}

// probe records what the block tool saw.
type probe struct {
	entered   chan string // the block tool's "id" argument, when it starts
	cancelled chan string // the same, when its context ends
	release   chan struct{}
}

func newProbe() *probe {
	return &probe{entered: make(chan string, 10), cancelled: make(chan string, 10), release: make(chan struct{})}
}

// note records id without ever blocking (the fuzz test calls block at will).
func note(ch chan string, id string) {
	select {
	case ch <- id:
	default:
	}
}

// newServer has whoami (the principal), ask (a form, then a greeting) and
// block (waits for release or its context).
func newServer(p *probe) *mcpserver.Server {
	s := mcpserver.New(mcp.Implementation{Name: "stdio-test", Version: "1"}, &mcpserver.Options{Logger: quiet})
	s.AddTool(&mcp.Tool{Name: "whoami"}, func(_ context.Context, req *mcpserver.Request) (mcpserver.Reply, error) {
		return mcpserver.Text("principal=" + req.Principal), nil
	})
	s.AddTool(&mcp.Tool{Name: "ask"}, func(_ context.Context, req *mcpserver.Request) (mcpserver.Reply, error) {
		switch a := elicit.Decode[Who](req.Elicitation("who")); a.Outcome {
		case elicit.Accepted:
			return mcpserver.Text("hello " + a.Value.Name + " principal=" + req.Principal), nil
		case elicit.Declined, elicit.Cancelled:
			return mcpserver.ToolError("no name"), nil
		}
		return mcpserver.Ask().ElicitFormSchema("who", "What is your name?", elicit.MustFormFor[Who]()), nil
	})
	s.AddTool(&mcp.Tool{Name: "block", InputSchema: json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"}}}`)},
		func(ctx context.Context, req *mcpserver.Request) (mcpserver.Reply, error) {
			var a struct {
				ID string `json:"id"`
			}
			_ = req.BindArguments(&a)
			note(p.entered, a.ID)
			select {
			case <-ctx.Done():
				note(p.cancelled, a.ID)
				return nil, ctx.Err()
			case <-p.release:
				return mcpserver.Text("released " + a.ID), nil
			}
		})
	return s
}

// conn is a Serve on pipes: the test writes the client's lines and reads
// the server's.
type conn struct {
	t    *testing.T
	in   *io.PipeWriter
	out  *bufio.Reader
	done chan error
}

func start(t *testing.T, s *mcpserver.Server, opts *stdio.Options) *conn {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := &conn{t: t, in: inW, out: bufio.NewReaderSize(outR, 1<<20), done: make(chan error, 1)}
	if opts == nil {
		opts = &stdio.Options{}
	}
	if opts.Logger == nil {
		opts.Logger = quiet
	}
	go func() {
		err := stdio.Serve(context.Background(), s, inR, outW, opts)
		outW.Close()
		c.done <- err
	}()
	t.Cleanup(func() {
		inW.Close()
		go io.Copy(io.Discard, outR) // let pending writes finish
		<-c.done
	})
	return c
}

func (c *conn) send(line string) {
	c.t.Helper()
	if _, err := io.WriteString(c.in, line+"\n"); err != nil {
		c.t.Fatalf("writing to the server: %v", err)
	}
}

// message is one line from the server, decoded.
type message struct {
	Raw    string
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result map[string]any  `json:"result"`
	Error  *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

// recv reads the next line; every line must be one JSON-RPC message.
func (c *conn) recv() *message {
	c.t.Helper()
	type res struct {
		s   string
		err error
	}
	ch := make(chan res, 1)
	go func() {
		s, err := c.out.ReadString('\n')
		ch <- res{s, err}
	}()
	var r res
	select {
	case r = <-ch:
	case <-time.After(30 * time.Second): // a hang guard, not a speed check
		c.t.Fatal("no message from the server")
	}
	if r.err != nil {
		c.t.Fatalf("reading from the server: %v (got %q)", r.err, r.s)
	}
	m := &message{Raw: strings.TrimSuffix(r.s, "\n")}
	if err := json.Unmarshal([]byte(m.Raw), m); err != nil {
		c.t.Fatalf("not one JSON-RPC message per line: %q", m.Raw)
	}
	return m
}

func (m *message) text(t *testing.T) string {
	t.Helper()
	content, _ := m.Result["content"].([]any)
	if len(content) == 0 {
		t.Fatalf("no content: %s", m.Raw)
	}
	return content[0].(map[string]any)["text"].(string)
}

func (m *message) wantError(t *testing.T, id string, code int) {
	t.Helper()
	if m.Error == nil || m.Error.Code != code || string(m.ID) != id {
		t.Fatalf("want error %d with id %s, got %s", code, id, m.Raw)
	}
}

const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}}}`

func call(id int, tool, args, extra string) string {
	if args == "" {
		args = "{}"
	}
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s%s,%s}}`, id, tool, args, extra, meta)
}

// TestModernFormFlow: discover, then an MRTR form round trip, served for
// the configured principal; the state is bound to it.
func TestModernFormFlow(t *testing.T) {
	s := newServer(newProbe())
	c := start(t, s, &stdio.Options{Principal: "alice", Legacy: &legacy.Options{Logger: quiet}})
	c.send(`{"jsonrpc":"2.0","id":"d","method":"server/discover","params":{` + meta + `}}`)
	d := c.recv()
	if v := fmt.Sprint(d.Result["supportedVersions"]); v != "[2026-07-28 2025-11-25 2025-06-18 2025-03-26]" {
		t.Fatalf("supportedVersions %s", v)
	}
	c.send(call(1, "ask", "", ""))
	ir := c.recv()
	if ir.Result["resultType"] != "input_required" {
		t.Fatalf("want input_required: %s", ir.Raw)
	}
	state, _ := json.Marshal(ir.Result["requestState"])
	c.send(call(2, "ask", "", `,"inputResponses":{"who":{"action":"accept","content":{"name":"Ada"}}},"requestState":`+string(state)))
	if got := c.recv().text(t); got != "hello Ada principal=alice" {
		t.Fatalf("result %q", got)
	}

	// The same state on a stream served for another user is refused.
	bob := start(t, s, &stdio.Options{Principal: "bob"})
	bob.send(call(3, "ask", "", `,"inputResponses":{"who":{"action":"accept","content":{"name":"Ada"}}},"requestState":`+string(state)))
	bob.recv().wantError(t, "3", -32602)
}

// TestBadInput: every kind of bad line gets the spec's error, and the
// stream stays in step: the next request is answered.
func TestBadInput(t *testing.T) {
	tests := []struct {
		name   string
		line   string
		legacy bool
		id     string
		code   int
	}{
		{"not JSON", `{"jsonrpc":"2.0",`, false, "null", -32700},
		{"not JSON at all", `hello`, false, "null", -32700},
		{"batch", `[` + call(1, "whoami", "", "") + `]`, false, "null", -32600},
		{"empty batch", `[]`, false, "null", -32600},
		{"no jsonrpc", `{"id":4,"method":"tools/list","params":{` + meta + `}}`, false, "4", -32600},
		{"request before initialize, 2025 path", `{"jsonrpc":"2.0","id":5,"method":"tools/list"}`, true, "5", -32602},
		{"request without _meta", `{"jsonrpc":"2.0","id":5,"method":"tools/list","params":{}}`, false, "5", -32602},
		{"server-to-client request from the client", `{"jsonrpc":"2.0","id":6,"method":"elicitation/create","params":{` + meta + `,"message":"hi","requestedSchema":{"type":"object","properties":{}}}}`, false, "6", -32601},
		{"sampling request from the client", `{"jsonrpc":"2.0","id":7,"method":"sampling/createMessage","params":{` + meta + `}}`, false, "7", -32601},
		{"a response from the client", `{"jsonrpc":"2.0","id":8,"result":{"action":"accept"}}`, false, "null", -32600},
		{"initialize on a modern-only server", `{"jsonrpc":"2.0","id":9,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`, false, "9", -32022},
		{"unsupported version", `{"jsonrpc":"2.0","id":10,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01","io.modelcontextprotocol/clientCapabilities":{}}}}`, false, "10", -32022},
		{"unknown method", `{"jsonrpc":"2.0","id":11,"method":"tools/frobnicate","params":{` + meta + `}}`, false, "11", -32601},
		{"ping in the modern era", `{"jsonrpc":"2.0","id":12,"method":"ping","params":{` + meta + `}}`, false, "12", -32601},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := &stdio.Options{Principal: "alice"}
			if tt.legacy {
				o.Legacy = &legacy.Options{Logger: quiet}
			}
			c := start(t, newServer(newProbe()), o)
			c.send(tt.line)
			c.recv().wantError(t, tt.id, tt.code)
			c.send(call(99, "whoami", "", ""))
			if got := c.recv().text(t); got != "principal=alice" {
				t.Fatalf("after the bad line: %q", got)
			}
		})
	}
}

// TestModernThenInitialize: once a modern request chose the era, a later
// initialize is refused with the versions served.
func TestModernThenInitialize(t *testing.T) {
	c := start(t, newServer(newProbe()), &stdio.Options{Legacy: &legacy.Options{Logger: quiet}})
	c.send(call(1, "whoami", "", ""))
	c.recv()
	c.send(`{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`)
	m := c.recv()
	m.wantError(t, "2", -32022)
	if !strings.Contains(string(m.Error.Data), `"supported":["2026-07-28"]`) {
		t.Fatalf("data %s", m.Error.Data)
	}
}

// TestHugeLine: a 100 MB line is skipped without being held, answered
// -32600, and the next request is served.
func TestHugeLine(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 100 MB through a pipe")
	}
	c := start(t, newServer(newProbe()), &stdio.Options{Principal: "alice"})
	chunk := strings.Repeat("x", 1<<20)
	if _, err := io.WriteString(c.in, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"`); err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		for range 100 {
			if _, err := io.WriteString(c.in, chunk); err != nil {
				errc <- err
				return
			}
		}
		_, err := io.WriteString(c.in, `"}}`+"\n")
		errc <- err
	}()
	c.recv().wantError(t, "null", -32600)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	c.send(call(2, "whoami", "", ""))
	if got := c.recv().text(t); got != "principal=alice" {
		t.Fatalf("after the long line: %q", got)
	}
}

// TestCancel: notifications/cancelled ends the named handler, whose
// answer is never sent; other requests go on.
func TestCancel(t *testing.T) {
	p := newProbe()
	c := start(t, newServer(p), nil)
	c.send(call(1, "block", `{"id":"one"}`, ""))
	<-p.entered
	c.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"reason":"user gave up"}}`)
	if got := <-p.cancelled; got != "one" {
		t.Fatalf("cancelled %q", got)
	}
	// Cancelling what is unknown or done is ignored.
	c.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"nope"}}`)
	c.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":42}`)
	c.send(call(2, "whoami", "", ""))
	m := c.recv()
	if string(m.ID) != "2" {
		t.Fatalf("the next message is not the answer to 2: %s", m.Raw)
	}
}

// TestConcurrent: requests run at once and are answered as they finish;
// a repeated id in flight, and one request too many, are refused.
func TestConcurrent(t *testing.T) {
	p := newProbe()
	c := start(t, newServer(p), &stdio.Options{MaxInFlight: 2})
	c.send(call(1, "block", `{"id":"a"}`, ""))
	c.send(call(2, "block", `{"id":"b"}`, ""))
	got := map[string]bool{<-p.entered: true, <-p.entered: true}
	if !got["a"] || !got["b"] {
		t.Fatalf("entered %v", got)
	}
	c.send(call(1, "whoami", "", ""))
	c.recv().wantError(t, "1", -32600)
	c.send(call(3, "whoami", "", ""))
	m := c.recv()
	m.wantError(t, "3", -32603)
	if !strings.Contains(string(m.Error.Data), `"retryable":true`) {
		t.Fatalf("not retryable: %s", m.Raw)
	}
	close(p.release)
	ids := map[string]bool{string(c.recv().ID): true, string(c.recv().ID): true}
	if !ids["1"] || !ids["2"] {
		t.Fatalf("answers %v", ids)
	}
}

// TestEOFCancels: closing the input mid-call cancels the handler, and
// Serve returns nil only after the handler has returned.
func TestEOFCancels(t *testing.T) {
	p := newProbe()
	c := start(t, newServer(p), nil)
	c.send(call(1, "block", `{"id":"x"}`, ""))
	<-p.entered
	c.in.Close()
	go io.Copy(io.Discard, c.out)
	if err := <-c.done; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	c.done <- nil // for the cleanup
	select {
	case id := <-p.cancelled:
		if id != "x" {
			t.Fatalf("cancelled %q", id)
		}
	default:
		t.Fatal("Serve returned before the handler saw the cancellation")
	}
}

// TestContextEnds: ending ctx (a signal) stops Serve with ctx.Err(),
// cancelling the handler first.
func TestContextEnds(t *testing.T) {
	p := newProbe()
	inR, inW := io.Pipe()
	defer inW.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- stdio.Serve(ctx, newServer(p), inR, io.Discard, &stdio.Options{Logger: quiet}) }()
	if _, err := io.WriteString(inW, call(1, "block", `{"id":"s"}`, "")+"\n"); err != nil {
		t.Fatal(err)
	}
	<-p.entered
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Serve: %v", err)
	}
	select {
	case <-p.cancelled:
	default:
		t.Fatal("Serve returned before the handler saw the cancellation")
	}
}

// TestOutputClosed: a client that closes the server's output ends it.
func TestOutputClosed(t *testing.T) {
	inR, inW := io.Pipe()
	defer inW.Close()
	outR, outW := io.Pipe()
	outR.Close()
	done := make(chan error, 1)
	go func() {
		done <- stdio.Serve(context.Background(), newServer(newProbe()), inR, outW, &stdio.Options{Logger: quiet})
	}()
	if _, err := io.WriteString(inW, call(1, "whoami", "", "")+"\n"); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Serve: %v", err)
	}
}

// sdkClient connects go-sdk's client to a Serve over pipes.
func sdkClient(t *testing.T, s *mcpserver.Server, principal, version string, opts *sdk.ClientOptions) *sdk.ClientSession {
	t.Helper()
	cToS, sIn := io.Pipe()
	sOut, sToC := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- stdio.Serve(context.Background(), s, cToS, sToC, &stdio.Options{Principal: principal, Logger: quiet, Legacy: &legacy.Options{Logger: quiet}})
		sToC.Close()
	}()
	client := sdk.NewClient(&sdk.Implementation{Name: "gosdk", Version: "v1.8.0"}, opts)
	cs, err := client.Connect(t.Context(), &sdk.IOTransport{Reader: sOut, Writer: sIn}, &sdk.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() {
		cs.Close()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	if got := cs.InitializeResult().ProtocolVersion; got != version {
		t.Fatalf("negotiated %s, want %s", got, version)
	}
	return cs
}

// TestBothEras: go-sdk's client, dual-era (probing with server/discover)
// and 2025-11-25 (initialize), completes the form flow on the same server;
// on the 2025 path the elicitation is a request on the stream.
func TestBothEras(t *testing.T) {
	s := newServer(newProbe())
	for _, version := range []string{"2026-07-28", "2025-11-25"} {
		t.Run(version, func(t *testing.T) {
			var mu sync.Mutex
			var asked []string
			cs := sdkClient(t, s, "alice", version, &sdk.ClientOptions{
				Capabilities: &sdk.ClientCapabilities{Elicitation: &sdk.ElicitationCapabilities{Form: &sdk.FormElicitationCapabilities{}}},
				ElicitationHandler: func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
					mu.Lock()
					asked = append(asked, req.Params.Message)
					mu.Unlock()
					return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
				},
			})
			res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "ask", Arguments: map[string]any{}})
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Content[0].(*sdk.TextContent).Text; got != "hello Ada principal=alice" {
				t.Fatalf("result %q", got)
			}
			if len(asked) != 1 || asked[0] != "What is your name?" {
				t.Fatalf("asked %q", asked)
			}
		})
	}
}

// TestLegacyCancel: on the 2025 path too, the client's
// notifications/cancelled ends the handler.
func TestLegacyCancel(t *testing.T) {
	p := newProbe()
	cs := sdkClient(t, newServer(p), "alice", "2025-11-25", nil)
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "block", Arguments: map[string]any{"id": "old"}})
		errc <- err
	}()
	<-p.entered
	cancel() // go-sdk sends notifications/cancelled
	if got := <-p.cancelled; got != "old" {
		t.Fatalf("cancelled %q", got)
	}
	if err := <-errc; err == nil {
		t.Fatal("the cancelled call succeeded")
	}
}

// TestAnonymousRefused: a handler that needs a user is not served
// without Options.Principal: Serve says so before reading anything.
func TestAnonymousRefused(t *testing.T) {
	s := mcpserver.New(mcp.Implementation{Name: "needs-user", Version: "1"}, &mcpserver.Options{Logger: quiet})
	s.AddToolWith(&mcp.Tool{Name: "mine"}, func(context.Context, *mcpserver.Request) (mcpserver.Reply, error) {
		return mcpserver.Text("ok"), nil
	}, &mcpserver.HandlerOptions{RequirePrincipal: true})
	err := stdio.Serve(context.Background(), s, strings.NewReader(""), io.Discard, &stdio.Options{Logger: quiet})
	if err == nil || !strings.Contains(err.Error(), "tool mine") || !strings.Contains(err.Error(), "Options.Principal") {
		t.Fatalf("Serve: %v", err)
	}
	if err := stdio.Serve(context.Background(), s, strings.NewReader(""), io.Discard, &stdio.Options{Principal: "alice", Logger: quiet}); err != nil {
		t.Fatalf("with a principal: %v", err)
	}
}

// TestLegacyBadInput: on the 2025 path, a line that is not a JSON-RPC
// message is answered (or, a notification, ignored) here and never
// reaches the session, which would end on it; a response to a request
// the server never sent is dropped. The next request is served.
func TestLegacyBadInput(t *testing.T) {
	tests := []struct {
		name string
		line string
		id   string // "" when nothing is answered
		code int
	}{
		{"not JSON", `{"jsonrpc":`, "null", -32700},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]`, "null", -32600},
		{"an object that is no message", `{"":"nst"}`, "null", -32600},
		{"no method, no result", `{"jsonrpc":"2.0","id":3}`, "null", -32600},
		{"wrong version", `{"jsonrpc":"1.0","id":4,"method":"tools/list"}`, "4", -32600},
		{"a result that is not an object", `{"jsonrpc":"2.0","id":5,"result":null}`, "null", -32600},
		{"result and error", `{"jsonrpc":"2.0","id":6,"result":{},"error":{"code":1,"message":"x"}}`, "null", -32600},
		{"an error without a code", `{"jsonrpc":"2.0","id":7,"error":{"message":"x"}}`, "null", -32600},
		{"a malformed notification", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":7}`, "", 0},
		{"a response to nothing", `{"jsonrpc":"2.0","id":8,"result":{"action":"accept"}}`, "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := start(t, newServer(newProbe()), &stdio.Options{Principal: "alice", Legacy: &legacy.Options{Logger: quiet}})
			c.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`)
			if m := c.recv(); m.Result["protocolVersion"] != "2025-11-25" {
				t.Fatalf("initialize: %s", m.Raw)
			}
			c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			c.send(tt.line)
			if tt.id != "" {
				c.recv().wantError(t, tt.id, tt.code)
			}
			c.send(`{"jsonrpc":"2.0","id":99,"method":"tools/list"}`)
			if m := c.recv(); string(m.ID) != "99" || m.Result["tools"] == nil {
				t.Fatalf("after the bad line: %s", m.Raw)
			}
		})
	}
}

// TestLegacyEOF: on the 2025 path, closing the input ends Serve with nil
// both while a handler runs (it is cancelled first) and while the bridge
// waits for the client's answer to elicitation/create.
func TestLegacyEOF(t *testing.T) {
	initialize := func(c *conn) {
		c.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{"form":{}}},"clientInfo":{"name":"x","version":"1"}}}`)
		if m := c.recv(); m.Result["protocolVersion"] != "2025-11-25" {
			c.t.Fatalf("initialize: %s", m.Raw)
		}
		c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	}
	end := func(c *conn) {
		c.in.Close()
		go io.Copy(io.Discard, c.out)
		if err := <-c.done; err != nil {
			t.Fatalf("Serve: %v", err)
		}
		c.done <- nil // for the cleanup
	}
	t.Run("handler running", func(t *testing.T) {
		p := newProbe()
		c := start(t, newServer(p), &stdio.Options{Principal: "alice", Legacy: &legacy.Options{Logger: quiet}})
		initialize(c)
		c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"block","arguments":{"id":"old"}}}`)
		<-p.entered
		end(c)
		select {
		case id := <-p.cancelled:
			if id != "old" {
				t.Fatalf("cancelled %q", id)
			}
		default:
			t.Fatal("Serve returned before the handler saw the cancellation")
		}
	})
	t.Run("waiting for the client's answer", func(t *testing.T) {
		c := start(t, newServer(newProbe()), &stdio.Options{Principal: "alice", Legacy: &legacy.Options{Logger: quiet}})
		initialize(c)
		c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ask","arguments":{}}}`)
		if m := c.recv(); m.Method != "elicitation/create" {
			t.Fatalf("want elicitation/create: %s", m.Raw)
		}
		end(c)
	})
}
