package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcp-elicit/elicit/jsonrpc"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/store"
)

// readsStore is a TaskStore that records the ids it was asked about.
type readsStore struct {
	TaskStore
	mu  sync.Mutex
	ids map[string]int
}

func (r *readsStore) seen(id string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ids[id]
}

func (r *readsStore) note(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ids[id]++
}

func (r *readsStore) GetTask(ctx context.Context, id string) (*store.Task, error) {
	r.note(id)
	return r.TaskStore.GetTask(ctx, id)
}

func (r *readsStore) UpdateTask(ctx context.Context, id string, update func(*store.Task) error) (*store.Task, error) {
	r.note(id)
	return r.TaskStore.UpdateTask(ctx, id, update)
}

// snapshot reads every task of ids from st.
func snapshot(t *testing.T, st TaskStore, ids []string) map[string]*store.Task {
	t.Helper()
	m := map[string]*store.Task{}
	for _, id := range ids {
		rec, err := st.GetTask(context.Background(), id)
		if err != nil {
			t.Fatalf("task %s: %v", id, err)
		}
		m[id] = rec
	}
	return m
}

// TestTaskErrors: for each bad task id (another user's, unknown, expired,
// of the wrong type, empty, missing, oversized, not of this server's
// form) and each task method, the error the tasks extension specifies
// (SEP-2663 §Error Handling: -32602 for an invalid or nonexistent taskId),
// and an update or cancel of a task that has ended is acknowledged
// (§Task Update Requests: answers to keys that are not outstanding are
// ignored; §Task Cancellation: the ack); in every case every stored task
// reads back unchanged, and an id not of this server's form never reaches
// the store.
func TestTaskErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rs := &readsStore{TaskStore: NewMemoryTaskStore(), ids: map[string]int{}}
		s, _ := taskServer(t, &TaskOptions{Store: rs})
		alice := rpc{s, "alice"}
		live := startTask(t, alice, "two_questions", `{}`)
		completed := startTask(t, alice, "outcomes", `{"kind":"ok"}`)
		failed := startTask(t, alice, "outcomes", `{"kind":"rpc_error"}`)
		cancelled := startTask(t, alice, "sleepy", `{}`)
		synctest.Wait()
		mustCall(t, alice, taskReq("tasks/cancel", cancelled, tasksCaps, ""))
		s.WaitTasks()
		expired := strings.Repeat("e0", 16)
		past := time.Now().Add(-2 * time.Hour).UTC()
		if err := rs.CreateTask(context.Background(), &store.Task{ID: expired, Principal: "alice", Tool: "two_questions",
			Capabilities: json.RawMessage(tasksCaps), Status: mcp.TaskInputRequired, CreatedAt: past, UpdatedAt: past,
			ExpiresAt: past.Add(time.Hour), OperationID: strings.Repeat("ab", 16)}, 0); err != nil {
			t.Fatal(err)
		}
		ids := []string{live, completed, failed, cancelled, expired}
		before := snapshot(t, rs, ids)
		for _, id := range ids[:4] {
			if st := before[id].Status; st != map[string]mcp.TaskStatus{live: mcp.TaskInputRequired, completed: mcp.TaskCompleted,
				failed: mcp.TaskFailed, cancelled: mcp.TaskCancelled}[id] {
				t.Fatalf("task %s is %s", id, st)
			}
		}

		const unknown = "Unknown task"
		idParam := func(id string) string { b, _ := json.Marshal(id); return `"taskId":` + string(b) }
		answer := `,"inputResponses":{"a":{"action":"accept","content":{"confirm":true}}}`
		tests := []struct {
			name, user, params string
			code               int    // 0: acknowledged
			msg                string // exact, or a prefix ending in "…"
			notRead            string // an id that must not reach the store
		}{
			{"another user's task", "bob", idParam(live), jsonrpc.CodeInvalidParams, unknown, ""},
			{"another user's ended task", "bob", idParam(completed), jsonrpc.CodeInvalidParams, unknown, ""},
			{"unknown id", "alice", idParam(strings.Repeat("0f", 16)), jsonrpc.CodeInvalidParams, unknown, ""},
			{"expired task", "alice", idParam(expired), jsonrpc.CodeInvalidParams, unknown, ""},
			{"id a number", "alice", `"taskId":12`, jsonrpc.CodeInvalidParams, "Invalid params: …", ""},
			{"id an object", "alice", `"taskId":{"id":"` + live + `"}`, jsonrpc.CodeInvalidParams, "Invalid params: …", ""},
			{"id null", "alice", `"taskId":null`, jsonrpc.CodeInvalidParams, "Invalid params: taskId is required", ""},
			{"id empty", "alice", idParam(""), jsonrpc.CodeInvalidParams, "Invalid params: taskId is required", ""},
			{"id oversized", "alice", idParam(live + strings.Repeat("a", 64<<10)), jsonrpc.CodeInvalidParams, unknown, live + strings.Repeat("a", 64<<10)},
			{"id upper case", "alice", idParam(strings.ToUpper(live)), jsonrpc.CodeInvalidParams, unknown, strings.ToUpper(live)},
			{"id one short", "alice", idParam(live[1:]), jsonrpc.CodeInvalidParams, unknown, live[1:]},
			{"id a path", "alice", idParam("../" + live[3:]), jsonrpc.CodeInvalidParams, unknown, "../" + live[3:]},
			{"id with a NUL", "alice", idParam(live[:31] + "\x00"), jsonrpc.CodeInvalidParams, unknown, live[:31] + "\x00"},
			{"completed task", "alice", idParam(completed), 0, "", ""},
			{"failed task", "alice", idParam(failed), 0, "", ""},
			{"cancelled task", "alice", idParam(cancelled), 0, "", ""},
		}
		for _, tt := range tests { // no t.Run inside a synctest bubble
			for _, method := range []string{"tasks/get", "tasks/update", "tasks/cancel"} {
				if tt.code == 0 && method == "tasks/get" {
					continue // reading an ended task is no error
				}
				params := tt.params
				if method == "tasks/update" {
					params += answer
				}
				body := fmt.Sprintf(`{"jsonrpc":"2.0","id":9,"method":%q,"params":{%s,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":%s}}}`,
					method, params, tasksCaps)
				r, err := rpc{s, tt.user}.call(t, body)
				if problem := taskErrorProblem(r, err, tt.code, tt.msg, live); problem != "" {
					t.Errorf("%s, %s: %s", tt.name, method, problem)
				}
				if tt.notRead != "" && rs.seen(tt.notRead) != 0 {
					t.Errorf("%s, %s: the id reached the store", tt.name, method)
				}
				if after := snapshot(t, rs, ids); !reflect.DeepEqual(after, before) {
					t.Fatalf("%s, %s changed a task:\nbefore %+v\nafter  %+v", tt.name, method, before, after)
				}
			}
		}
		mustCall(t, alice, taskReq("tasks/cancel", live, tasksCaps, ""))
		s.WaitTasks()
	})
}

// taskErrorProblem says how a tasks/* answer differs from the empty ack
// (code 0) or from the error code with message msg (exact, or a prefix
// ending in "…"), and whether an error names id or carries data; "" when
// it is as wanted.
func taskErrorProblem(r map[string]any, err *jsonrpc.Error, code int, msg, id string) string {
	switch {
	case code == 0 && (err != nil || r["resultType"] != "complete" || len(r) != 2):
		return fmt.Sprintf("want the empty ack, got %v %v", r, err)
	case code != 0 && (err == nil || err.Code != code || !messageIs(err.Message, msg)):
		return fmt.Sprintf("want %d %q, got %v %v", code, msg, r, err)
	case err != nil && (strings.Contains(err.Message, id) || err.Data != nil):
		return fmt.Sprintf("the error says too much: %v", err)
	}
	return ""
}

// messageIs reports whether msg is want, or starts with want's text before
// a final "…".
func messageIs(msg, want string) bool {
	if p, ok := strings.CutSuffix(want, "…"); ok {
		return strings.HasPrefix(msg, p) && len(msg) > len(p)
	}
	return msg == want
}
