package mcpclient_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-elicit/elicit/elicit"
	"github.com/mcp-elicit/elicit/legacy"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpclient"
	"github.com/mcp-elicit/elicit/mcpserver"
	"github.com/mcp-elicit/elicit/stdio"
)

// childEnv selects what the test binary does when started as a server
// by these tests (TestMain).
const childEnv = "MCPCLIENT_TEST_CHILD"

func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		os.Exit(child(mode))
	}
	os.Exit(m.Run())
}

// Name is the form the ask tools show.
type Name struct {
	Name string `json:"name" title:"Your name" minLength:"1"`
}

// child runs one kind of server on the process's standard streams:
//
//	elicit      our stdio server, both eras (stdio.ServeProcess)
//	slow        the same, reading the probe only once the client has
//	            given up waiting and sent initialize after it
//	sdk2025     go-sdk's server serving 2025-era versions only (it answers
//	            the probe with -32022 naming them)
//	old         the same behind a filter that answers server/discover
//	            with -32601, as servers older than 2026-07-28 do
//	silent      the same, but the probe is never answered
//	dual        the same, but the probe is answered with a DiscoverResult
//	            only once initialize comes, just before it is served: a
//	            dual-era server slow to start, which then serves the
//	            process as 2025-11-25
//	stubborn    answers the probe, then ignores the end of its input and
//	            SIGTERM (it logs both), until killed
//	termable    ignores the end of its input, exits on SIGTERM
func child(mode string) int {
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	switch mode {
	case "elicit", "slow":
		s := mcpserver.New(mcp.Implementation{Name: "child-elicit", Version: "1"}, &mcpserver.Options{Logger: logger})
		s.AddTool(&mcp.Tool{Name: "ask"}, askHandler)
		s.AddTool(&mcp.Tool{Name: "work"}, func(ctx context.Context, req *mcpserver.Request) (mcpserver.Reply, error) {
			for i := 1; i <= 3; i++ {
				_ = req.Progress(float64(i), 3, fmt.Sprintf("step %d", i))
			}
			return mcpserver.Text("worked"), nil
		})
		s.AddTool(&mcp.Tool{Name: "block"}, func(ctx context.Context, req *mcpserver.Request) (mcpserver.Reply, error) {
			fmt.Fprintln(os.Stderr, "EVENT block entered")
			<-ctx.Done()
			fmt.Fprintln(os.Stderr, "EVENT block cancelled")
			return nil, ctx.Err()
		})
		s.AddTool(&mcp.Tool{Name: "die"}, func(context.Context, *mcpserver.Request) (mcpserver.Reply, error) {
			os.Exit(7)
			return nil, nil
		})
		o := &stdio.Options{Principal: "local", Logger: logger, Legacy: &legacy.Options{Logger: logger}}
		var err error
		if mode == "slow" {
			err = stdio.Serve(ctx, s, holdFirst(os.Stdin), os.Stdout, o)
		} else {
			err = stdio.ServeProcess(ctx, s, o)
		}
		if err != nil && ctx.Err() == nil {
			return 1
		}
		return 0
	case "sdk2025", "old", "silent", "dual":
		srv := sdk.NewServer(&sdk.Implementation{Name: "child-" + mode, Version: "1"}, &sdk.ServerOptions{
			Logger: logger, SupportedProtocolVersions: []string{"2025-11-25", "2025-06-18"}})
		sdk.AddTool(srv, &sdk.Tool{Name: "ask"}, func(ctx context.Context, req *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
			res, err := req.Session.Elicit(ctx, &sdk.ElicitParams{Message: "What is your name?",
				RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}, "required": []string{"name"}}})
			if err != nil {
				return nil, nil, err
			}
			if res.Action != "accept" {
				return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "no name"}}}, nil, nil
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: fmt.Sprintf("hello %v", res.Content["name"])}}}, nil, nil
		})
		var in io.ReadCloser = os.Stdin
		out := &lockedWriter{w: os.Stdout}
		if mode != "sdk2025" {
			in = filterDiscover(os.Stdin, out, mode)
		}
		if err := srv.Run(ctx, &sdk.IOTransport{Reader: in, Writer: out}); err != nil && ctx.Err() == nil {
			return 1
		}
		return 0
	case "stubborn", "termable":
		sigs := make(chan os.Signal, 4)
		signal.Notify(sigs, syscall.SIGTERM)
		br := bufio.NewReader(os.Stdin)
		line, _ := br.ReadString('\n')
		var req struct {
			ID json.RawMessage `json:"id"`
		}
		_ = json.Unmarshal([]byte(line), &req)
		fmt.Fprintf(os.Stdout, `{"jsonrpc":"2.0","id":%s,"result":{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{},"ttlMs":0,"cacheScope":"private"}}`+"\n", req.ID)
		_, _ = io.Copy(io.Discard, br)
		fmt.Fprintln(os.Stderr, "EVENT stdin closed")
		for range sigs {
			fmt.Fprintln(os.Stderr, "EVENT got SIGTERM")
			if mode == "termable" {
				return 0
			}
		}
		return 0
	}
	return 2
}

func askHandler(_ context.Context, req *mcpserver.Request) (mcpserver.Reply, error) {
	switch a := elicit.Decode[Name](req.Elicitation("who")); a.Outcome {
	case elicit.Accepted:
		return mcpserver.Text("hello " + a.Value.Name), nil
	case elicit.Declined, elicit.Cancelled:
		return mcpserver.ToolError("no name"), nil
	}
	return mcpserver.Ask().ElicitFormSchema("who", "What is your name?", elicit.MustFormFor[Name]()), nil
}

// lockedWriter serialises writes of whole lines from two writers.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriter) Close() error { return nil }

// holdFirst passes in on, holding its first line until the second has
// come: a server that answers the probe only after the client's timeout.
func holdFirst(in io.Reader) io.Reader {
	pr, pw := io.Pipe()
	go func() {
		br := bufio.NewReader(in)
		first, err1 := br.ReadString('\n')
		second, err2 := br.ReadString('\n')
		if _, err := io.WriteString(pw, first+second); err != nil || err1 != nil || err2 != nil {
			pw.Close()
			return
		}
		_, err := io.Copy(pw, br)
		pw.CloseWithError(err)
	}()
	return pr
}

// filterDiscover passes stdin on, except server/discover requests, which
// it answers with -32601 (mode old), drops (silent) or answers with a
// DiscoverResult when the initialize request comes (dual).
func filterDiscover(in io.Reader, out io.Writer, mode string) io.ReadCloser {
	pr, pw := io.Pipe()
	go func() {
		br := bufio.NewReader(in)
		var held json.RawMessage // the probe's id (dual)
		for {
			line, err := br.ReadString('\n')
			if line != "" {
				var m struct {
					ID     json.RawMessage `json:"id"`
					Method string          `json:"method"`
				}
				_ = json.Unmarshal([]byte(line), &m)
				switch {
				case m.Method == "server/discover" && mode == "old":
					fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"Method not found"}}`+"\n", m.ID)
					continue
				case m.Method == "server/discover" && mode == "dual":
					held = m.ID
					continue
				case m.Method == "server/discover":
					continue
				case m.Method == "initialize" && held != nil:
					fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":{"resultType":"complete","supportedVersions":["2026-07-28","2025-11-25"],"capabilities":{"tools":{}},"ttlMs":0,"cacheScope":"private"}}`+"\n", held)
				}
				if _, werr := io.WriteString(pw, line); werr != nil {
					return
				}
			}
			if err != nil {
				pw.Close()
				return
			}
		}
	}()
	return pr
}

// events collects a child's standard error and tells when a line
// containing a word has come.
type events struct {
	mu    sync.Mutex
	lines []string
	cond  *sync.Cond
	done  bool
}

func newEvents(r io.Reader) *events {
	e := &events{}
	e.cond = sync.NewCond(&e.mu)
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			e.mu.Lock()
			e.lines = append(e.lines, sc.Text())
			e.cond.Broadcast()
			e.mu.Unlock()
		}
		e.mu.Lock()
		e.done = true
		e.cond.Broadcast()
		e.mu.Unlock()
	}()
	return e
}

// wait blocks until a line contains word; false if the stream ended first.
func (e *events) wait(word string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	for i := 0; ; {
		for ; i < len(e.lines); i++ {
			if strings.Contains(e.lines[i], word) {
				return true
			}
		}
		if e.done {
			return false
		}
		e.cond.Wait()
	}
}

// index is the position of the first line containing word, or -1.
func (e *events) index(word string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	for i, l := range e.lines {
		if strings.Contains(l, word) {
			return i
		}
	}
	return -1
}

func (e *events) String() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return strings.Join(e.lines, "\n")
}

// launch starts the test binary as a server of mode.
func launch(t *testing.T, mode string, opts *mcpclient.Options) (*mcpclient.Client, *events) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts server processes")
	}
	cmd := exec.Command(os.Args[0], "-mode", mode)
	cmd.Env = append(os.Environ(), childEnv+"="+mode)
	// A pipe of the process's own: it ends when the process does.
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = pw
	ev := newEvents(pr)
	if opts == nil {
		opts = &mcpclient.Options{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	c, err := mcpclient.NewCommand(t.Context(), cmd, opts)
	pw.Close()
	if err != nil {
		t.Fatalf("NewCommand: %v\nstderr:\n%s", err, ev)
	}
	t.Cleanup(func() { c.Close() })
	return c, ev
}

func recordingForm(asked *[]string) *mcpclient.Handlers {
	var mu sync.Mutex
	return &mcpclient.Handlers{ElicitForm: func(_ context.Context, who mcpclient.Asker, _ string, p *mcp.ElicitRequestParams) (*mcp.ElicitResult, error) {
		mu.Lock()
		*asked = append(*asked, who.Command+" | "+p.Message)
		mu.Unlock()
		return &mcp.ElicitResult{Action: mcp.ActionAccept, Content: map[string]any{"name": "Ada"}}, nil
	}}
}

// TestCommandEras: the same host code calls a form tool on a 2026-07-28
// server (after the discover probe) and on three kinds of older server
// (the fallback to initialize: -32022 naming 2025 versions only, -32601,
// and no answer); on the old ones the question comes as a request and is
// answered through the same Handlers.
func TestCommandEras(t *testing.T) {
	tests := []struct {
		mode, version, server string
		probe                 time.Duration
	}{
		{"elicit", "2026-07-28", "child-elicit", 0},
		// The probe's answer comes after initialize was sent: it still
		// wins, and the refused initialize is not an error.
		{"slow", "2026-07-28", "child-elicit", time.Millisecond},
		{"sdk2025", "2025-11-25", "child-sdk2025", 0},
		{"old", "2025-11-25", "child-old", 0},
		{"silent", "2025-11-25", "child-silent", 100 * time.Millisecond},
		// The probe's answer says 2026-07-28 but comes after initialize
		// was sent, and the server accepts initialize: the process is a
		// 2025-11-25 session (the server now sends its questions as
		// requests), so initialize wins.
		{"dual", "2025-11-25", "child-dual", 100 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			var asked []string
			c, ev := launch(t, tt.mode, &mcpclient.Options{Handlers: recordingForm(&asked), ProbeTimeout: tt.probe})
			if v := c.Version(); v != tt.version {
				t.Fatalf("version %s, want %s", v, tt.version)
			}
			d, err := c.Discover(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if d.Capabilities.Tools == nil || c.Server() == nil || c.Server().Name != tt.server {
				t.Fatalf("discover %+v, server %+v", d, c.Server())
			}
			tools, err := c.ListTools(t.Context())
			if err != nil || len(tools) == 0 {
				t.Fatalf("tools/list: %v %v", tools, err)
			}
			res, err := c.CallTool(t.Context(), "ask", nil)
			if err != nil {
				t.Fatalf("call: %v\nstderr:\n%s", err, ev)
			}
			if got := res.Content[0].Text; got != "hello Ada" {
				t.Fatalf("result %q", got)
			}
			if len(asked) != 1 || !strings.HasSuffix(asked[0], " | What is your name?") || !strings.Contains(asked[0], "-mode "+tt.mode) {
				t.Fatalf("asked %q", asked)
			}
			if err := c.Close(); err != nil {
				t.Fatalf("close: %v", err)
			}
			if _, err := c.ListTools(t.Context()); !errors.Is(err, mcpclient.ErrClosed) {
				t.Fatalf("after Close: %v", err)
			}
		})
	}
}

// TestCommandProgress: progress notifications reach OnProgress during the
// call, on stdio too.
func TestCommandProgress(t *testing.T) {
	var got []string
	c, _ := launch(t, "elicit", &mcpclient.Options{OnProgress: func(p mcpclient.Progress) {
		got = append(got, fmt.Sprintf("%s %s %v/%v %s", p.Method, p.Target, p.Progress, p.Total, p.Message))
	}})
	if _, err := c.CallTool(t.Context(), "work", nil); err != nil {
		t.Fatal(err)
	}
	want := "tools/call work 1/3 step 1|tools/call work 2/3 step 2|tools/call work 3/3 step 3"
	if strings.Join(got, "|") != want {
		t.Fatalf("progress %q", got)
	}
}

// TestCommandCancel: a call whose context ends sends notifications/cancelled,
// and the server's handler is cancelled.
func TestCommandCancel(t *testing.T) {
	c, ev := launch(t, "elicit", nil)
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		_, err := c.CallTool(ctx, "block", nil)
		errc <- err
	}()
	if !ev.wait("EVENT block entered") {
		t.Fatalf("stderr:\n%s", ev)
	}
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("call: %v", err)
	}
	if !ev.wait("EVENT block cancelled") {
		t.Fatalf("the server's handler was not cancelled:\n%s", ev)
	}
	// The connection is still good.
	if _, err := c.ListTools(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// TestCommandExits: a server that dies mid-call fails the call with a
// ConnectionError naming the exit status.
func TestCommandExits(t *testing.T) {
	c, _ := launch(t, "elicit", nil)
	_, err := c.CallTool(t.Context(), "die", nil)
	var ce *mcpclient.ConnectionError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "exit status 7") {
		t.Fatalf("want a ConnectionError with the exit status, got %v", err)
	}
}

// TestCommandClose: Close closes the server's input, then sends SIGTERM,
// then kills, each only when the step before did not end the process.
func TestCommandClose(t *testing.T) {
	tests := []struct {
		mode    string
		wantErr string
		events  []string // in this order
	}{
		{"elicit", "", []string{"input ended"}},
		{"termable", "SIGTERM", []string{"EVENT stdin closed", "EVENT got SIGTERM"}},
		{"stubborn", "killed", []string{"EVENT stdin closed", "EVENT got SIGTERM"}},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			// The grace gives the process time to log each step: the
			// order of its events is what is checked.
			c, ev := launch(t, tt.mode, &mcpclient.Options{TerminateGrace: 2 * time.Second})
			err := c.Close()
			if (tt.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("Close: %v, want %q", err, tt.wantErr)
			}
			last := -1
			for _, e := range tt.events {
				ev.wait(e)
				i := ev.index(e)
				if i <= last {
					t.Fatalf("event %q missing or out of order:\n%s", e, ev)
				}
				last = i
			}
		})
	}
}
