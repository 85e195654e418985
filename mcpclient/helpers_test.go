package mcpclient_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/mcp-elicit/elicit/elicit"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpclient"
	"github.com/mcp-elicit/elicit/mcpserver"
	"github.com/mcp-elicit/elicit/streamhttp"
)

// seen is one request as the server received it.
type seen struct {
	Header http.Header
	Body   []byte
	// RespType is the response's Content-Type (set once answered).
	RespType string
	Msg      struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Name           string                     `json:"name"`
			URI            string                     `json:"uri"`
			Arguments      json.RawMessage            `json:"arguments"`
			InputResponses map[string]json.RawMessage `json:"inputResponses"`
			RequestState   *json.RawMessage           `json:"requestState"`
			Meta           map[string]json.RawMessage `json:"_meta"`
		} `json:"params"`
	}
}

// recorder keeps every request, then hands it to next.
type recorder struct {
	mu   sync.Mutex
	reqs []seen
	next http.Handler
}

func (rec *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s := seen{Header: r.Header.Clone(), Body: body}
	_ = json.Unmarshal(body, &s.Msg)
	rec.mu.Lock()
	i := len(rec.reqs)
	rec.reqs = append(rec.reqs, s)
	rec.mu.Unlock()
	r.Body = io.NopCloser(bytes.NewReader(body))
	rec.next.ServeHTTP(&typeRecorder{ResponseWriter: w, rec: rec, i: i}, r)
}

// typeRecorder notes the response's Content-Type when the status goes out,
// before the client can see the answer.
type typeRecorder struct {
	http.ResponseWriter
	rec   *recorder
	i     int
	wrote bool
}

func (t *typeRecorder) note() {
	if !t.wrote {
		t.wrote = true
		t.rec.mu.Lock()
		t.rec.reqs[t.i].RespType = t.Header().Get("Content-Type")
		t.rec.mu.Unlock()
	}
}

func (t *typeRecorder) WriteHeader(code int) {
	t.note()
	t.ResponseWriter.WriteHeader(code)
}

func (t *typeRecorder) Write(b []byte) (int, error) {
	t.note()
	return t.ResponseWriter.Write(b)
}

func (t *typeRecorder) Flush() {
	t.note()
	if f, ok := t.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (rec *recorder) all() []seen {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]seen(nil), rec.reqs...)
}

// byMethod returns the recorded requests of one method.
func (rec *recorder) byMethod(m string) []seen {
	var out []seen
	for _, s := range rec.all() {
		if s.Msg.Method == m {
			out = append(out, s)
		}
	}
	return out
}

const formSchema = `{"type":"object","properties":{"name":{"type":"string","minLength":1}},"required":["name"]}`

// regionalSchema annotates three arguments with x-mcp-header.
const regionalSchema = `{"type":"object","properties":{
	"region":{"type":"string","x-mcp-header":"Region"},
	"priority":{"type":"integer","x-mcp-header":"Priority"},
	"verbose":{"type":"boolean","x-mcp-header":"Verbose"},
	"query":{"type":"string"}}}`

// newServer serves testServer over streamhttp on loopback, behind a
// recorder.
func newServer(t *testing.T, opts *mcpserver.Options) (*httptest.Server, *recorder) {
	t.Helper()
	rec := &recorder{next: streamhttp.NewHandler(testServer(opts), &streamhttp.Options{Logger: quiet()})}
	hs := httptest.NewServer(rec)
	t.Cleanup(hs.Close)
	return hs, rec
}

// testServer is our own mcpserver with the tools, prompts and resources
// the tests call.
func testServer(opts *mcpserver.Options) *mcpserver.Server {
	s := mcpserver.New(mcp.Implementation{Name: "test-server", Version: "1.2.3"}, opts)
	s.AddTool(&mcp.Tool{Name: "echo", Description: "echo",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`)},
		func(ctx context.Context, r *mcpserver.Request) (mcpserver.Reply, error) {
			var a struct {
				Text string `json:"text"`
				N    any    `json:"n"` // TestArgumentsMustBeAnObject sends it
			}
			if err := r.BindArguments(&a); err != nil {
				return nil, err
			}
			return mcpserver.Text(a.Text), nil
		})
	s.AddTool(&mcp.Tool{Name: "regional", Description: "headers", InputSchema: json.RawMessage(regionalSchema)},
		func(ctx context.Context, r *mcpserver.Request) (mcpserver.Reply, error) {
			return mcpserver.Text("regional ok"), nil
		})
	s.AddTool(&mcp.Tool{Name: "ask_form", Description: "form"},
		func(ctx context.Context, r *mcpserver.Request) (mcpserver.Reply, error) {
			switch a := r.Elicitation("who"); a.Outcome {
			case elicit.Accepted:
				return mcpserver.Text(fmt.Sprintf("hello %s (round %d)", a.Content["name"], r.Round)), nil
			case elicit.Declined:
				return mcpserver.ToolError("declined"), nil
			case elicit.Cancelled:
				return mcpserver.ToolError("cancelled"), nil
			}
			return mcpserver.Ask().ElicitForm("who", "What is your name?", json.RawMessage(formSchema)), nil
		})
	s.AddTool(&mcp.Tool{Name: "ask_url", Description: "url"},
		func(ctx context.Context, r *mcpserver.Request) (mcpserver.Reply, error) {
			if a := r.Elicitation("page"); a.Outcome == elicit.Accepted {
				return mcpserver.Text("connected"), nil
			}
			return mcpserver.Ask().ElicitURL("page", "Open the page", "https://srv.example/ui/connect?flow=1"), nil
		})
	s.AddTool(&mcp.Tool{Name: "slow", Description: "progress"},
		func(ctx context.Context, r *mcpserver.Request) (mcpserver.Reply, error) {
			for i := 1; i <= 2; i++ {
				if err := r.Progress(float64(i), 2, "step"); err != nil {
					return nil, err
				}
			}
			return mcpserver.Text("done"), nil
		})
	s.AddPrompt(&mcp.Prompt{Name: "café menu", Description: "non-ASCII name"},
		func(ctx context.Context, r *mcpserver.Request) (mcpserver.Reply, error) {
			return mcpserver.PromptResult(&mcp.GetPromptResult{Messages: []mcp.PromptMessage{{Role: "user", Content: mcp.TextContent("menu of " + r.Name)}}}), nil
		})
	s.AddResource(&mcp.Resource{URI: "=?base64?looks-encoded?=", Name: "sentinel"},
		func(ctx context.Context, r *mcpserver.Request) (mcpserver.Reply, error) {
			return mcpserver.ResourceResult(&mcp.ReadResourceResult{Contents: []mcp.ResourceContents{{URI: r.Name, Text: "sentinel-like"}}}), nil
		})
	s.AddTool(&mcp.Tool{Name: "ask_model", Description: "sampling and roots"},
		func(ctx context.Context, r *mcpserver.Request) (mcpserver.Reply, error) {
			sm, ok1 := r.Sampling("summary")
			roots, ok2 := r.Roots("where")
			if ok1 && ok2 {
				return mcpserver.Text(fmt.Sprintf("model %s, %d roots", sm.Model, len(roots.Roots))), nil
			}
			return mcpserver.Ask().
				Sample("summary", &mcp.CreateMessageRequestParams{MaxTokens: 20,
					Messages: []mcp.SamplingMessage{{Role: "user", Content: mcp.TextContent("Summarise.")}}}).
				ListRoots("where"), nil
		})
	askName := func(ctx context.Context, r *mcpserver.Request) (string, *mcpserver.InputRequired) {
		if a := r.Elicitation("who"); a.Outcome == elicit.Accepted {
			return fmt.Sprint(a.Content["name"]), nil
		}
		return "", mcpserver.Ask().ElicitForm("who", "Name for the "+r.Method+"?", json.RawMessage(formSchema))
	}
	s.AddPrompt(&mcp.Prompt{Name: "ask_prompt", Description: "asks first"},
		func(ctx context.Context, r *mcpserver.Request) (mcpserver.Reply, error) {
			name, ask := askName(ctx, r)
			if ask != nil {
				return ask, nil
			}
			return mcpserver.PromptResult(&mcp.GetPromptResult{Messages: []mcp.PromptMessage{{Role: "user", Content: mcp.TextContent("prompt for " + name)}}}), nil
		})
	s.AddResource(&mcp.Resource{URI: "test://ask", Name: "asks first"},
		func(ctx context.Context, r *mcpserver.Request) (mcpserver.Reply, error) {
			name, ask := askName(ctx, r)
			if ask != nil {
				return ask, nil
			}
			return mcpserver.ResourceResult(&mcp.ReadResourceResult{Contents: []mcp.ResourceContents{{URI: r.Name, Text: "resource for " + name}}}), nil
		})
	return s
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// fake serves handle behind a recorder: handle gets the recorded request.
func fake(t *testing.T, handle func(w http.ResponseWriter, s seen)) (*httptest.Server, *recorder) {
	t.Helper()
	rec := fakeRecorder(handle)
	hs := httptest.NewServer(rec)
	t.Cleanup(hs.Close)
	return hs, rec
}

// fakeRecorder is fake's handler, for a test to serve.
func fakeRecorder(handle func(w http.ResponseWriter, s seen)) *recorder {
	rec := &recorder{}
	rec.next = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		all := rec.all()
		handle(w, all[len(all)-1])
	})
	return rec
}

// reply writes one JSON-RPC result (raw JSON) for the request s.
func reply(w http.ResponseWriter, s seen, result string) {
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, s.Msg.ID, result)
}

// replyError writes a JSON-RPC error with an HTTP status.
func replyError(w http.ResponseWriter, s seen, status int, errObj string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":%s}`, s.Msg.ID, errObj)
}

// formHandlers answer every form with name "Ada" and accept every URL.
func formHandlers() *mcpclient.Handlers {
	return &mcpclient.Handlers{
		ElicitForm: func(ctx context.Context, who mcpclient.Asker, key string, p *mcp.ElicitRequestParams) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: mcp.ActionAccept, Content: map[string]any{"name": "Ada"}}, nil
		},
		ElicitURL: func(ctx context.Context, who mcpclient.Asker, key string, p *mcp.ElicitRequestParams) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: mcp.ActionAccept}, nil
		},
	}
}

func firstText(r *mcp.CallToolResult) string {
	if r == nil || len(r.Content) == 0 {
		return ""
	}
	return r.Content[0].Text
}
