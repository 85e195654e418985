package main

// Accept before the page is finished, with three 2026-07-28 clients:
// go-sdk v1.8.0, the TypeScript SDK v2 (npm @modelcontextprotocol/client
// 2.4.0, installed at test time) and our mcpclient. Each answers the
// URL-mode elicitation with accept at once; the server holds the retry
// (--url-wait); the user finishes the page while it is held; the retry is
// answered "connected". One retry, one question, for every client.

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-elicit/elicit/examples/billing"
	"github.com/mcp-elicit/elicit/examples/reports"
	"github.com/mcp-elicit/elicit/internal/npmtest"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpclient"
)

// waitEnv is an elicitd that holds early accepts, behind a front door
// that counts connect_billing calls and tells when a held response begins
// (the server starts streaming it: progress or keep-alive comments), so
// the page is finished while the retry is held, whatever the client.
type waitEnv struct {
	*env
	mcpURL string
	tool   string // the tool whose calls are counted
	calls  atomic.Int32
	held   chan struct{}
}

func newWaitEnv(t *testing.T) *waitEnv { return newWaitEnvFor(t, billing.ToolName) }

// newWaitEnvFor counts and watches the calls of tool.
func newWaitEnvFor(t *testing.T, tool string) *waitEnv {
	t.Helper()
	w := &waitEnv{env: newEnvWith(t, func(c *config) { c.urlWait = 50 * time.Second }), tool: tool, held: make(chan struct{}, 1)}
	front := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Mcp-Method") == mcp.MethodToolsCall && r.Header.Get("Mcp-Name") == tool {
			w.calls.Add(1)
			rw = &heldWriter{ResponseWriter: rw, held: w.held}
		}
		w.app.ServeHTTP(rw, r)
	}))
	t.Cleanup(front.Close)
	w.mcpURL = front.URL + "/mcp"
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server log:\n%s", w.logs.String())
		}
	})
	return w
}

// heldWriter signals once when the response turns into an event stream
// before the handler has returned: the server is holding it.
type heldWriter struct {
	http.ResponseWriter
	once sync.Once
	held chan<- struct{}
}

func (h *heldWriter) WriteHeader(code int) {
	if strings.HasPrefix(h.Header().Get("Content-Type"), "text/event-stream") {
		h.once.Do(func() {
			select {
			case h.held <- struct{}{}:
			default:
			}
		})
	}
	h.ResponseWriter.WriteHeader(code)
}

func (h *heldWriter) Flush() { h.ResponseWriter.(http.Flusher).Flush() }

func (h *heldWriter) Unwrap() http.ResponseWriter { return h.ResponseWriter }

// finishWhileHeld waits for the link and for the server to hold the
// retry, then finishes the page; done reports the client's end first if
// it comes before the hold (a server that does not wait).
func (w *waitEnv) finishWhileHeld(t *testing.T, links <-chan string, done <-chan struct{}) {
	t.Helper()
	var link string
	select {
	case link = <-links:
	case <-done:
		t.Fatal("the client ended before it was asked")
	}
	select {
	case <-w.held:
	case <-done:
		t.Fatal("the client ended before the server held its retry: the server does not wait")
	}
	w.connectBrowserStep(t, link)
}

func (w *waitEnv) wantOneRetry(t *testing.T, text string) {
	t.Helper()
	if text != billing.TextConnected {
		t.Fatalf("result %q, want %q", text, billing.TextConnected)
	}
	if n := w.calls.Load(); n != 2 {
		t.Fatalf("%d %s requests, want 2: the first call and one retry", n, w.tool)
	}
}

func TestURLWaitOneRetryGoSDK(t *testing.T) {
	w := newWaitEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	links := make(chan string, 10)
	// As gosdkConnect, but through the front door.
	client := sdk.NewClient(&sdk.Implementation{Name: "gosdk-urlwait", Version: "v1.8.0"}, &sdk.ClientOptions{
		Capabilities: &sdk.ClientCapabilities{Elicitation: &sdk.ElicitationCapabilities{Form: &sdk.FormElicitationCapabilities{}, URL: &sdk.URLElicitationCapabilities{}}},
		ElicitationHandler: func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			links <- req.Params.URL
			return &sdk.ElicitResult{Action: "accept"}, nil // before the page
		},
	})
	tr := w.gosdkTransport("alice", http.DefaultTransport)
	tr.Endpoint = w.mcpURL
	cs, err := client.Connect(ctx, tr, &sdk.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	done := make(chan struct{})
	var res *sdk.CallToolResult
	go func() {
		defer close(done)
		res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: billing.ToolName, Arguments: map[string]any{}})
	}()
	w.finishWhileHeld(t, links, done)
	<-done
	if err != nil {
		t.Fatalf("tools/call: %v", err)
	}
	w.wantOneRetry(t, toolText(t, res))
	if len(links) != 0 {
		t.Fatal("the elicitation was asked again")
	}
}

func TestURLWaitOneRetryOurClient(t *testing.T) {
	w := newWaitEnv(t)
	links := make(chan string, 10)
	c := mcpclient.New(w.mcpURL, &mcpclient.Options{Token: "alice", Handlers: &mcpclient.Handlers{
		ElicitURL: func(_ context.Context, _ mcpclient.Asker, _ string, p *mcp.ElicitRequestParams) (*mcp.ElicitResult, error) {
			links <- p.URL
			return &mcp.ElicitResult{Action: mcp.ActionAccept}, nil
		},
	}})
	done := make(chan struct{})
	var res *mcp.CallToolResult
	var err error
	go func() {
		defer close(done)
		res, err = c.CallTool(t.Context(), billing.ToolName, nil)
	}()
	w.finishWhileHeld(t, links, done)
	<-done
	if err != nil {
		t.Fatalf("tools/call: %v", err)
	}
	w.wantOneRetry(t, res.Content[0].Text)
	if len(links) != 0 {
		t.Fatal("the elicitation was asked again")
	}
}

func TestURLWaitOneRetryTypeScriptSDK(t *testing.T) {
	script := npmtest.Script(t, filepath.Join("testdata", "tsclient_urlwait.mjs"), "@modelcontextprotocol/client@2.4.0")
	w := newWaitEnv(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", script, w.mcpURL, "alice", billing.ToolName)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	links := make(chan string, 10)
	done := make(chan struct{})
	var result, failure string
	go func() {
		defer close(done)
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			kind, rest, _ := strings.Cut(sc.Text(), " ")
			switch kind {
			case "ELICIT":
				links <- rest
			case "RESULT":
				result = rest
			case "ERROR":
				failure = rest
			}
		}
	}()
	w.finishWhileHeld(t, links, done)
	<-done
	if err := cmd.Wait(); err != nil || failure != "" {
		t.Fatalf("node: %v %s\nstderr: %s", err, failure, stderr.String())
	}
	var res struct {
		Content []struct{ Text string } `json:"content"`
	}
	if err := json.Unmarshal([]byte(result), &res); err != nil || len(res.Content) == 0 {
		t.Fatalf("result %q: %v", result, err)
	}
	w.wantOneRetry(t, res.Content[0].Text)
	if len(links) != 0 {
		t.Fatal("the elicitation was asked again")
	}
}

// send_report's reporting-account step waits as connect_billing's does:
// accept, then the page finished while the retry is held, completes the
// step in one retry (then the confirmation is asked and answered: three
// send_report requests in all), with go-sdk and with our client.
func TestURLWaitSendReportOneRetry(t *testing.T) {
	for _, client := range []string{"go-sdk", "mcpclient"} {
		t.Run(client, func(t *testing.T) {
			w := newWaitEnvFor(t, reports.ToolSend)
			draft := (&reportsEnv{env: w.env}).prepare(t, "alice", "2026-Q2", "sales")
			args := map[string]any{"draft_id": draft, "recipient": "bob@example.com"}
			links := make(chan string, 20)
			done := make(chan struct{})
			var text string
			var isError bool
			var err error
			if client == "go-sdk" {
				ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
				defer cancel()
				c := sdk.NewClient(&sdk.Implementation{Name: "gosdk-urlwait", Version: "v1.8.0"}, &sdk.ClientOptions{
					Capabilities: &sdk.ClientCapabilities{Elicitation: &sdk.ElicitationCapabilities{Form: &sdk.FormElicitationCapabilities{}, URL: &sdk.URLElicitationCapabilities{}}},
					ElicitationHandler: func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
						if req.Params.Mode == "url" {
							links <- req.Params.URL
							return &sdk.ElicitResult{Action: "accept"}, nil // before the page
						}
						return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"send": true}}, nil
					},
				})
				tr := w.gosdkTransport("alice", http.DefaultTransport)
				tr.Endpoint = w.mcpURL
				cs, cerr := c.Connect(ctx, tr, &sdk.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
				if cerr != nil {
					t.Fatal(cerr)
				}
				defer cs.Close()
				go func() {
					defer close(done)
					var res *sdk.CallToolResult
					if res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: reports.ToolSend, Arguments: args}); err == nil {
						text, isError = toolText(t, res), res.IsError
					}
				}()
			} else {
				c := mcpclient.New(w.mcpURL, &mcpclient.Options{Token: "alice", Handlers: &mcpclient.Handlers{
					ElicitURL: func(_ context.Context, _ mcpclient.Asker, _ string, p *mcp.ElicitRequestParams) (*mcp.ElicitResult, error) {
						links <- p.URL
						return &mcp.ElicitResult{Action: mcp.ActionAccept}, nil
					},
					ElicitForm: func(context.Context, mcpclient.Asker, string, *mcp.ElicitRequestParams) (*mcp.ElicitResult, error) {
						return &mcp.ElicitResult{Action: mcp.ActionAccept, Content: map[string]any{"send": true}}, nil
					},
				}})
				go func() {
					defer close(done)
					var res *mcp.CallToolResult
					if res, err = c.CallTool(t.Context(), reports.ToolSend, args); err == nil {
						text, isError = res.Content[0].Text, res.IsError
					}
				}()
			}
			w.finishWhileHeld(t, links, done)
			<-done
			if err != nil || isError || !strings.HasPrefix(text, "Sent draft") {
				t.Fatalf("send_report: %v %v %q", err, isError, text)
			}
			if n := w.calls.Load(); n != 3 {
				t.Fatalf("%d send_report requests, want 3: the first call, one held retry, the confirmation", n)
			}
			if len(links) != 0 {
				t.Fatal("the reporting-account page was asked again")
			}
		})
	}
}
