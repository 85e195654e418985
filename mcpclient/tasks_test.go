package mcpclient_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcp-elicit/elicit/elicit"
	"github.com/mcp-elicit/elicit/internal/mcptest"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpclient"
	"github.com/mcp-elicit/elicit/mcpserver"
	"github.com/mcp-elicit/elicit/streamhttp"
)

// taskTools serves "export" (works a minute, then asks for a recipient)
// and "stuck" (works until cancelled, and says so on cancelled).
func taskTools(cancelled chan<- struct{}) *mcpserver.Server {
	s := mcpserver.New(mcp.Implementation{Name: "tasks", Version: "1"}, nil)
	s.EnableTasks(&mcpserver.TaskOptions{PollInterval: time.Second})
	opts := &mcpserver.HandlerOptions{Tasks: mcpserver.TaskOptional}
	s.AddToolWith(&mcp.Tool{Name: "export"}, func(ctx context.Context, r *mcpserver.Request) (mcpserver.Reply, error) {
		if r.TaskAllowed() {
			return mcpserver.RunAsTask(), nil
		}
		switch a := r.Elicitation("to"); a.Outcome {
		case elicit.Accepted:
			return mcpserver.Text("sent to " + a.Content["email"].(string) + " in a task: " + map[bool]string{true: "yes", false: "no"}[r.TaskID != ""]), nil
		case elicit.Declined, elicit.Cancelled:
			return mcpserver.ToolError("not sent"), nil
		}
		time.Sleep(time.Minute) // the long part
		return mcpserver.Ask().ElicitForm("to", "Who gets the export?", json.RawMessage(`{"type":"object","properties":{"email":{"type":"string"}},"required":["email"]}`)), nil
	}, opts)
	s.AddToolWith(&mcp.Tool{Name: "stuck"}, func(ctx context.Context, r *mcpserver.Request) (mcpserver.Reply, error) {
		if r.TaskAllowed() {
			return mcpserver.RunAsTask(), nil
		}
		<-ctx.Done()
		close(cancelled)
		return nil, ctx.Err()
	}, opts)
	s.AddToolWith(&mcp.Tool{Name: "broken"}, func(ctx context.Context, r *mcpserver.Request) (mcpserver.Reply, error) {
		if r.TaskAllowed() {
			return mcpserver.RunAsTask(), nil
		}
		return nil, errors.New("disk on fire")
	}, opts)
	return s
}

// A failed task is an *RPCError with the task's error, and nothing of the
// server's real reason.
func TestCallToolFailedTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hc := mcptest.PipeServer(t, streamhttp.NewHandler(taskTools(nil), nil))
		c := mcpclient.New("http://127.0.0.1/mcp", &mcpclient.Options{HTTPClient: hc, Extensions: withTasks})
		_, err := c.CallTool(context.Background(), "broken", nil)
		var rpc *mcpclient.RPCError
		if !errors.As(err, &rpc) || rpc.Code != -32603 || rpc.Message != "Internal error" {
			t.Fatalf("err = %v", err)
		}
	})
}

func recipient(asked *int) *mcpclient.Handlers {
	return &mcpclient.Handlers{ElicitForm: func(ctx context.Context, who mcpclient.Asker, key string, p *mcp.ElicitRequestParams) (*mcp.ElicitResult, error) {
		*asked++
		return &mcp.ElicitResult{Action: mcp.ActionAccept, Content: map[string]any{"email": "ada@example.com"}}, nil
	}}
}

var withTasks = map[string]json.RawMessage{mcp.ExtensionTasks: nil}

// TestCallToolFollowsTask: a client that declared the tasks extension
// follows the task to its result, answering its question through the
// same Handlers as MRTR; one without it gets the result in the call.
func TestCallToolFollowsTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hc := mcptest.PipeServer(t, streamhttp.NewHandler(taskTools(nil), nil))
		asked := 0
		c := mcpclient.New("http://127.0.0.1/mcp", &mcpclient.Options{HTTPClient: hc, Handlers: recipient(&asked), Extensions: withTasks})
		start := time.Now()
		r, err := c.CallTool(context.Background(), "export", nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.Content[0].Text; got != "sent to ada@example.com in a task: yes" || asked != 1 || r.ResultType != mcp.ResultTypeComplete {
			t.Fatalf("result %q, asked %d times", got, asked)
		}
		if waited := time.Since(start); waited < time.Minute || waited > time.Minute+3*time.Second {
			t.Fatalf("followed for %v; the work takes a minute and the poll interval is a second", waited)
		}
		plain := mcpclient.New("http://127.0.0.1/mcp", &mcpclient.Options{HTTPClient: hc, Handlers: recipient(&asked)})
		r, err = plain.CallTool(context.Background(), "export", nil)
		if err != nil || r.Content[0].Text != "sent to ada@example.com in a task: no" {
			t.Fatalf("without the extension: %+v, %v", r, err)
		}
	})
}

// TestCallToolCancelsTask: when the caller's context ends, the task is
// cancelled on the server and its running handler stops.
func TestCallToolCancelsTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cancelled := make(chan struct{})
		hc := mcptest.PipeServer(t, streamhttp.NewHandler(taskTools(cancelled), nil))
		c := mcpclient.New("http://127.0.0.1/mcp", &mcpclient.Options{HTTPClient: hc, Extensions: withTasks})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := c.CallTool(ctx, "stuck", nil); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v", err)
		}
		select {
		case <-cancelled:
		case <-time.After(time.Minute):
			t.Fatal("the task's handler was not cancelled")
		}
	})
}

// A task result to a client that did not declare the extension is a
// protocol error, not a result.
func TestTaskResultWithoutExtension(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := fakeRecorder(func(w http.ResponseWriter, s seen) {
			if s.Msg.Method == "tools/list" {
				reply(w, s, `{"resultType":"complete","tools":[],"ttlMs":0,"cacheScope":"private"}`)
				return
			}
			reply(w, s, `{"resultType":"task","taskId":"t1","status":"working","createdAt":"2026-07-28T00:00:00Z","lastUpdatedAt":"2026-07-28T00:00:00Z","ttlMs":null}`)
		})
		c := mcpclient.New("http://127.0.0.1/mcp", &mcpclient.Options{HTTPClient: mcptest.PipeServer(t, rec)})
		var pe *mcpclient.ProtocolError
		if _, err := c.CallTool(context.Background(), "t", nil); !errors.As(err, &pe) {
			t.Fatalf("err = %v", err)
		}
	})
}

// TestTypedToolAsTask: a typed tool (mcpserver.AddToolWith) runs as a
// task as a raw handler does, RunAsTask() as its Reply, and the task's
// result carries its output as structuredContent (docs/tasks.md).
func TestTypedToolAsTask(t *testing.T) {
	type exportArgs struct {
		Period string `json:"period"`
	}
	type exportOut struct {
		Rows int    `json:"rows"`
		To   string `json:"to"`
	}
	synctest.Test(t, func(t *testing.T) {
		s := mcpserver.New(mcp.Implementation{Name: "typed", Version: "1"}, nil)
		s.EnableTasks(nil)
		mcpserver.AddToolWith(s, &mcp.Tool{Name: "export"},
			func(ctx context.Context, req *mcpserver.Request, in exportArgs) (mcpserver.Reply, exportOut, error) {
				if req.TaskAllowed() {
					return mcpserver.RunAsTask(), exportOut{}, nil
				}
				to := req.Elicitation("to")
				if to.Outcome == elicit.Missing {
					return mcpserver.Ask().ElicitForm("to", "Who gets the "+in.Period+" export?",
						json.RawMessage(`{"type":"object","properties":{"email":{"type":"string"}},"required":["email"]}`)), exportOut{}, nil
				}
				return nil, exportOut{Rows: 42, To: to.Content["email"].(string)}, nil
			}, &mcpserver.HandlerOptions{Tasks: mcpserver.TaskOptional})
		var statuses []mcp.TaskStatus
		asked := 0
		c := mcpclient.New("http://127.0.0.1/mcp", &mcpclient.Options{HTTPClient: mcptest.PipeServer(t, streamhttp.NewHandler(s, nil)),
			Extensions: withTasks, Handlers: recipient(&asked),
			OnTaskUpdate: func(u mcpclient.TaskUpdate) { statuses = append(statuses, u.Status) }})
		r, err := c.CallTool(context.Background(), "export", map[string]any{"period": "2026-Q2"})
		if err != nil {
			t.Fatal(err)
		}
		got, _ := json.Marshal(r.StructuredContent)
		if string(got) != `{"rows":42,"to":"ada@example.com"}` || asked != 1 || len(statuses) == 0 || statuses[0] != mcp.TaskWorking {
			t.Fatalf("structuredContent %s, asked %d, statuses %v", got, asked, statuses)
		}
	})
}
