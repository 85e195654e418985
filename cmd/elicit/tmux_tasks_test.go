package main

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/mcp-elicit/elicit/examples/billing"
	"github.com/mcp-elicit/elicit/mcp"
)

// TestTmuxTask drives the terminal host in a tmux pane against an
// in-test server whose tool runs as a task and sets status messages: the
// task id is shown once, the status as one line updated in place (server
// text cleaned: the hostile message neither sets the pane's title nor
// shows raw), and Esc or Ctrl-C cancels the task: the server gets
// tasks/cancel, the run's context ends, "Cancelled." is the last line and
// the exit status 4. A second Ctrl-C while the server has not
// acknowledged quits at once (exit 5, naming the task). A task that asks
// a question mid-way gets the form, and Esc cancels its work afterwards;
// Esc at the question dismisses the question, not the task. Closing the
// terminal (SIGHUP) cancels the task.
//
// It needs tmux, and is skipped without it unless ELICIT_TMUX_TEST=require.
func TestTmuxTask(t *testing.T) {
	needTmux(t)
	dir := t.TempDir()
	elicitBin := goBuild(t, dir, "elicit", ".")
	tm := &tmux{t: t, socket: filepath.Join(dir, "tmux.sock")}
	t.Cleanup(tm.kill)
	start := func(session, tool string, ts *taskServer) string {
		tm.start(session, fmt.Sprintf("%s call %s --url %s/mcp --no-login", elicitBin, tool, ts.base))
		screen := tm.waitFor(session, "dismiss the question.")
		if !regexp.MustCompile(`The server runs this call as task [0-9a-f]{32}\. Esc or Ctrl-C cancels it while it works; at one of its questions, they dismiss\s+the question\.`).MatchString(screen) {
			t.Errorf("%s: no task id shown:\n%s", session, screen)
		}
		return screen
	}
	// work sends the status messages and waits for each on the screen.
	work := func(session string, ts *taskServer) string {
		var screen string
		for _, m := range [][2]string{{"Reading the data", "Reading the data"}, {"Exporting (1/3)", "Exporting (1/3)"},
			{"Exporting (2/3)", "Exporting (2/3)"}, {hostileStatus, hostileShown}} {
			ts.steps <- m[0]
			screen = tm.waitFor(session, "Task working: "+m[1])
		}
		if n := strings.Count(screen, "Task working"); n != 1 {
			t.Errorf("%s: %d status lines, want one updated in place:\n%s", session, n, screen)
		}
		if title, _ := tm.run("display-message", "-p", "-t", session, "#{pane_title}"); strings.Contains(title, "pwned") {
			t.Errorf("%s: the status message set the pane title to %q", session, title)
		}
		return screen
	}
	cancelled := func(session string, ts *taskServer) {
		status, screen := tm.waitDead(session)
		if status != "4" || lastLine(screen) != "Cancelled." || !strings.Contains(screen, "Cancelling task ") {
			t.Errorf("%s: exit %s, want 4 and Cancelled. last:\n%s", session, status, screen)
		}
		if !ts.saw(mcp.MethodTasksCancel) {
			t.Errorf("%s: the server got no tasks/cancel", session)
		}
		ts.runEnded(t)
	}

	for _, key := range []string{"Escape", "C-c"} {
		ts := newTaskServer(t, false)
		session := "cancel-" + key
		start(session, "slow_export", ts)
		work(session, ts)
		tm.keys(session, key)
		cancelled(session, ts)
	}

	{ // a second Ctrl-C
		ts := newTaskServer(t, true)
		start("quit", "slow_export", ts)
		tm.keys("quit", "C-c")
		tm.waitFor("quit", "Ctrl-C again quits at once")
		tm.keys("quit", "C-c")
		status, screen := tm.waitDead("quit") // tasks/cancel is still held
		if status != "5" || !strings.Contains(screen, "may still be running") || strings.Contains(screen, "Cancelled.\n") {
			t.Errorf("second Ctrl-C: exit %s, want 5, may still be running:\n%s", status, screen)
		}
	}
	{ // a question, then Esc
		ts := newTaskServer(t, false)
		start("ask", "ask_export", ts)
		tm.press("ask", [][2]string{{"Fill in this form?", "Enter"}, {"yes or no", "y"}})
		tm.waitFor("ask", "Send these answers?")
		tm.keys("ask", "Enter") // Submit
		work("ask", ts)
		tm.keys("ask", "Escape")
		cancelled("ask", ts)
	}
	{ // Esc at the task's question dismisses the question
		ts := newTaskServer(t, false)
		start("dismiss", "ask_export", ts)
		tm.waitFor("dismiss", "Fill in this form?")
		tm.keys("dismiss", "Escape")
		status, screen := tm.waitDead("dismiss")
		if status != "1" || lastLine(screen) != "not started" || ts.saw(mcp.MethodTasksCancel) {
			t.Errorf("Esc at the question: exit %s, want 1 and the tool's answer, no tasks/cancel:\n%s", status, screen)
		}
	}
	{ // the terminal is closed while the task works
		ts := newTaskServer(t, false)
		start("hangup", "slow_export", ts)
		work("hangup", ts)
		if _, err := tm.run("kill-session", "-t", "hangup"); err != nil {
			t.Fatal(err)
		}
		ts.runEnded(t)
		if !ts.saw(mcp.MethodTasksCancel) {
			t.Error("closing the terminal sent no tasks/cancel")
		}
	}
}

// TestTmuxEscWhileWaitingForBrowser: after accept and "finished" while
// the page is not, the server holds the retry and elicit says it waits for
// the browser; Esc then withdraws the accept as Ctrl-C does: the server
// hears cancel and answers its cancel text.
func TestTmuxEscWhileWaitingForBrowser(t *testing.T) {
	needTmux(t)
	dir := t.TempDir()
	elicitBin := goBuild(t, dir, "elicit", ".")
	base := newServer(t)
	tm := &tmux{t: t, socket: filepath.Join(dir, "tmux.sock")}
	t.Cleanup(tm.kill)
	tm.start("wait", fmt.Sprintf("%s call %s --url %s/mcp --token alice", elicitBin, billing.ToolName, base))
	tm.press("wait", [][2]string{{"Do you want to open this page?", "Enter"}, {"When you have finished on the page", "Enter"}})
	screen := tm.waitFor("wait", waitingText)
	if !strings.Contains(screen, waitingText+" (press Esc or Ctrl-C to cancel)") {
		t.Errorf("the waiting line does not say Esc cancels:\n%s", screen)
	}
	tm.keys("wait", "Escape")
	status, screen := tm.waitDead("wait")
	if status != "1" || !strings.Contains(screen, "Cancelled: telling the server.") || lastLine(screen) != billing.TextCancelled {
		t.Errorf("exit %s; want 1, the cancel said, and the server's cancel text %q last:\n%s", status, billing.TextCancelled, screen)
	}
}
