package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-elicit/elicit/elicit"
	"github.com/mcp-elicit/elicit/internal/transport"
	"github.com/mcp-elicit/elicit/internal/wiretest"
	"github.com/mcp-elicit/elicit/jsonrpc"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpserver"
)

// TestTranscripts replays testdata/transcripts: each a JSON-RPC request
// served as a transport would serve it (transport.Parse, then Serve) for
// the principal of the "principal" section (alice when absent), and the
// response and the notifications sent on its stream, compared byte for
// byte after the normalisation of package wiretest (go test -update
// rewrites them). A "setup" section is served first, for alice, and its
// requestState replaces «setup» in the request. The HTTP statuses and
// headers of these answers are streamhttp's transcripts.
func TestTranscripts(t *testing.T) {
	wiretest.Run(t, func(t *testing.T, tr *wiretest.Transcript) {
		s := transport.Of(transcriptServer(t))
		state := ""
		if setup, ok := tr.Section("setup"); ok {
			resp, _ := serve(t, s, "alice", setup)
			if state = wiretest.StateOf(resp); state == "" {
				t.Fatalf("setup gave no requestState: %s", resp)
			}
		}
		principal := "alice"
		if p, ok := tr.Section("principal"); ok {
			principal = strings.TrimSpace(string(p))
		}
		resp, notes := serve(t, s, principal, wiretest.Substitute(tr.Input(t, "request"), state))
		tr.Check(t, "response", resp)
		tr.Check(t, "notifications", notes)
	})
}

// serve answers one request; a request that Parse refuses is answered
// with its error, as a transport does.
func serve(t *testing.T, s transport.Server, principal string, body []byte) (resp, notes []byte) {
	t.Helper()
	req, jerr := jsonrpc.DecodeRequest(bytes.TrimSpace(body))
	if jerr != nil {
		t.Fatalf("decode %s: %v", body, jerr)
	}
	var mu sync.Mutex
	var buf bytes.Buffer
	notify := func(n *jsonrpc.Notification) error {
		b, err := n.MarshalJSON()
		mu.Lock()
		defer mu.Unlock()
		buf.Write(append(b, '\n'))
		return err
	}
	in, jerr := transport.Parse(req)
	r := &jsonrpc.Response{ID: req.ID, Error: jerr}
	if jerr == nil {
		r = s.Serve(context.Background(), in, principal, notify)
	}
	out, err := r.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return append(out, '\n'), buf.Bytes()
}

// transcriptServer serves what the transcripts call:
//   - greet asks a form (who), then greets, and says "No name" on a
//     decline or cancel;
//   - book asks a form and a URL-mode page at once;
//   - wait asks nothing and only carries state ("come back later");
//   - count (typed, with an output schema) sends structured content;
//   - progress and chatty send progress and log notifications;
//   - fails, boom and flaky fail: an error, a panic, an outage;
//   - a prompt "summary" with a required argument, a resource template
//     report://{year}, and completions.
func transcriptServer(t *testing.T) *mcpserver.Server {
	t.Helper()
	sealer := wiretest.Sealer(t)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	s := mcpserver.New(mcp.Implementation{Name: "transcripts", Version: "1.0.0"}, &mcpserver.Options{Sealer: sealer, Logger: quiet,
		Instructions: "Call greet to be greeted.", ReadCache: mcpserver.CacheHint{TTL: time.Minute, Scope: mcp.CacheScopePublic}})
	wiretest.AddGreet(s)
	mcpserver.AddTool(s, &mcp.Tool{Name: "book", Description: "Books a table."},
		func(ctx context.Context, req *mcpserver.Request, in struct {
			Day string `json:"day" enum:"mon|tue"`
		}) (mcpserver.Reply, any, error) {
			return mcpserver.Ask().ElicitFormSchema("who", "Who is it for?", elicit.MustFormFor[wiretest.Who]()).
				ElicitURL("pay", "Pay the deposit on our page.", "https://127.0.0.1/pay/abc"), nil, nil
		})
	mcpserver.AddTool(s, &mcp.Tool{Name: "wait", Description: "Asks the client to come back."},
		func(ctx context.Context, req *mcpserver.Request, _ struct{}) (mcpserver.Reply, any, error) {
			if req.State != nil {
				return mcpserver.Text("ready after " + string(req.State)), nil, nil
			}
			return mcpserver.Ask().WithState([]byte("one round")), nil, nil
		})
	mcpserver.AddTool(s, &mcp.Tool{Name: "count", Description: "Counts letters."},
		func(ctx context.Context, req *mcpserver.Request, in struct {
			Word string `json:"word" minLength:"1"`
		}) (mcpserver.Reply, struct {
			Letters int `json:"letters"`
		}, error) {
			out := struct {
				Letters int `json:"letters"`
			}{len([]rune(in.Word))}
			return nil, out, nil
		})
	s.AddTool(&mcp.Tool{Name: "progress", Description: "Reports progress."}, func(ctx context.Context, r *mcpserver.Request) (mcpserver.Reply, error) {
		if err := r.Progress(1, 2, "half"); err != nil {
			return nil, err
		}
		return mcpserver.Text("done"), nil
	})
	s.AddTool(&mcp.Tool{Name: "chatty", Description: "Logs."}, func(ctx context.Context, r *mcpserver.Request) (mcpserver.Reply, error) {
		for _, level := range []string{"debug", "info", "error"} {
			if err := r.Log(level, "a "+level+" line"); err != nil {
				return nil, err
			}
		}
		return mcpserver.Text("logged"), nil
	})
	s.AddTool(&mcp.Tool{Name: "fails", Description: "Fails."}, func(ctx context.Context, r *mcpserver.Request) (mcpserver.Reply, error) {
		return nil, errors.New("db password is hunter2")
	})
	s.AddTool(&mcp.Tool{Name: "boom", Description: "Panics."}, func(ctx context.Context, r *mcpserver.Request) (mcpserver.Reply, error) {
		panic("secret detail")
	})
	s.AddTool(&mcp.Tool{Name: "flaky", Description: "Its database is down."}, func(ctx context.Context, r *mcpserver.Request) (mcpserver.Reply, error) {
		return nil, errors.Join(mcpserver.ErrUnavailable, errors.New("connection refused"))
	})
	s.AddPrompt(&mcp.Prompt{Name: "summary", Description: "Summarises a topic.", Arguments: []mcp.PromptArgument{{Name: "topic", Required: true}}},
		func(ctx context.Context, r *mcpserver.Request) (mcpserver.Reply, error) {
			return mcpserver.PromptResult(&mcp.GetPromptResult{Messages: []mcp.PromptMessage{{Role: "user", Content: mcp.TextContent("Summarise it.")}}}), nil
		})
	s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "report://{year}", Name: "report"}, func(ctx context.Context, r *mcpserver.Request) (mcpserver.Reply, error) {
		if r.Elicitation("ok").Outcome != elicit.Accepted {
			if r.TemplateVars["year"] == "secret" {
				return mcpserver.Ask().ElicitForm("ok", "Show the secret report?", json.RawMessage(`{"type":"object","properties":{}}`)), nil
			}
		}
		return mcpserver.ResourceResult(&mcp.ReadResourceResult{Contents: []mcp.ResourceContents{{URI: r.Name, Text: "report " + r.TemplateVars["year"]}}}), nil
	})
	s.SetCompletionHandler(func(ctx context.Context, ref json.RawMessage, arg, value string) ([]string, error) {
		return []string{value + "1", value + "2"}, nil
	})
	return s
}
