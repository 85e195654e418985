package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/signal"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	elicitpkg "github.com/mcp-elicit/elicit/elicit"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpclient"
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
	// refuseGet, once set, answers tasks/get with a -32602.
	refuseGet atomic.Bool
	// cancelSeen is closed when the first tasks/cancel arrives.
	cancelSeen     chan struct{}
	cancelSeenOnce sync.Once

	mu      sync.Mutex
	methods []string // Mcp-Method of each request
}

// newTaskServer starts a taskServer; with holdCancel, tasks/cancel
// requests are held until the test ends.
func newTaskServer(t *testing.T, holdCancel bool) *taskServer {
	t.Helper()
	ts := &taskServer{steps: make(chan string), ended: make(chan struct{}), cancelSeen: make(chan struct{})}
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
		switch r.Elicitation("start").Outcome {
		case elicitpkg.Declined, elicitpkg.Cancelled:
			return mcpserver.ToolError("not started"), nil
		case elicitpkg.Missing:
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
		if m == mcp.MethodTasksGet && ts.refuseGet.Load() {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":null,"error":{"code":-32602,"message":"Unknown task"}}`)
			return
		}
		if m == mcp.MethodTasksCancel {
			ts.cancelSeenOnce.Do(func() { close(ts.cancelSeen) })
		}
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
// second Ctrl-C while the server has not yet acknowledged quits at once:
// exit 5, naming the task, which may still be running.
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
		id := taskStartRe.FindStringSubmatch(stdout.String())[1]
		if code != exitTaskUnknown || !strings.Contains(stderr.String(), "stopped following task "+id+" (slow_export): you quit") ||
			!strings.Contains(stderr.String(), "may still be running") || strings.Contains(stdout.String(), "Cancelled.\n") {
			t.Errorf("exit %d, want %d:\n%s\n%s", code, exitTaskUnknown, stdout, stderr)
		}
	})
}

// TestCallTaskLost: when elicit stops following a task without learning
// its end (here the server refuses a poll with -32602), it names the
// task, says it may still be running and ends by itself, and exits 5,
// not the "failed, try again" of exit 3: calling again would start a
// second task.
func TestCallTaskLost(t *testing.T) {
	ts := newTaskServer(t, false)
	stdout, stderr, done := elicitAsync(t, "call", "slow_export", "--url", ts.base+"/mcp", "--no-login")
	waitFor(t, stdout, taskStartRe)
	ts.refuseGet.Store(true)
	code := <-done
	id := taskStartRe.FindStringSubmatch(stdout.String())[1]
	want := "elicit: stopped following task " + id + " (slow_export): tasks/get: server error -32602: Unknown task. The task may still be running on the server and ends by itself"
	if code != exitTaskUnknown || !strings.Contains(stderr.String(), want) {
		t.Errorf("exit %d, want %d and %q:\n%s", code, exitTaskUnknown, want, stderr)
	}
}

// TestCallTaskSignals: SIGHUP (the terminal was closed) and SIGTERM
// while a task works cancel it as Ctrl-C does: tasks/cancel reaches the
// run, "Cancelled.", exit 4. A second signal while the server has not
// acknowledged quits at once, naming the task (exit 5). The signals are
// real, sent to this process; guard keeps one that elicit did not catch
// from ending the test binary.
func TestCallTaskSignals(t *testing.T) {
	guard := make(chan os.Signal, 4)
	signal.Notify(guard, syscall.SIGHUP, syscall.SIGTERM)
	defer signal.Stop(guard)
	for _, tc := range []struct {
		name     string
		sigs     []syscall.Signal
		hold     bool // the server holds tasks/cancel
		wantCode int
	}{
		{"SIGHUP", []syscall.Signal{syscall.SIGHUP}, false, exitCancelled},
		{"SIGTERM", []syscall.Signal{syscall.SIGTERM}, false, exitCancelled},
		{"SIGTERM then SIGHUP", []syscall.Signal{syscall.SIGTERM, syscall.SIGHUP}, true, exitTaskUnknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := newTaskServer(t, tc.hold)
			ctx, stop := interruptContext()
			defer stop()
			inR, inW := io.Pipe()
			defer inW.Close()
			stdout, stderr := &syncBuffer{}, &syncBuffer{}
			done := make(chan int, 1)
			go func() {
				done <- run(ctx, []string{"call", "slow_export", "--url", ts.base + "/mcp", "--no-login"}, inR, stdout, stderr)
			}()
			waitFor(t, stdout, taskStartRe)
			for i, sig := range tc.sigs {
				if err := syscall.Kill(os.Getpid(), sig); err != nil {
					t.Fatal(err)
				}
				if i == 0 && len(tc.sigs) > 1 {
					// The second signal comes once the server holds the
					// cancel: before that, quitting may stop it being sent.
					waitFor(t, stdout, regexp.MustCompile(`Cancelling task [0-9a-f]{32}: telling the server`))
					select {
					case <-ts.cancelSeen:
					case <-time.After(30 * time.Second):
						t.Fatal("the server got no tasks/cancel after the first signal")
					}
				}
			}
			var code int
			select {
			case code = <-done:
			case <-time.After(30 * time.Second):
				t.Fatalf("elicit did not end on %s:\n%s", tc.name, stdout)
			}
			id := taskStartRe.FindStringSubmatch(stdout.String())[1]
			switch {
			case code != tc.wantCode:
				t.Errorf("exit %d, want %d:\n%s\n%s", code, tc.wantCode, stdout, stderr)
			case code == exitCancelled && lastOf(stdout.String()) != "Cancelled.":
				t.Errorf("Cancelled. is not last:\n%s", stdout)
			case code == exitTaskUnknown && !strings.Contains(stderr.String(), "stopped following task "+id):
				t.Errorf("the task is not named:\n%s", stderr)
			}
			if !tc.hold {
				ts.runEnded(t)
			}
			if !ts.saw(mcp.MethodTasksCancel) {
				t.Error("the server got no tasks/cancel")
			}
		})
	}
}

// TestCallTaskQuestionLineMode: in line mode, Ctrl-C at one of a task's
// questions cancels the task, as the banner says ("Ctrl-C cancels
// it."); :cancel dismisses the question instead, and the tool decides
// what follows (here, an isError result: exit 1, no tasks/cancel).
func TestCallTaskQuestionLineMode(t *testing.T) {
	t.Run("Ctrl-C", func(t *testing.T) {
		ts := newTaskServer(t, false)
		stdout, _, done := elicitAsync(t, "call", "ask_export", "--url", ts.base+"/mcp", "--no-login")
		waitFor(t, stdout, regexp.MustCompile(`(?s)1/1 Go .*\n\s*>`))
		if !ctrlC(t) {
			t.Fatal("Ctrl-C at the task's question was not taken")
		}
		// "Cancelled." follows the open prompt, as after a Ctrl-C at any
		// line-mode prompt.
		if code := <-done; code != exitCancelled || !strings.HasSuffix(stdout.String(), "Cancelled.\n") || !ts.saw(mcp.MethodTasksCancel) {
			t.Errorf("exit %d, want %d, Cancelled. and tasks/cancel:\n%s", code, exitCancelled, stdout)
		}
	})
	t.Run(":cancel", func(t *testing.T) {
		ts := newTaskServer(t, false)
		inR, inW := io.Pipe()
		defer inW.Close()
		stdout, stderr := &syncBuffer{}, &syncBuffer{}
		done := make(chan int, 1)
		go func() {
			done <- run(context.Background(), []string{"call", "ask_export", "--url", ts.base + "/mcp", "--no-login"}, inR, stdout, stderr)
		}()
		waitFor(t, stdout, regexp.MustCompile(`Start the export\?`))
		_, _ = io.WriteString(inW, ":cancel\n")
		if code := <-done; code != exitToolError || lastOf(stdout.String()) != "not started" || ts.saw(mcp.MethodTasksCancel) {
			t.Errorf("exit %d, want %d and the tool's text:\n%s\n%s", code, exitToolError, stdout, stderr)
		}
	})
}

// TestTaskBanner: the line that names the task says what cancels it,
// and in interactive mode that the same keys at one of its questions
// dismiss the question (a form's own cancel), not the task.
func TestTaskBanner(t *testing.T) {
	for _, tc := range []struct {
		name string
		esc  *escWatch
		want string
	}{
		{"line mode", nil, "The server runs this call as task abc. Ctrl-C cancels it.\n"},
		{"interactive", &escWatch{}, "The server runs this call as task abc. Esc or Ctrl-C cancels it while it works; at one of its questions, they dismiss the question.\n"},
	} {
		var out strings.Builder
		v := &waitView{out: &out, esc: tc.esc, cols: func() int { return 0 }}
		v.onTask(mcpclient.TaskUpdate{Tool: "t", TaskID: "abc", Status: mcp.TaskInputRequired})
		if got, _, _ := strings.Cut(out.String(), "Task "); got != tc.want {
			t.Errorf("%s: banner %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestTaskExplainedPunctuation: the explanation of a task elicit stopped
// following reads as sentences whatever its cause ends with.
func TestTaskExplainedPunctuation(t *testing.T) {
	const url = "http://127.0.0.1:1/mcp"
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"question", &mcpclient.ConnectionError{Endpoint: url, Err: syscall.ECONNREFUSED},
			"connection refused. Is it running? The task may still be running"},
		{"plain", errors.New("tasks/get: stream ended"), "stream ended. The task may still be running"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := taskExplained(&mcpclient.TaskError{Tool: "slow_export", TaskID: "abc", Err: tc.err}, url, false)
			if !strings.Contains(got, tc.want) || strings.Contains(got, "?.") || strings.Contains(got, "..") {
				t.Errorf("taskExplained = %q, want it to contain %q", got, tc.want)
			}
		})
	}
}
