package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/store"
)

// maxStatusMessage bounds a task's statusMessage, in bytes: it is stored
// with the task and sent on every tasks/get.
const maxStatusMessage = 1024

// taskStatus writes the statusMessage of the task a run works for.
type taskStatus struct {
	ctx context.Context // the run's: ends with tasks/cancel
	rt  *tasks
	run *taskRun

	mu   sync.Mutex
	last string // the message stored last, to skip repeats
}

// SetStatusMessage sets the statusMessage of the task this handler runs
// in (Request.TaskID set; SEP-2663 Task.statusMessage): a line for the
// user on what the task is doing now, such as "Exporting rows 3 of 10".
// It is stored with the task, so tasks/get on any instance sharing the
// store shows it (with lastUpdatedAt moved on) until the next one; the
// client decides whether and how to show it, and must treat it as
// untrusted text. The message is made valid UTF-8 without NUL (each
// becomes U+FFFD, so any store takes it) and cut to 1024 bytes.
//
// It describes the work in progress, so it lasts while the task is
// working: when the run settles the task the server replaces it. Moving
// to input_required, the task shows InputRequired.WithStatusMessage's
// message or none; completed, none (the result says it); failed, the
// JSON-RPC error's message (SEP-2663 §Task Execution Errors); cancelled
// by tasks/cancel, "Cancelled by the client". When answers put the task
// back to working, it has none until the run sets one.
//
// Only a working task takes it: once the task waits for input or has
// ended it changes nothing and returns nil, as it does outside a task.
// The same message twice in a row is stored once. The error is the
// store's, or the run's context error once the task was cancelled or
// another instance took it over (TaskOptions.Lease); a handler may
// ignore it.
func (r *Request) SetStatusMessage(msg string) error {
	if r.taskStatus == nil {
		return nil
	}
	return r.taskStatus.set(msg)
}

// newTaskStatus returns the status writer of run's task, under ctx.
func newTaskStatus(ctx context.Context, rt *tasks, run *taskRun) *taskStatus {
	return &taskStatus{ctx: ctx, rt: rt, run: run}
}

func (t *taskStatus) set(msg string) error {
	msg = cleanStatusMessage(msg)
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.ctx.Err(); err != nil {
		return err
	}
	if msg == t.last {
		return nil
	}
	_, err := t.run.update(t.ctx, t.rt.store, func(rec *store.Task) error {
		if rec.Status != mcp.TaskWorking {
			return errNoChange
		}
		rec.StatusMessage, rec.UpdatedAt = msg, t.rt.now().UTC()
		return nil
	})
	switch {
	case errors.Is(err, errNoChange):
		return nil
	case errors.Is(err, errLeaseLost): // another instance runs the task now: this run is over
		t.run.stop(OutcomeLeaseLost)
		t.run.cancel()
		return t.ctx.Err()
	}
	if err == nil {
		t.last = msg
	}
	return err
}

// progress is Request.Progress inside a task: there is no progressToken
// to notify, so the progress becomes the status message: the message,
// then the figures in brackets ("Exporting (3/10)", "Exporting (3)"), or
// the figures alone when there is no message.
func (t *taskStatus) progress(progress, total float64, message string) error {
	figures := fmt.Sprintf("%g", progress)
	if total > 0 {
		figures += fmt.Sprintf("/%g", total)
	}
	if message == "" {
		return t.set(figures)
	}
	return t.set(message + " (" + figures + ")")
}

// cleanStatusMessage makes msg storable anywhere: valid UTF-8, no NUL
// (PostgreSQL text refuses both), at most maxStatusMessage bytes, cut on
// a rune boundary.
func cleanStatusMessage(msg string) string {
	msg = strings.ReplaceAll(strings.ToValidUTF8(msg, "\uFFFD"), "\x00", "\uFFFD")
	if len(msg) > maxStatusMessage {
		msg = strings.ToValidUTF8(msg[:maxStatusMessage], "")
	}
	return msg
}
