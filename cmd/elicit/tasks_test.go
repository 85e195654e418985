package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	elicitpkg "github.com/mcp-elicit/elicit/elicit"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpserver"
	"github.com/mcp-elicit/elicit/streamhttp"
)

// hostileStatus is a statusMessage that would set the terminal's title,
// colour the screen and reverse the line if it reached the terminal raw.
const hostileStatus = "\x1b]0;pwned\x07\x1b[31mred\u202eevil"

// hostileShown is hostileStatus as elicit prints it (termtext).
const hostileShown = `\x1b]0;pwned\a\x1b[31mred\u202eevil`

// taskServer serves two tools that run only as tasks of the tasks
// extension and work until the test says: "slow_export" sets each status
// message sent on steps and completes on ""; "ask_export" first asks
// whether to start (a form, answered through tasks/update), then works
// the same way. A run whose context ends (tasks/cancel) closes ended.
type taskServer struct {
	base  string
	steps chan string
	ended chan struct{}
	// holdCancel, when set, holds tasks/cancel requests until the test ends.
	holdCancel chan struct{}

	mu      sync.Mutex
	methods []string // Mcp-Method of each request
}

// newTaskServer starts a taskServer; with holdCancel, tasks/cancel
// requests are held until the test ends.
func newTaskServer(t *testing.T, holdCancel bool) *taskServer {
	t.Helper()
	ts := &taskServer{steps: make(chan string), ended: make(chan struct{})}
	if holdCancel {
		ts.holdCancel = make(chan struct{})
	}
	over := make(chan struct{}) // the test is over: a run still working ends
	s := mcpserver.New(mcp.Implementation{Name: "tasker", Version: "1"}, nil)
	s.EnableTasks(&mcpserver.TaskOptions{PollInterval: 50 * time.Millisecond})
	work := func(ctx context.Context, r *mcpserver.Request) (mcpserver.Reply, error) {
		for {
			select {
			case m := <-ts.steps:
				if m == "" {
					return mcpserver.Text("exported"), nil
				}
				if err := r.SetStatusMessage(m); err != nil {
					return nil, err
				}
			case <-ctx.Done():
				close(ts.ended)
				return nil, ctx.Err()
			case <-over:
				return nil, errors.New("the test is over")
			}
		}
	}
	required := &mcpserver.HandlerOptions{Tasks: mcpserver.TaskRequired}
	s.AddToolWith(&mcp.Tool{Name: "slow_export"}, func(ctx context.Context, r *mcpserver.Request) (mcpserver.Reply, error) {
		if r.TaskAllowed() {
			return mcpserver.RunAsTask(), nil
		}
		return work(ctx, r)
	}, required)
	s.AddToolWith(&mcp.Tool{Name: "ask_export"}, func(ctx context.Context, r *mcpserver.Request) (mcpserver.Reply, error) {
		if r.TaskAllowed() {
			return mcpserver.RunAsTask(), nil
		}
		if r.Elicitation("start").Outcome != elicitpkg.Accepted {
			_ = r.SetStatusMessage("Waiting for your go")
			return mcpserver.Ask().ElicitForm("start", "Start the export?",
				json.RawMessage(`{"type":"object","properties":{"confirm":{"type":"boolean","title":"Go"}},"required":["confirm"]}`)), nil
		}
		return work(ctx, r)
	}, required)
	h := streamhttp.NewHandler(s, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m := r.Header.Get(mcp.HeaderMethod)
		ts.mu.Lock()
		ts.methods = append(ts.methods, m)
		ts.mu.Unlock()
		if m == mcp.MethodTasksCancel && ts.holdCancel != nil {
			select {
			case <-ts.holdCancel:
			case <-r.Context().Done():
			}
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		if ts.holdCancel != nil {
			close(ts.holdCancel)
		}
		close(over)
		srv.Close()
		s.WaitTasks()
	})
	ts.base = srv.URL
	return ts
}

// saw reports whether the server got a request for method.
func (ts *taskServer) saw(method string) bool {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return slices.Contains(ts.methods, method)
}

// runEnded waits until a task's run saw its context end.
func (ts *taskServer) runEnded(t *testing.T) {
	t.Helper()
	select {
	case <-ts.ended:
	case <-time.After(30 * time.Second):
		t.Fatal("the task's run was not cancelled")
	}
}

// elicitAsync runs elicit with args; stdin stays open until the test ends.
func elicitAsync(t *testing.T, args ...string) (stdout, stderr *syncBuffer, done <-chan int) {
	t.Helper()
	inR, inW := io.Pipe()
	t.Cleanup(func() { inW.Close() })
	stdout, stderr = &syncBuffer{}, &syncBuffer{}
	ch := make(chan int, 1)
	go func() { ch <- run(context.Background(), args, inR, stdout, stderr) }()
	return stdout, stderr, ch
}

// ctrlC presses Ctrl-C: the SIGINT hook of the running call, as main's
// signal loop calls it.
func ctrlC(t *testing.T) bool {
	t.Helper()
	f := interrupt.Load()
	return f != nil && (*f)()
}

var taskStartRe = regexp.MustCompile(`The server runs this call as task ([0-9a-f]{32})\. Ctrl-C cancels it\.`)

// TestCallTaskLineMode: in line mode, a call that became a task shows
// the task id, then a line per status message (server text cleaned: no
// escape reaches the output); the tool's result ends it. --json keeps
// stdout for the result and shows the task on stderr.
func TestCallTaskLineMode(t *testing.T) {
	for _, asJSON := range []bool{false, true} {
		ts := newTaskServer(t, false)
		args := []string{"call", "slow_export", "--url", ts.base + "/mcp", "--no-login"}
		if asJSON {
			args = append(args, "--json")
		}
		stdout, stderr, done := elicitAsync(t, args...)
		view := stdout
		if asJSON {
			view = stderr
		}
		waitFor(t, view, taskStartRe)
		for _, m := range [][2]string{{"Reading the data", "Reading the data"}, {"Exporting (1/3)", "Exporting (1/3)"}, {hostileStatus, hostileShown}} {
			ts.steps <- m[0]
			waitFor(t, view, regexp.MustCompile(regexp.QuoteMeta("Task working: "+m[1]+"\n")))
		}
		ts.steps <- ""
		code := <-done
		out := view.String()
		if code != exitOK || strings.ContainsAny(out, "\x1b\x07\u202e") || !strings.Contains(out, "Task completed") {
			t.Errorf("json %v: exit %d:\n%q", asJSON, code, out)
		}
		result := stdout.String()
		if asJSON {
			var res mcp.CallToolResult
			if err := json.Unmarshal([]byte(result), &res); err != nil || res.Content[0].Text != "exported" {
				t.Errorf("--json stdout is not the result alone: %v\n%s", err, result)
			}
		} else if lastOf(result) != "exported" {
			t.Errorf("the result is not last:\n%s", result)
		}
	}
}

// TestCallTaskCtrlC: Ctrl-C while a task works sends tasks/cancel (the
// run's context ends on the server), says "Cancelled." and exits 4. A
// second Ctrl-C while the server has not yet acknowledged quits at once
// (exit 3, "interrupted").
func TestCallTaskCtrlC(t *testing.T) {
	t.Run("cancel", func(t *testing.T) {
		ts := newTaskServer(t, false)
		stdout, _, done := elicitAsync(t, "call", "slow_export", "--url", ts.base+"/mcp", "--no-login")
		waitFor(t, stdout, taskStartRe)
		ts.steps <- "Exporting (1/3)"
		waitFor(t, stdout, regexp.MustCompile(`Task working: Exporting`))
		if !ctrlC(t) {
			t.Fatal("Ctrl-C was not taken by the call's task")
		}
		code := <-done
		out := stdout.String()
		if code != exitCancelled || lastOf(out) != "Cancelled." || !strings.Contains(out, "Cancelling task ") {
			t.Errorf("exit %d, want %d and Cancelled. last:\n%s", code, exitCancelled, out)
		}
		if !ts.saw(mcp.MethodTasksCancel) {
			t.Error("the server got no tasks/cancel")
		}
		ts.runEnded(t)
		if interrupt.Load() != nil {
			t.Fatal("the interrupt hook outlived the call")
		}
	})
	t.Run("second Ctrl-C", func(t *testing.T) {
		ts := newTaskServer(t, true)
		stdout, stderr, done := elicitAsync(t, "call", "slow_export", "--url", ts.base+"/mcp", "--no-login")
		waitFor(t, stdout, taskStartRe)
		if !ctrlC(t) {
			t.Fatal("Ctrl-C was not taken by the call's task")
		}
		waitFor(t, stdout, regexp.MustCompile(`Cancelling task [0-9a-f]{32}: telling the server`))
		if !ctrlC(t) {
			t.Fatal("the second Ctrl-C was not taken")
		}
		code := <-done // tasks/cancel is still held by the server
		if code != exitFailed || !strings.Contains(stderr.String(), "interrupted") || strings.Contains(stdout.String(), "Cancelled.\n") {
			t.Errorf("exit %d, want %d:\n%s\n%s", code, exitFailed, stdout, stderr)
		}
	})
}
