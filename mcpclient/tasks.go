package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/mcp-elicit/elicit/mcp"
)

// The tasks extension on the client side (SEP-2663). A client whose
// Options.Extensions declare mcp.ExtensionTasks may get a task instead of
// a tool's result; CallTool and CallToolOnce then follow it to its end:
// they poll tasks/get (at the pollIntervalMs the server suggests, kept
// within MinTaskPoll and MaxTaskPoll), answer a task's input requests
// through the same Handlers as MRTR and send them with tasks/update, and
// return the tool's result once the task completed. A failed task is an
// *RPCError with the task's error; a cancelled one is ErrTaskCancelled.
// When ctx ends first, the task is cancelled (tasks/cancel, best effort)
// and ctx's error returned. Options.OnTaskUpdate hears of the task's
// status and statusMessage as they change, for a host to show them.
//
// A tasks/get or tasks/update that fails transiently is sent again: a
// retryable error (data.retryable, or HTTP 503, as a store outage or an
// overloaded proxy answers), an HTTP 502, 503 or 504 page of a proxy, an
// unreachable server or a broken connection (another instance may take
// the task over). The waits grow from MinTaskRetry to MaxTaskPoll, never
// shorter than the server's Retry-After or data.retryAfterMs, for at
// most TaskRetryWindow from the first failure in a row. Both are safe to
// repeat: tasks/get reads, and the server acknowledges a replayed
// tasks/update without acting on it twice. Any other failure, or one
// that outlasts the window, ends the call with a *TaskError naming the
// task, which may still be running on the server.

// Bounds of the wait between two tasks/get of a task being followed.
const (
	MinTaskPoll = 50 * time.Millisecond
	MaxTaskPoll = 5 * time.Second
)

// Retries of a tasks/get or tasks/update of a followed task that failed
// transiently: the first wait is MinTaskRetry, each next one twice the
// last, at most MaxTaskPoll (and never shorter than the server's
// Retry-After); the client gives up, with a *TaskError, when the next
// try would come more than TaskRetryWindow after the first failure in
// a row.
const (
	MinTaskRetry    = 500 * time.Millisecond
	TaskRetryWindow = 2 * time.Minute
)

// ErrTaskCancelled: the task a tool call became was cancelled (by another
// client of the same user, or by the server) before it finished.
var ErrTaskCancelled = errors.New("mcpclient: the task was cancelled before it finished")

// isTask reports whether a result is a CreateTaskResult.
func isTask(raw json.RawMessage) bool {
	var head struct {
		ResultType string `json:"resultType"`
	}
	return json.Unmarshal(raw, &head) == nil && head.ResultType == mcp.ResultTypeTask
}

// TaskUpdate is a change of a task that a call became and the client
// follows (Options.OnTaskUpdate): for a host to show which task runs, its
// status and the server's statusMessage (SEP-2663 Task), and to offer to
// cancel it (by ending the call's context: the client then sends
// tasks/cancel).
type TaskUpdate struct {
	// Tool is the tool whose call became the task.
	Tool string
	// TaskID is the server's taskId (untrusted text: clean it before
	// printing it).
	TaskID string
	// Status is the task's status; StatusMessage the server's line about
	// it ("" when none), untrusted text like every server string.
	Status        mcp.TaskStatus
	StatusMessage string
	// Polls is how many tasks/get were sent for this task so far: 0 for
	// the CreateTaskResult, then 1, 2, ….
	Polls int
}

// followTask follows the task that raw (a CreateTaskResult answering
// the tools/call out; classify refuses it to any other request) started
// and returns the tool's CallToolResult.
func (c *Client) followTask(ctx context.Context, out *outgoing, raw json.RawMessage) (json.RawMessage, error) {
	var created mcp.CreateTaskResult
	if err := json.Unmarshal(raw, &created); err != nil || created.TaskID == "" {
		return nil, &ProtocolError{Method: mcp.MethodToolsCall, Reason: "a task result without a taskId"}
	}
	id := created.TaskID
	poll := time.Duration(created.PollIntervalMs) * time.Millisecond
	poll = min(max(poll, MinTaskPoll), MaxTaskPoll)
	if created.PollIntervalMs <= 0 {
		poll = 500 * time.Millisecond
	}
	seen := TaskUpdate{Tool: out.target, TaskID: id}
	c.taskUpdate(&seen, created.Status, created.StatusMessage)
	rounds := 0
	for {
		t := time.NewTimer(poll)
		select {
		case <-ctx.Done():
			t.Stop()
			c.cancelTask(id)
			return nil, ctx.Err()
		case <-t.C:
		}
		var d struct {
			mcp.DetailedTask
			Meta map[string]json.RawMessage `json:"_meta"`
		}
		seen.Polls++
		if err := c.resend(ctx, mcp.MethodTasksGet, id, nil, &d); err != nil {
			return nil, c.lostTask(ctx, out.target, id, &TaskError{TaskID: id, Err: err})
		}
		c.taskUpdate(&seen, d.Status, d.StatusMessage)
		if d.Status.Terminal() {
			return taskOutcome(&d.DetailedTask)
		}
		switch d.Status {
		case mcp.TaskWorking:
		case mcp.TaskInputRequired:
			if rounds >= c.maxRounds {
				c.cancelTask(id)
				return nil, fmt.Errorf("%w: task %s still needs input after %d answers", ErrRoundLimit, clip(id, 40), rounds)
			}
			rounds++
			if err := c.answerTask(ctx, id, d.InputRequests, d.Meta); err != nil {
				return nil, c.lostTask(ctx, out.target, id, err)
			}
		default:
			return nil, &ProtocolError{Method: mcp.MethodTasksGet, Reason: fmt.Sprintf("unknown task status %q", clip(string(d.Status), 40))}
		}
	}
}

// taskUpdate records the task's status and message in seen and tells
// Options.OnTaskUpdate when either changed (always for the first, Polls 0).
func (c *Client) taskUpdate(seen *TaskUpdate, status mcp.TaskStatus, message string) {
	if seen.Polls > 0 && seen.Status == status && seen.StatusMessage == message {
		return
	}
	seen.Status, seen.StatusMessage = status, message
	if c.onTask != nil {
		c.onTask(*seen)
	}
}

// taskOutcome is the call's result or error for a task that ended: the
// tool's result once completed, an *RPCError with the task's error once
// failed, ErrTaskCancelled once cancelled.
func taskOutcome(d *mcp.DetailedTask) (json.RawMessage, error) {
	switch d.Status {
	case mcp.TaskCompleted:
		if len(d.Result) == 0 {
			return nil, &ProtocolError{Method: mcp.MethodTasksGet, Reason: "a completed task without a result"}
		}
		return d.Result, nil
	case mcp.TaskFailed:
		e := &RPCError{Method: mcp.MethodToolsCall, Code: -32603, Message: "the task failed"}
		var je struct {
			Code    int             `json:"code"`
			Message string          `json:"message"`
			Data    json.RawMessage `json:"data"`
		}
		if json.Unmarshal(d.Error, &je) == nil && je.Code != 0 {
			e.Code, e.Message, e.Data = je.Code, je.Message, je.Data
		}
		return nil, e
	}
	return nil, ErrTaskCancelled
}

// answerTask answers a task's pending input requests through the
// Handlers and sends them with tasks/update (resend). A handler's error
// stops it: the task is cancelled and the error returned (nothing is
// answered); any other failure is a *TaskError.
func (c *Client) answerTask(ctx context.Context, id string, raw map[string]json.RawMessage, meta map[string]json.RawMessage) error {
	requests, err := parseInputRequests(mcp.MethodTasksGet, raw)
	if err != nil {
		return &TaskError{TaskID: id, Err: err}
	}
	ir := &InputRequired{InputRequests: requests}
	if meta != nil {
		if b, err := json.Marshal(meta); err == nil {
			_ = json.Unmarshal(b, &ir.Meta)
		}
	}
	answers, err := c.Answer(ctx, ir)
	if err != nil {
		c.cancelTask(id)
		return err
	}
	responses := make(map[string]json.RawMessage, len(answers))
	for k, v := range answers {
		b, err := marshal(v)
		if err != nil {
			return &TaskError{TaskID: id, Err: fmt.Errorf("mcpclient: encoding the answer to %q: %w", k, err)}
		}
		responses[k] = b
	}
	var ack mcp.Ack
	if err := c.resend(ctx, mcp.MethodTasksUpdate, id, responses, &ack); err != nil {
		return &TaskError{TaskID: id, Err: err}
	}
	return nil
}

// lostTask is the error of a followed task that could not be followed
// on: when ctx ended, the task is cancelled and ctx's error returned; a
// *TaskError (the task may still run) gets the tool's name; any other
// error (a handler's, after which answerTask cancelled the task) is
// returned as it is.
func (c *Client) lostTask(ctx context.Context, tool, id string, err error) error {
	var te *TaskError
	if !errors.As(err, &te) {
		return err
	}
	if ctx.Err() != nil {
		c.cancelTask(id)
		return ctx.Err()
	}
	te.Tool = tool
	return te
}

// resend sends a tasks/get or tasks/update of task id, and again after
// each transient failure (see transient) until TaskRetryWindow has
// passed since the first; it returns the last error, or ctx's once ctx
// ended.
func (c *Client) resend(ctx context.Context, method, id string, responses map[string]json.RawMessage, v any) error {
	var first time.Time
	backoff := MinTaskRetry
	for {
		err := c.taskCall(ctx, method, id, responses, v)
		hint, ok := transient(err)
		if err == nil || !ok || ctx.Err() != nil {
			return err
		}
		now := time.Now()
		if first.IsZero() {
			first = now
		}
		wait := max(backoff, hint)
		if now.Add(wait).Sub(first) > TaskRetryWindow {
			return err
		}
		// Debug: a host shows the task's own status line; a retry that
		// gives up ends in a TaskError the host explains.
		c.log.Debug("mcpclient: retrying a task request that failed transiently", "method", method, "wait", wait, "err", err)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		backoff = min(2*backoff, MaxTaskPoll)
	}
}

// transient reports whether a failed request may succeed if sent again
// unchanged, and the least wait the server asked for: a retryable
// JSON-RPC error (data.retryable, or HTTP 503), a proxy's 502, 503 or
// 504, no connection or a broken one, a response stream cut short.
func transient(err error) (time.Duration, bool) {
	var (
		rpc    *RPCError
		conn   *ConnectionError
		notMCP *NotMCPError
	)
	switch {
	case err == nil:
		return 0, false
	case errors.As(err, &rpc):
		var d struct {
			Retryable    bool `json:"retryable"`
			RetryAfterMs int  `json:"retryAfterMs"`
		}
		_ = json.Unmarshal(rpc.Data, &d)
		hint := max(time.Duration(d.RetryAfterMs)*time.Millisecond, rpc.RetryAfter)
		return hint, d.Retryable || rpc.HTTPStatus == http.StatusServiceUnavailable
	case errors.As(err, &notMCP):
		switch notMCP.StatusCode {
		case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
			return notMCP.RetryAfter, true
		}
		return 0, false
	}
	return 0, errors.As(err, &conn) || errors.Is(err, ErrStreamEnded)
}

// cancelTask sends tasks/cancel for id, best effort, even when the
// caller's context has ended.
func (c *Client) cancelTask(id string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var ack mcp.Ack
	if err := c.taskCall(ctx, mcp.MethodTasksCancel, id, nil, &ack); err != nil {
		c.log.Warn("mcpclient: tasks/cancel failed", "err", err)
	}
}

// taskCall sends a tasks method for id and decodes its result into v.
func (c *Client) taskCall(ctx context.Context, method, id string, responses map[string]json.RawMessage, v any) error {
	tid := id
	return c.simple(ctx, &outgoing{method: method, name: id, hasName: true, target: id,
		params: reqParams{TaskID: &tid, InputResponses: responses}}, v)
}
