package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"
	"unicode/utf8"

	"github.com/mcp-elicit/elicit/elicit"
	"github.com/mcp-elicit/elicit/jsonrpc"
	"github.com/mcp-elicit/elicit/mcp"
)

// statusTool registers "reporter" on s: as a task, it runs each function
// the test sends on steps and reports its error on results; when its
// context ends (tasks/cancel) it tries once more to set a message.
func statusTool(s *Server, steps <-chan func(*Request) error, results chan<- error) {
	s.AddToolWith(&mcp.Tool{Name: "reporter"}, func(ctx context.Context, r *Request) (Reply, error) {
		if r.TaskAllowed() {
			return RunAsTask(), nil
		}
		for {
			select {
			case f, ok := <-steps:
				if !ok {
					return Text("reported"), nil
				}
				results <- f(r)
			case <-ctx.Done():
				results <- r.SetStatusMessage("after the cancel")
				return nil, ctx.Err()
			}
		}
	}, &HandlerOptions{Tasks: TaskOptional})
}

// TestTaskStatusMessage: a handler running as a task sets the task's
// statusMessage (SetStatusMessage, or Progress, which has no request to
// notify in a task); it is stored with the task, so tasks/get on another
// instance sharing the store shows it, with lastUpdatedAt moved on. A
// message that no store could take (NUL, invalid UTF-8, too long) is
// made storable; escapes are kept (the client cleans what it shows). After
// tasks/cancel nothing changes the message.
func TestTaskStatusMessage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		shared := NewMemoryTaskStore()
		steps, results := make(chan func(*Request) error), make(chan error)
		a := New(mcp.Implementation{Name: "a", Version: "1"}, nil)
		a.EnableTasks(&TaskOptions{Store: shared})
		statusTool(a, steps, results)
		b := New(mcp.Implementation{Name: "b", Version: "1"}, nil)
		b.EnableTasks(&TaskOptions{Store: shared})
		statusTool(b, nil, nil)
		ca, cb := rpc{a, "alice"}, rpc{b, "alice"}
		id := startTask(t, ca, "reporter", `{}`)
		if g := getTask(t, cb, id); g["status"] != "working" || g["statusMessage"] != nil {
			t.Fatalf("a new task: %v", g)
		}

		hostile := "\x1b]0;pwned\x07\x1b[2J\u202eevil\x00\xff" + strings.Repeat("é", 1000)
		last := ""
		for _, tc := range []struct {
			name    string
			step    func(*Request) error
			want    string // "" checks the hostile message's cleaning instead
			updated bool   // lastUpdatedAt moves on
		}{
			{"set", func(r *Request) error { return r.SetStatusMessage("Reading the data") }, "Reading the data", true},
			{"progress with total", func(r *Request) error { return r.Progress(3, 10, "Exporting rows") }, "Exporting rows (3/10)", true},
			{"progress without total", func(r *Request) error { return r.Progress(4, 0, "Exporting rows") }, "Exporting rows (4)", true},
			{"progress without message", func(r *Request) error { return r.Progress(0.5, 1, "") }, "0.5/1", true},
			{"the same again", func(r *Request) error { return r.Progress(0.5, 1, "") }, "0.5/1", false},
			{"hostile", func(r *Request) error { return r.SetStatusMessage(hostile) }, "", true},
		} {
			time.Sleep(time.Second) // so that an update shows in lastUpdatedAt
			steps <- tc.step
			if err := <-results; err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			g := getTask(t, cb, id)
			msg, _ := g["statusMessage"].(string)
			switch {
			case tc.want != "" && msg != tc.want:
				t.Errorf("%s: statusMessage %q, want %q", tc.name, msg, tc.want)
			case tc.want == "" && (!utf8.ValidString(msg) || strings.ContainsRune(msg, 0) || len(msg) > 1024 ||
				!strings.HasPrefix(msg, "\x1b]0;pwned\x07\x1b[2J\u202eevil\uFFFD\uFFFDé") || !strings.HasSuffix(msg, "é")):
				t.Errorf("%s: statusMessage %q (%d bytes): want valid UTF-8, no NUL, at most 1024 bytes, escapes kept", tc.name, msg, len(msg))
			}
			if moved := g["lastUpdatedAt"] != last; moved != tc.updated {
				t.Errorf("%s: lastUpdatedAt %v after %v: moved %v, want %v", tc.name, g["lastUpdatedAt"], last, moved, tc.updated)
			}
			last, _ = g["lastUpdatedAt"].(string)
		}

		mustCall(t, ca, taskReq("tasks/cancel", id, tasksCaps, "")) // on the instance running it
		if err := <-results; !errors.Is(err, context.Canceled) {
			t.Errorf("SetStatusMessage after the cancel: %v, want context.Canceled", err)
		}
		a.WaitTasks()
		if g := getTask(t, ca, id); g["status"] != "cancelled" || g["statusMessage"] != "Cancelled by the client" {
			t.Errorf("after the cancel: %v", g)
		}
	})
}

// Outside a task, SetStatusMessage does nothing, and Progress without a
// progressToken neither.
func TestStatusMessageOutsideTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := New(mcp.Implementation{Name: "s", Version: "1"}, nil)
		s.EnableTasks(nil)
		var errs []error
		s.AddTool(&mcp.Tool{Name: "plain"}, func(ctx context.Context, r *Request) (Reply, error) {
			errs = append(errs, r.SetStatusMessage("hello"), r.Progress(1, 2, "half"))
			return Text("ok"), nil
		})
		r := mustCall(t, rpc{s, "alice"}, toolCall("plain", tasksCaps, ""))
		if r["resultType"] != "complete" || len(errs) != 2 || errs[0] != nil || errs[1] != nil {
			t.Fatalf("result %v, errors %v", r, errs)
		}
	})
}

// settlingTool registers "settles" on s: as a task, its first run sets
// a status message and then ends as its "then" argument says; a run with
// answers or state only waits for its context to end.
func settlingTool(s *Server) {
	s.AddToolWith(&mcp.Tool{Name: "settles"}, func(ctx context.Context, r *Request) (Reply, error) {
		if r.TaskAllowed() {
			return RunAsTask(), nil
		}
		if r.Elicitation("go").Outcome != elicit.Missing || r.State != nil {
			<-ctx.Done()
			return nil, ctx.Err()
		}
		if err := r.SetStatusMessage("Exporting (2/5)"); err != nil {
			return nil, err
		}
		var args struct{ Then string }
		_ = json.Unmarshal(r.Arguments, &args)
		switch args.Then {
		case "ask":
			return Ask().ElicitForm("go", "Go on?", json.RawMessage(confirmForm)), nil
		case "ask_with_message":
			return Ask().WithStatusMessage("Waiting for\x00 your go").ElicitForm("go", "Go on?", json.RawMessage(confirmForm)), nil
		case "state_only":
			return Ask().WithState([]byte("exported")), nil
		case "tool_error":
			return ToolError("no luck"), nil
		case "rpc_error":
			return nil, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "Bad period: 2026-Q5")
		case "error":
			return nil, errors.New("db password wrong")
		case "wait":
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return Text("done"), nil
	}, &HandlerOptions{Tasks: TaskOptional})
}

// TestTaskStatusMessageSettled: a status message describes the work in
// progress, so when the run settles the task the server replaces it:
// none on input_required unless the reply gives one
// (WithStatusMessage, cleaned), none once completed, the error's message
// once failed, the cancel's reason once cancelled, and none when answers
// put the task back to working; a reply with state only keeps the task
// working and the message stands.
func TestTaskStatusMessageSettled(t *testing.T) {
	tests := []struct {
		then, status, message string
		answer, cancel        bool // then: answer the question / cancel, and look again
		after                 string
	}{
		{then: "ask", status: "input_required", answer: true, after: "working"},
		{then: "ask_with_message", status: "input_required", message: "Waiting for\uFFFD your go", answer: true, after: "working"},
		{then: "state_only", status: "working", message: "Exporting (2/5)"},
		{then: "complete", status: "completed"},
		{then: "tool_error", status: "completed"},
		{then: "rpc_error", status: "failed", message: "Bad period: 2026-Q5"},
		{then: "error", status: "failed", message: "Internal error"},
		{then: "wait", status: "working", message: "Exporting (2/5)", cancel: true, after: "cancelled"},
	}
	for _, tt := range tests {
		t.Run(tt.then, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := New(mcp.Implementation{Name: "s", Version: "1"}, nil)
				s.EnableTasks(nil)
				settlingTool(s)
				c := rpc{s, "alice"}
				id := startTask(t, c, "settles", `{"then":"`+tt.then+`"}`)
				synctest.Wait()
				g := getTask(t, c, id)
				if g["status"] != tt.status || statusMessage(g) != tt.message {
					t.Fatalf("settled: status %v, statusMessage %q; want %s, %q", g["status"], statusMessage(g), tt.status, tt.message)
				}
				switch {
				case tt.answer:
					mustCall(t, c, taskReq("tasks/update", id, tasksCaps, `,"inputResponses":{"go":{"action":"accept","content":{"confirm":true}}}`))
				case tt.cancel:
					mustCall(t, c, taskReq("tasks/cancel", id, tasksCaps, ""))
				}
				synctest.Wait()
				if tt.after != "" {
					want := map[string]string{"cancelled": "Cancelled by the client"}[tt.after]
					if g := getTask(t, c, id); g["status"] != tt.after || statusMessage(g) != want {
						t.Fatalf("then: status %v, statusMessage %q; want %s, %q", g["status"], statusMessage(g), tt.after, want)
					}
				}
				mustCall(t, c, taskReq("tasks/cancel", id, tasksCaps, "")) // ends a run still waiting
				s.WaitTasks()
			})
		})
	}
}

// statusMessage is a tasks/get answer's statusMessage, "" when absent.
func statusMessage(g map[string]any) string {
	m, _ := g["statusMessage"].(string)
	return m
}
