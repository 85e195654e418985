package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"unicode"

	"golang.org/x/text/width"

	"github.com/mcp-elicit/elicit/internal/termtext"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpclient"
)

// errCancelledByUser ends a call whose task the user cancelled (Esc or
// Ctrl-C): the client has sent tasks/cancel, and elicit says "Cancelled.".
var errCancelledByUser = errors.New("cancelled by the user")

// waitView is what elicit call shows while it waits with nothing to ask,
// and how the user stops the wait:
//
//   - a task the call became (tasks extension): its id once, then its
//     status and statusMessage, as one updating line on a terminal in
//     interactive mode and a line per change otherwise; Esc (interactive
//     mode) or Ctrl-C cancels it (tasks/cancel), and a second Ctrl-C
//     while the server is being told quits at once;
//   - a retry held until a URL-mode page is finished: "Waiting for you
//     to finish in the browser…"; Esc or Ctrl-C withdraws the accept (the
//     server hears cancel).
//
// Every server string goes through termtext. Safe for concurrent use:
// the client's callbacks, the Esc watch and the SIGINT hook all call it.
type waitView struct {
	out   io.Writer
	tty   bool                // one updating line (interactive mode)
	cols  func() int          // out's width, 0 when unknown
	esc   *escWatch           // nil: Esc is not read (line mode)
	page  *mcpclient.PageWait // the call's held URL-mode retries
	abort context.CancelCauseFunc

	mu         sync.Mutex
	task       *mcpclient.TaskUpdate // the live task; nil when none
	open       bool                  // an updating line is on screen, unfinished
	pageShown  int                   // the held retry last said to be waiting
	cancelling bool                  // the user cancelled the task
	quit       chan struct{}         // closed by a second Ctrl-C
}

// cancelHint says how to stop a wait.
func (v *waitView) cancelHint() string {
	if v.esc != nil {
		return "Esc or Ctrl-C"
	}
	return "Ctrl-C"
}

// taskHint says how to cancel a task, and, in interactive mode, what the
// same keys do at its questions: a form takes them as its own cancel
// (the question is dismissed, the server decides what follows), as at
// every form. In line mode a question is dismissed with :cancel, and
// Ctrl-C cancels the task there too.
func (v *waitView) taskHint() string {
	if v.esc != nil {
		return "Esc or Ctrl-C cancels it while it works; at one of its questions, they dismiss the question."
	}
	return "Ctrl-C cancels it."
}

// taskID is the id of the live task, "" when none.
func (v *waitView) taskID() string {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.task == nil {
		return ""
	}
	return v.task.TaskID
}

// onTask is mcpclient.Options.OnTaskUpdate.
func (v *waitView) onTask(u mcpclient.TaskUpdate) {
	v.mu.Lock()
	if u.Polls == 0 {
		v.finishLine()
		fmt.Fprintf(v.out, "The server runs this call as task %s. %s\n", termtext.Clip(u.TaskID, 64), v.taskHint())
	}
	live := !u.Status.Terminal()
	if live {
		v.task = &u
	} else {
		v.task = nil
	}
	if !v.cancelling {
		v.showTask(u)
	}
	v.mu.Unlock()
	if u.Status == mcp.TaskWorking && live {
		v.esc.start(v.escPressed)
	} else {
		v.pause()
	}
}

// maxStatusColumns caps a task's status line in every mode (terminal,
// line mode, --json's stderr): the status and message are the server's,
// and one update may be a megabyte or ten thousand lines long.
const maxStatusColumns = 200

// showTask shows the task's status line, escaped (one line) and cut to
// maxStatusColumns: rewritten in place on a terminal (cut to its width
// too), a line of its own otherwise. v.mu held.
func (v *waitView) showTask(u mcpclient.TaskUpdate) {
	line := "Task " + termtext.Line(string(u.Status))
	if u.StatusMessage != "" {
		line += ": " + termtext.Line(u.StatusMessage)
	}
	limit := maxStatusColumns
	if w := v.cols() - 1; v.tty && w > 0 {
		limit = min(limit, w)
	}
	line = fitColumns(line, limit)
	if !v.tty {
		fmt.Fprintln(v.out, line)
		return
	}
	fmt.Fprint(v.out, "\r\x1b[K"+line)
	v.open = true
}

// onProgress is mcpclient.Options.OnProgress: a held URL-mode retry is
// said to be waiting once, and Esc is watched while it waits.
func (v *waitView) onProgress(mcpclient.Progress) {
	n := v.page.Waiting()
	v.mu.Lock()
	if n == 0 || n == v.pageShown {
		v.mu.Unlock()
		return
	}
	v.pageShown = n
	v.finishLine()
	fmt.Fprintf(v.out, "%s (press %s to cancel)\n", waitingText, v.cancelHint())
	v.mu.Unlock()
	v.esc.start(v.escPressed)
}

// escPressed is Esc during a wait: the terminal is given back at once,
// then the wait is cancelled as by the first Ctrl-C.
func (v *waitView) escPressed() {
	v.esc.stop()
	v.cancel()
}

// cancel stops what the call waits for: the held URL-mode retry (the
// server hears cancel), or the task (tasks/cancel, then "Cancelled.").
// It reports whether there was one to stop.
func (v *waitView) cancel() bool {
	if v.page.Cancel() {
		v.mu.Lock()
		v.finishLine()
		fmt.Fprintln(v.out, "Cancelled: telling the server.")
		v.mu.Unlock()
		return true
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.task == nil || v.cancelling {
		return false
	}
	v.cancelling = true
	v.finishLine()
	fmt.Fprintf(v.out, "Cancelling task %s: telling the server… (Ctrl-C again quits at once)\n", termtext.Clip(v.task.TaskID, 64))
	v.abort(errCancelledByUser)
	return true
}

// interrupt is the SIGINT hook (main.interrupt): the first Ctrl-C
// cancels the wait; a second one, while the server is being told of a
// cancelled task, quits at once (quit is closed); otherwise it is not
// taken and the program ends as on any Ctrl-C.
func (v *waitView) interrupt() bool {
	if v.cancel() {
		return true
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if !v.cancelling {
		return false
	}
	select {
	case <-v.quit:
	default:
		close(v.quit)
	}
	return true
}

// pause gives the terminal back before a prompt, or at the end: the
// status line is finished and the Esc watch stopped.
func (v *waitView) pause() {
	v.mu.Lock()
	v.finishLine()
	v.mu.Unlock()
	v.esc.stop()
}

// finishLine ends an updating line, so the next print starts on a line
// of its own and the last status stays on screen. v.mu held.
func (v *waitView) finishLine() {
	if v.open {
		fmt.Fprintln(v.out)
		v.open = false
	}
}

// fitColumns cuts s (escaped text: no control characters) to at most n
// terminal columns, "…" marking the cut; n ≤ 0 means no limit. East Asian
// wide characters take two columns, combining marks none.
func fitColumns(s string, n int) string {
	if n <= 0 || columnsOf(s) <= n {
		return s
	}
	used := 0
	for i, r := range s {
		if used += runeColumns(r); used > n-1 {
			return s[:i] + "…"
		}
	}
	return s
}

func columnsOf(s string) int {
	n := 0
	for _, r := range s {
		n += runeColumns(r)
	}
	return n
}

func runeColumns(r rune) int {
	switch {
	case unicode.Is(unicode.Mn, r), unicode.Is(unicode.Me, r):
		return 0
	}
	switch width.LookupRune(r).Kind() {
	case width.EastAsianWide, width.EastAsianFullwidth:
		return 2
	}
	return 1
}

// pauseFirst wraps the handlers so that each gives the terminal back
// (pause) before it prompts.
func pauseFirst(hs *mcpclient.Handlers, pause func()) *mcpclient.Handlers {
	out := *hs
	if f := hs.ElicitForm; f != nil {
		out.ElicitForm = func(ctx context.Context, who mcpclient.Asker, key string, p *mcp.ElicitRequestParams) (*mcp.ElicitResult, error) {
			pause()
			return f(ctx, who, key, p)
		}
	}
	if f := hs.ElicitURL; f != nil {
		out.ElicitURL = func(ctx context.Context, who mcpclient.Asker, key string, p *mcp.ElicitRequestParams) (*mcp.ElicitResult, error) {
			pause()
			return f(ctx, who, key, p)
		}
	}
	if f := hs.Sampling; f != nil {
		out.Sampling = func(ctx context.Context, who mcpclient.Asker, key string, p *mcp.CreateMessageRequestParams) (*mcp.CreateMessageResult, error) {
			pause()
			return f(ctx, who, key, p)
		}
	}
	if f := hs.Roots; f != nil {
		out.Roots = func(ctx context.Context, who mcpclient.Asker, key string) (*mcp.ListRootsResult, error) {
			pause()
			return f(ctx, who, key)
		}
	}
	return &out
}
