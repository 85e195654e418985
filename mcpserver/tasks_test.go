package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcp-elicit/elicit/elicit"
	"github.com/mcp-elicit/elicit/jsonrpc"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/store"
)

const (
	tasksCaps   = `{"elicitation":{},"extensions":{"io.modelcontextprotocol/tasks":{}}}`
	confirmForm = `{"type":"object","properties":{"confirm":{"type":"boolean"}},"required":["confirm"]}`
)

// taskServer has the tools the task tests call; effects counts the
// side effects of "two_questions", which must happen once per task.
func taskServer(t *testing.T, o *TaskOptions) (*Server, *atomic.Int32) {
	t.Helper()
	s := New(mcp.Implementation{Name: "tasks", Version: "1"}, nil)
	s.EnableTasks(o)
	effects := &atomic.Int32{}
	optional := &HandlerOptions{Tasks: TaskOptional}
	s.AddToolWith(&mcp.Tool{Name: "sleepy"}, func(ctx context.Context, r *Request) (Reply, error) {
		if r.TaskAllowed() {
			return RunAsTask(), nil
		}
		select {
		case <-time.After(time.Second):
			return Text("slept in " + map[bool]string{true: "task", false: "call"}[r.TaskID != ""]), nil
		case <-ctx.Done():
			effects.Add(100) // the run saw the cancellation
			return nil, ctx.Err()
		}
	}, optional)
	s.AddToolWith(&mcp.Tool{Name: "required"}, func(ctx context.Context, r *Request) (Reply, error) {
		if r.TaskAllowed() {
			return RunAsTask(), nil
		}
		return Text("ran"), nil
	}, &HandlerOptions{Tasks: TaskRequired})
	s.AddToolWith(&mcp.Tool{Name: "two_questions"}, func(ctx context.Context, r *Request) (Reply, error) {
		if r.TaskAllowed() {
			return RunAsTask(), nil
		}
		a, b := r.Elicitation("a"), r.Elicitation("b")
		if a.Outcome == elicit.Missing || b.Outcome == elicit.Missing {
			return Ask().ElicitForm("a", "First?", json.RawMessage(confirmForm)).ElicitForm("b", "Second?", json.RawMessage(confirmForm)), nil
		}
		if a.Outcome != elicit.Accepted || b.Outcome != elicit.Accepted {
			return ToolError("not confirmed"), nil
		}
		effects.Add(1)
		return Text("both confirmed"), nil
	}, optional)
	s.AddToolWith(&mcp.Tool{Name: "outcomes"}, func(ctx context.Context, r *Request) (Reply, error) {
		if r.TaskAllowed() {
			return RunAsTask(), nil
		}
		var args struct{ Kind string }
		_ = json.Unmarshal(r.Arguments, &args)
		switch args.Kind {
		case "tool_error":
			return ToolError("the tool failed"), nil
		case "rpc_error":
			return nil, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "bad thing")
		case "error":
			return nil, errors.New("db password wrong")
		case "panic":
			panic("secret-detail")
		case "sampling":
			return Ask().Sample("s", &mcp.CreateMessageRequestParams{Messages: []mcp.SamplingMessage{{Role: "user", Content: mcp.TextContent("hi")}}, MaxTokens: 5}), nil
		case "again":
			return RunAsTask(), nil
		}
		return Text("ok"), nil
	}, optional)
	s.AddToolWith(&mcp.Tool{Name: "name_then_task"}, func(ctx context.Context, r *Request) (Reply, error) {
		a := r.Elicitation("user_name")
		if a.Outcome != elicit.Accepted {
			return Ask().ElicitForm("user_name", "Your name?", json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`)), nil
		}
		if r.TaskAllowed() {
			return RunAsTask(), nil
		}
		return Text("Hello, " + a.Content["name"].(string) + " (task " + map[bool]string{true: "yes", false: "no"}[r.TaskID != ""] + ")"), nil
	}, &HandlerOptions{Tasks: TaskRequired})
	s.AddTool(&mcp.Tool{Name: "plain"}, func(ctx context.Context, r *Request) (Reply, error) {
		return RunAsTask(), nil // not registered for tasks: a handler bug
	})
	return s, effects
}

func taskReq(method, taskID, caps, extra string) string {
	return `{"jsonrpc":"2.0","id":2,"method":"` + method + `","params":{"taskId":"` + taskID + `"` + extra +
		`,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + caps + `}}}`
}

func toolCallArgs(name, args, caps string) string {
	return strings.Replace(toolCall(name, caps, ""), `"arguments":{}`, `"arguments":`+args, 1)
}

func mustCall(t *testing.T, c rpc, body string) map[string]any {
	t.Helper()
	r, err := c.call(t, body)
	if err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	return r
}

func startTask(t *testing.T, c rpc, name, args string) string {
	t.Helper()
	r := mustCall(t, c, toolCallArgs(name, args, tasksCaps))
	id, _ := r["taskId"].(string)
	if r["resultType"] != "task" || id == "" {
		t.Fatalf("not a CreateTaskResult: %v", r)
	}
	return id
}

func getTask(t *testing.T, c rpc, id string) map[string]any {
	t.Helper()
	return mustCall(t, c, taskReq("tasks/get", id, tasksCaps, ""))
}

func TestTaskCreateAndComplete(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, _ := taskServer(t, nil)
		c := rpc{s, "alice"}
		r := mustCall(t, c, toolCall("sleepy", tasksCaps, ""))
		for _, k := range []string{"result", "error", "inputRequests", "requestState", "task", "content", "ttl", "pollInterval"} {
			if _, ok := r[k]; ok {
				t.Errorf("CreateTaskResult carries %q: %v", k, r)
			}
		}
		if r["resultType"] != "task" || r["status"] != "working" || r["ttlMs"] != float64(3600000) || r["pollIntervalMs"] != float64(500) {
			t.Fatalf("CreateTaskResult %v", r)
		}
		if ts, _ := r["createdAt"].(string); !strings.HasSuffix(ts, "Z") || r["lastUpdatedAt"] != ts {
			t.Fatalf("times %v %v", r["createdAt"], r["lastUpdatedAt"])
		}
		id := r["taskId"].(string)
		if g := getTask(t, c, id); g["status"] != "working" || g["resultType"] != "complete" || g["result"] != nil {
			t.Fatalf("tasks/get while working: %v", g)
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		g := getTask(t, c, id)
		if g["status"] != "completed" || text(g["result"].(map[string]any)) != "slept in task" {
			t.Fatalf("tasks/get after completion: %v", g)
		}
		s.WaitTasks()
	})
}

// TestTaskNegotiatedPerRequest: without the extension in this request's
// _meta an optional tool answers in the call, a required one is refused
// with -32021 naming the extension, and the tasks methods are refused.
func TestTaskNegotiatedPerRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, _ := taskServer(t, nil)
		c := rpc{s, "alice"}
		if r := mustCall(t, c, toolCall("sleepy", `{}`, "")); r["resultType"] != "complete" || text(r) != "slept in call" {
			t.Fatalf("optional tool without the extension: %v", r)
		}
		wantData := `{"requiredCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}`
		_, err := c.call(t, toolCall("required", `{"elicitation":{}}`, ""))
		if data, _ := json.Marshal(errData(err)); err == nil || err.Code != mcp.CodeMissingRequiredClientCapability || string(data) != wantData {
			t.Fatalf("required tool without the extension: %v %s", err, data)
		}
		id := startTask(t, c, "required", `{}`)
		for _, m := range []string{"tasks/get", "tasks/update", "tasks/cancel"} {
			extra := ""
			if m == "tasks/update" {
				extra = `,"inputResponses":{}`
			}
			_, err := c.call(t, taskReq(m, id, `{"elicitation":{}}`, extra))
			if err == nil || err.Code != mcp.CodeMissingRequiredClientCapability {
				t.Errorf("%s without the extension: %v", m, err)
			}
		}
		s.WaitTasks()
	})
}

func errData(err *jsonrpc.Error) any {
	if err == nil {
		return nil
	}
	return err.Data
}

// TestTaskBoundToUser: another user's task id, an unknown one and a
// malformed one are all refused with -32602, and the task is unchanged.
func TestTaskBoundToUser(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, _ := taskServer(t, nil)
		alice, bob := rpc{s, "alice"}, rpc{s, "bob"}
		id := startTask(t, alice, "two_questions", `{}`)
		synctest.Wait()
		tests := []struct{ name, body string }{
			{"another user's get", taskReq("tasks/get", id, tasksCaps, "")},
			{"another user's cancel", taskReq("tasks/cancel", id, tasksCaps, "")},
			{"another user's update", taskReq("tasks/update", id, tasksCaps, `,"inputResponses":{"a":{"action":"accept","content":{"confirm":true}}}`)},
			{"unknown id", taskReq("tasks/get", "0123456789abcdef0123456789abcdef", tasksCaps, "")},
			{"empty id", taskReq("tasks/get", "", tasksCaps, "")},
			{"id not a string", strings.Replace(taskReq("tasks/get", "x", tasksCaps, ""), `"taskId":"x"`, `"taskId":12`, 1)},
			{"no id", strings.Replace(taskReq("tasks/get", "x", tasksCaps, ""), `"taskId":"x",`, ``, 1)},
		}
		for _, tt := range tests { // no t.Run inside a synctest bubble
			_, err := bob.call(t, tt.body)
			if err == nil || err.Code != jsonrpc.CodeInvalidParams {
				t.Errorf("%s: got %v", tt.name, err)
			} else if strings.Contains(err.Message, id) {
				t.Errorf("%s: error names the task: %v", tt.name, err)
			}
		}
		if g := getTask(t, alice, id); g["status"] != "input_required" || len(g["inputRequests"].(map[string]any)) != 2 {
			t.Fatalf("task changed: %v", g)
		}
		mustCall(t, alice, taskReq("tasks/cancel", id, tasksCaps, ""))
		s.WaitTasks()
	})
}

// TestTaskInputRequired: a task that asks moves to input_required; answers
// are checked, may come one at a time, and a replayed update has no
// second effect.
func TestTaskInputRequired(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, effects := taskServer(t, nil)
		c := rpc{s, "alice"}
		id := startTask(t, c, "two_questions", `{}`)
		synctest.Wait()
		g := getTask(t, c, id)
		reqs, _ := g["inputRequests"].(map[string]any)
		if g["status"] != "input_required" || len(reqs) != 2 || reqs["a"].(map[string]any)["method"] != "elicitation/create" {
			t.Fatalf("tasks/get: %v", g)
		}
		u := taskUpdates{c, id}
		u.checkRefused(t)
		u.checkPartial(t)
		u.checkLastAnswerOnce(t, effects)
		s.WaitTasks()
	})
}

// taskUpdates sends tasks/update for one task as one user.
type taskUpdates struct {
	c  rpc
	id string
}

func (u taskUpdates) update(t *testing.T, responses string) (map[string]any, *jsonrpc.Error) {
	return u.c.call(t, taskReq("tasks/update", u.id, tasksCaps, `,"inputResponses":`+responses))
}

// checkRefused: updates that are not valid answers are refused, and
// nothing of them is stored.
func (u taskUpdates) checkRefused(t *testing.T) {
	t.Helper()
	// Not a valid elicitation result: refused, nothing stored.
	if _, err := u.update(t, `{"a":{"action":"maybe"}}`); err == nil || err.Code != jsonrpc.CodeInvalidParams {
		t.Fatalf("invalid answer: %v", err)
	}
	if _, err := u.update(t, `null`); err == nil || err.Code != jsonrpc.CodeInvalidParams {
		t.Fatalf("null inputResponses: %v", err)
	}
	if g := getTask(t, u.c, u.id); len(g["inputRequests"].(map[string]any)) != 2 {
		t.Fatalf("refused update changed the task: %v", g)
	}
}

// checkPartial: unknown keys are acknowledged and ignored; answering "a"
// alone is acknowledged, and the task then asks only "b".
func (u taskUpdates) checkPartial(t *testing.T) {
	t.Helper()
	// Unknown keys are ignored with an ack.
	if r, err := u.update(t, `{"zzz":{"action":"accept"}}`); err != nil || r["resultType"] != "complete" || len(r) != 2 {
		t.Fatalf("unknown key: %v %v", r, err)
	}
	ack, err := u.update(t, `{"a":{"action":"accept","content":{"confirm":true}}}`)
	if err != nil || ack["resultType"] != "complete" || ack["taskId"] != nil || ack["status"] != nil {
		t.Fatalf("partial update ack: %v %v", ack, err)
	}
	g := getTask(t, u.c, u.id)
	if reqs := g["inputRequests"].(map[string]any); g["status"] != "input_required" || len(reqs) != 1 || reqs["b"] == nil {
		t.Fatalf("after the partial update: %v", g)
	}
}

// checkLastAnswerOnce: the last answer, sent three times, completes the
// task with one effect; an update after that is acknowledged and ignored.
func (u taskUpdates) checkLastAnswerOnce(t *testing.T, effects *atomic.Int32) {
	t.Helper()
	last := `{"b":{"action":"accept","content":{"confirm":true}}}`
	for range 3 { // replayed: one effect
		// The first resumes the task; a replay is acknowledged and
		// ignored, before or after the task has finished.
		if _, err := u.update(t, last); err != nil {
			t.Fatal(err)
		}
	}
	synctest.Wait()
	if g := getTask(t, u.c, u.id); g["status"] != "completed" || text(g["result"].(map[string]any)) != "both confirmed" {
		t.Fatalf("after the last answer: %v", g)
	}
	if r, err := u.update(t, last); err != nil || r["resultType"] != "complete" {
		t.Fatalf("update of a finished task: %v %v", r, err)
	}
	if n := effects.Load(); n != 1 {
		t.Fatalf("effects = %d, want 1", n)
	}
}

// TestTaskConcurrentUpdates: the same last answer sent concurrently
// resumes the task once.
func TestTaskConcurrentUpdates(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, effects := taskServer(t, nil)
		c := rpc{s, "alice"}
		id := startTask(t, c, "two_questions", `{}`)
		synctest.Wait()
		all := taskReq("tasks/update", id, tasksCaps, `,"inputResponses":{"a":{"action":"accept","content":{"confirm":true}},"b":{"action":"accept","content":{"confirm":true}}}`)
		done := make(chan *jsonrpc.Error)
		for range 8 {
			go func() {
				_, err := c.call(t, all)
				done <- err
			}()
		}
		for range 8 {
			// One resumes the task; the others are acknowledged and
			// ignored, before or after it finished. None has an effect.
			if err := <-done; err != nil {
				t.Error(err)
			}
		}
		s.WaitTasks()
		if g := getTask(t, c, id); g["status"] != "completed" || effects.Load() != 1 {
			t.Fatalf("status %v, effects %d", g["status"], effects.Load())
		}
	})
}

func TestTaskCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, effects := taskServer(t, nil)
		c := rpc{s, "alice"}
		id := startTask(t, c, "sleepy", `{}`)
		synctest.Wait()
		ack := mustCall(t, c, taskReq("tasks/cancel", id, tasksCaps, ""))
		if ack["resultType"] != "complete" || ack["status"] != nil {
			t.Fatalf("cancel ack %v", ack)
		}
		s.WaitTasks()
		if g := getTask(t, c, id); g["status"] != "cancelled" || g["result"] != nil || g["error"] != nil {
			t.Fatalf("after cancel: %v", g)
		}
		if effects.Load() != 100 {
			t.Fatal("the running handler's context was not cancelled")
		}
		if again := mustCall(t, c, taskReq("tasks/cancel", id, tasksCaps, "")); again["resultType"] != "complete" {
			t.Fatalf("cancel of a cancelled task: %v", again)
		}
		if r, err := c.call(t, taskReq("tasks/update", id, tasksCaps, `,"inputResponses":{}`)); err != nil || r["resultType"] != "complete" {
			t.Fatalf("update of a cancelled task: %v %v", r, err)
		}
	})
}

// TestTaskOutcomes: a tool error completes with isError; protocol errors
// fail with the error inlined and no result; nothing secret leaks.
func TestTaskOutcomes(t *testing.T) {
	tests := []struct {
		kind, status string
		code         float64
	}{
		{"tool_error", "completed", 0},
		{"rpc_error", "failed", jsonrpc.CodeInvalidParams},
		{"error", "failed", jsonrpc.CodeInternalError},
		{"panic", "failed", jsonrpc.CodeInternalError},
		{"sampling", "failed", mcp.CodeMissingRequiredClientCapability}, // the call declared no sampling
		{"again", "failed", jsonrpc.CodeInternalError},                  // RunAsTask inside a task
	}
	for _, tt := range tests {
		t.Run(tt.kind, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s, _ := taskServer(t, nil)
				c := rpc{s, "alice"}
				id := startTask(t, c, "outcomes", `{"kind":"`+tt.kind+`"}`)
				s.WaitTasks()
				g := getTask(t, c, id)
				b, _ := json.Marshal(g)
				if g["status"] != tt.status || strings.Contains(string(b), "secret") || strings.Contains(string(b), "password") {
					t.Fatalf("tasks/get %s", b)
				}
				if tt.status == "completed" {
					if res := g["result"].(map[string]any); res["isError"] != true || g["error"] != nil {
						t.Fatalf("tool error: %s", b)
					}
					return
				}
				e, _ := g["error"].(map[string]any)
				if g["result"] != nil || e == nil || e["code"] != tt.code || e["message"] == "" {
					t.Fatalf("failed task: %s", b)
				}
			})
		})
	}
}

// TestTaskAfterMRTR: input gathered in the call's MRTR rounds goes with
// the task, and the task's result shows it.
func TestTaskAfterMRTR(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, _ := taskServer(t, nil)
		c := rpc{s, "alice"}
		r1 := mustCall(t, c, toolCall("name_then_task", tasksCaps, ""))
		if r1["resultType"] != "input_required" || r1["taskId"] != nil {
			t.Fatalf("round 1: %v", r1)
		}
		r2 := mustCall(t, c, toolCall("name_then_task", tasksCaps, retry(r1["requestState"].(string), `{"user_name":{"action":"accept","content":{"name":"Alice"}}}`)))
		if r2["resultType"] != "task" || r2["requestState"] != nil || r2["inputRequests"] != nil {
			t.Fatalf("round 2: %v", r2)
		}
		s.WaitTasks()
		g := getTask(t, c, r2["taskId"].(string))
		if g["status"] != "completed" || text(g["result"].(map[string]any)) != "Hello, Alice (task yes)" {
			t.Fatalf("task: %v", g)
		}
	})
}

func TestRunAsTaskNotAllowed(t *testing.T) {
	s, _ := taskServer(t, nil)
	_, err := rpc{s, "alice"}.call(t, toolCall("plain", tasksCaps, ""))
	if err == nil || err.Code != jsonrpc.CodeInternalError {
		t.Fatalf("got %v", err)
	}
}

// TestTaskTTL: a task reads as unknown once its TTL has passed, and
// SweepTasks deletes it.
func TestTaskTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var now atomic.Int64
		start := time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)
		now.Store(start.UnixNano())
		ts := NewMemoryTaskStore()
		s, _ := taskServer(t, &TaskOptions{Store: ts, TTL: time.Minute, Now: func() time.Time { return time.Unix(0, now.Load()) }})
		c := rpc{s, "alice"}
		r := mustCall(t, c, toolCallArgs("outcomes", `{"kind":"ok"}`, tasksCaps))
		id := r["taskId"].(string)
		if r["ttlMs"] != float64(60000) || r["createdAt"] != "2026-07-28T12:00:00.000Z" {
			t.Fatalf("CreateTaskResult %v", r)
		}
		s.WaitTasks()
		now.Store(start.Add(59 * time.Second).UnixNano())
		if g := getTask(t, c, id); g["status"] != "completed" {
			t.Fatalf("before the TTL: %v", g)
		}
		now.Store(start.Add(time.Minute).UnixNano())
		if _, err := c.call(t, taskReq("tasks/get", id, tasksCaps, "")); err == nil || err.Code != jsonrpc.CodeInvalidParams {
			t.Fatalf("after the TTL: %v", err)
		}
		if n, err := s.SweepTasks(context.Background()); n != 1 || err != nil {
			t.Fatalf("SweepTasks = %d, %v", n, err)
		}
		if _, err := ts.GetTask(context.Background(), id); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("swept task still stored: %v", err)
		}
	})
}

// TestTasksMethodsOnlyWhenEnabled: without EnableTasks the tasks methods
// do not exist and the extension is not advertised.
func TestTasksMethodsOnlyWhenEnabled(t *testing.T) {
	s := New(mcp.Implementation{Name: "x", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "t"}, func(ctx context.Context, r *Request) (Reply, error) { return Text("x"), nil })
	if _, err := (rpc{s, ""}).call(t, taskReq("tasks/get", "x", tasksCaps, "")); err == nil || err.Code != jsonrpc.CodeMethodNotFound {
		t.Fatalf("got %v", err)
	}
	if caps := s.Capabilities(); caps.HasExtension(mcp.ExtensionTasks) {
		t.Fatal("tasks advertised")
	}
	s.EnableTasks(nil)
	if caps := s.Capabilities(); !caps.HasExtension(mcp.ExtensionTasks) || !s.known("tasks/cancel") || s.known("tasks/result") || s.known("tasks/list") {
		t.Fatal("EnableTasks did not take")
	}
}

// TestTaskTakeover: a working task whose lease ran out (the instance
// running it stopped) is taken over by the instance a tasks/get reaches,
// which runs its handler again; a live lease is left alone.
func TestTaskTakeover(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ts := NewMemoryTaskStore()
		s, _ := taskServer(t, &TaskOptions{Store: ts, Lease: 3 * time.Second})
		c := rpc{s, "alice"}
		now := time.Now().UTC()
		orphan := func(id string, lease time.Time) {
			err := ts.CreateTask(context.Background(), &store.Task{ID: id, Principal: "alice", Tool: "two_questions",
				Capabilities: json.RawMessage(tasksCaps), Status: mcp.TaskWorking, CreatedAt: now, UpdatedAt: now,
				ExpiresAt: now.Add(time.Hour), LeaseUntil: lease, OperationID: strings.Repeat("ab", 16)}, 0)
			if err != nil {
				t.Fatal(err)
			}
		}
		dead, alive := strings.Repeat("de", 16), strings.Repeat("a1", 16)
		orphan(dead, now.Add(-time.Second))
		orphan(alive, now.Add(time.Second))
		getTask(t, c, dead)
		getTask(t, c, alive)
		s.WaitTasks()
		if g := getTask(t, c, dead); g["status"] != "input_required" {
			t.Fatalf("the orphaned task was not taken over: %v", g)
		}
		if g := getTask(t, c, alive); g["status"] != "working" {
			t.Fatalf("a task with a live lease was run here: %v", g)
		}
	})
}

// TestTaskLeaseRenewed: while a run lasts longer than the lease, its
// instance renews it, so another instance on the same store does not take
// the task over: the handler runs once, on the first instance.
func TestTaskLeaseRenewed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ts := NewMemoryTaskStore()
		instance := func(runs *atomic.Int32) *Server {
			s := New(mcp.Implementation{Name: "i", Version: "1"}, nil)
			s.EnableTasks(&TaskOptions{Store: ts, Lease: 300 * time.Millisecond})
			s.AddToolWith(&mcp.Tool{Name: "slow"}, func(ctx context.Context, r *Request) (Reply, error) {
				if r.TaskAllowed() {
					return RunAsTask(), nil
				}
				runs.Add(1)
				time.Sleep(time.Second)
				return Text("done"), nil
			}, &HandlerOptions{Tasks: TaskOptional})
			return s
		}
		var runsA, runsB atomic.Int32
		a, b := instance(&runsA), instance(&runsB)
		id := startTask(t, rpc{a, "alice"}, "slow", `{}`)
		for range 8 {
			time.Sleep(100 * time.Millisecond)
			getTask(t, rpc{b, "alice"}, id)
		}
		a.WaitTasks()
		b.WaitTasks()
		if g := getTask(t, rpc{b, "alice"}, id); g["status"] != "completed" || runsA.Load() != 1 || runsB.Load() != 0 {
			t.Fatalf("status %v; runs on a %d, on b %d", g["status"], runsA.Load(), runsB.Load())
		}
	})
}
