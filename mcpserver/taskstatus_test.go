package mcpserver

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"
	"unicode/utf8"

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
