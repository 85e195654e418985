package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/store"
)

// TaskStore is what mcpserver.TaskStore asks of a store for the tasks
// extension; the contract is written on mcpserver.TaskStore.
type TaskStore = store.Tasks

// RunTasks runs the task store contract against stores returned by open,
// which must return an empty one every time.
func RunTasks(t *testing.T, open func(t *testing.T) TaskStore) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, s TaskStore)
	}{
		{"RoundTrip", testTaskRoundTrip},
		{"DuplicateID", testTaskDuplicateID},
		{"NotFound", testTaskNotFound},
		{"UpdateRefused", testTaskUpdateRefused},
		{"ConcurrentUpdates", testTaskConcurrentUpdates},
		{"Copies", testTaskCopies},
		{"DeleteExpired", testTaskDeleteExpired},
		{"LiveLimit", testTaskLiveLimit},
		{"LiveLimitConcurrent", testTaskLiveLimitConcurrent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.fn(t, open(t)) })
	}
}

var taskBase = time.Date(2026, 7, 28, 9, 30, 15, 123456000, time.UTC)

// fullTask has every field set.
func fullTask(id string) *store.Task {
	return &store.Task{
		ID: id, Principal: "alice", Tool: "export", Arguments: json.RawMessage(`{"period":"2026-Q2"}`),
		Capabilities: json.RawMessage(`{"elicitation":{},"extensions":{"io.modelcontextprotocol/tasks":{}}}`),
		Status:       mcp.TaskInputRequired, StatusMessage: "waiting for the recipient",
		CreatedAt: taskBase, UpdatedAt: taskBase.Add(time.Second), ExpiresAt: taskBase.Add(time.Hour),
		LeaseUntil:  taskBase.Add(30 * time.Second),
		OperationID: "0123456789abcdef0123456789abcdef", Round: 2, Asked: []byte{1, 0, 0xff, 7},
		InputRequests: map[string]json.RawMessage{"to": json.RawMessage(`{"method":"elicitation/create","params":{"message":"Who?"}}`)},
		Responses:     map[string]json.RawMessage{"ok": json.RawMessage(`{"action":"accept","content":{"confirm":true}}`)},
		Result:        json.RawMessage(`{"content":[]}`), Error: json.RawMessage(`{"code":-32603,"message":"Internal error"}`),
	}
}

// sameTask reports how got differs from want ("" when it does not):
// times compare as instants, nil and empty maps are the same, JSON
// compares after compaction.
func sameTask(got, want *store.Task) string {
	switch {
	case got.ID != want.ID, got.Principal != want.Principal, got.Tool != want.Tool, got.Status != want.Status,
		got.StatusMessage != want.StatusMessage, got.OperationID != want.OperationID, got.Round != want.Round:
		return fmt.Sprintf("scalars: got %+v", got)
	case !got.CreatedAt.Equal(want.CreatedAt), !got.UpdatedAt.Equal(want.UpdatedAt),
		got.ExpiresAt.IsZero() != want.ExpiresAt.IsZero() || !got.ExpiresAt.Equal(want.ExpiresAt),
		got.LeaseUntil.IsZero() != want.LeaseUntil.IsZero() || !got.LeaseUntil.Equal(want.LeaseUntil):
		return fmt.Sprintf("times: got %v %v %v %v", got.CreatedAt, got.UpdatedAt, got.ExpiresAt, got.LeaseUntil)
	case !bytes.Equal(got.Asked, want.Asked):
		return fmt.Sprintf("asked: got %v", got.Asked)
	}
	for name, pair := range map[string][2]json.RawMessage{
		"arguments": {got.Arguments, want.Arguments}, "capabilities": {got.Capabilities, want.Capabilities},
		"result": {got.Result, want.Result}, "error": {got.Error, want.Error},
	} {
		if !sameJSON(pair[0], pair[1]) {
			return fmt.Sprintf("%s: got %s, want %s", name, pair[0], pair[1])
		}
	}
	for name, pair := range map[string][2]map[string]json.RawMessage{
		"inputRequests": {got.InputRequests, want.InputRequests}, "responses": {got.Responses, want.Responses},
	} {
		if len(pair[0]) != len(pair[1]) {
			return fmt.Sprintf("%s: got %d entries, want %d", name, len(pair[0]), len(pair[1]))
		}
		for k, v := range pair[1] {
			if !sameJSON(pair[0][k], v) {
				return fmt.Sprintf("%s[%s]: got %s, want %s", name, k, pair[0][k], v)
			}
		}
	}
	return ""
}

func sameJSON(a, b json.RawMessage) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	var ca, cb bytes.Buffer
	if json.Compact(&ca, a) != nil || json.Compact(&cb, b) != nil {
		return bytes.Equal(a, b)
	}
	return bytes.Equal(ca.Bytes(), cb.Bytes())
}

func testTaskRoundTrip(t *testing.T, s TaskStore) {
	ctx := context.Background()
	full := fullTask("t-full")
	// A fresh task: most fields empty, no expiry.
	bare := &store.Task{ID: "t-bare", Tool: "x", Capabilities: json.RawMessage(`{}`), Status: mcp.TaskWorking,
		CreatedAt: taskBase, UpdatedAt: taskBase, OperationID: "00000000000000000000000000000000"}
	for _, want := range []*store.Task{full, bare} {
		if err := s.CreateTask(ctx, want, 0); err != nil {
			t.Fatal(err)
		}
		got, err := s.GetTask(ctx, want.ID)
		if err != nil {
			t.Fatal(err)
		}
		if d := sameTask(got, want); d != "" {
			t.Errorf("%s read back differently: %s", want.ID, d)
		}
	}
	// Updates that clear fields read back cleared.
	got, err := s.UpdateTask(ctx, full.ID, func(t *store.Task) error {
		t.Status, t.InputRequests, t.Responses, t.Result, t.Error = mcp.TaskCompleted, nil, nil, json.RawMessage(`{"content":[{"type":"text","text":"done"}]}`), nil
		t.UpdatedAt = taskBase.Add(time.Minute)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := fullTask(full.ID)
	want.Status, want.InputRequests, want.Responses, want.Result, want.Error = mcp.TaskCompleted, nil, nil, json.RawMessage(`{"content":[{"type":"text","text":"done"}]}`), nil
	want.UpdatedAt = taskBase.Add(time.Minute)
	if d := sameTask(got, want); d != "" {
		t.Errorf("UpdateTask returned: %s", d)
	}
	reread, err := s.GetTask(ctx, full.ID)
	if err != nil {
		t.Fatal(err)
	}
	if d := sameTask(reread, want); d != "" {
		t.Errorf("updated task read back differently: %s", d)
	}
}

func testTaskDuplicateID(t *testing.T, s TaskStore) {
	ctx := context.Background()
	if err := s.CreateTask(ctx, fullTask("t1"), 0); err != nil {
		t.Fatal(err)
	}
	other := fullTask("t1")
	other.Principal = "mallory"
	if err := s.CreateTask(ctx, other, 0); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("second CreateTask: %v, want ErrConflict", err)
	}
	if got, err := s.GetTask(ctx, "t1"); err != nil || got.Principal != "alice" {
		t.Fatalf("the first task was changed: %+v, %v", got, err)
	}
}

func testTaskNotFound(t *testing.T, s TaskStore) {
	ctx := context.Background()
	if _, err := s.GetTask(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetTask: %v", err)
	}
	called := false
	if _, err := s.UpdateTask(ctx, "nope", func(*store.Task) error { called = true; return nil }); !errors.Is(err, store.ErrNotFound) || called {
		t.Errorf("UpdateTask: %v (update called: %v)", err, called)
	}
}

// testTaskUpdateRefused: an update that returns an error writes nothing
// and its error comes back unchanged.
func testTaskUpdateRefused(t *testing.T, s TaskStore) {
	ctx := context.Background()
	if err := s.CreateTask(ctx, fullTask("t1"), 0); err != nil {
		t.Fatal(err)
	}
	refused := errors.New("refused by the caller")
	_, err := s.UpdateTask(ctx, "t1", func(t *store.Task) error {
		t.Status, t.Round = mcp.TaskFailed, 99
		return refused
	})
	if err != refused {
		t.Fatalf("UpdateTask error %v, want the update's own error", err)
	}
	got, err := s.GetTask(ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	if d := sameTask(got, fullTask("t1")); d != "" {
		t.Fatalf("a refused update wrote: %s", d)
	}
}

// testTaskConcurrentUpdates: concurrent updates are serialized; none is lost.
func testTaskConcurrentUpdates(t *testing.T, s TaskStore) {
	ctx := context.Background()
	task := fullTask("t1")
	task.Round = 0
	if err := s.CreateTask(ctx, task, 0); err != nil {
		t.Fatal(err)
	}
	const n = 16
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.UpdateTask(ctx, "t1", func(t *store.Task) error {
				t.Round++
				if t.Responses == nil {
					t.Responses = map[string]json.RawMessage{}
				}
				t.Responses[fmt.Sprint("k", i)] = json.RawMessage(`{"action":"accept"}`)
				return nil
			})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.GetTask(ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	if got.Round != n || len(got.Responses) != n+1 { // the fixture's "ok" plus one per update
		t.Fatalf("round %d, %d responses after %d concurrent updates", got.Round, len(got.Responses), n)
	}
}

// testTaskCopies: a caller changing what it wrote or read does not change
// the store.
func testTaskCopies(t *testing.T, s TaskStore) {
	ctx := context.Background()
	in := fullTask("t1")
	if err := s.CreateTask(ctx, in, 0); err != nil {
		t.Fatal(err)
	}
	in.Arguments[1], in.Responses["ok"] = 'X', nil
	out, err := s.GetTask(ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	out.Asked[0], out.InputRequests["to"] = 9, nil
	got, err := s.GetTask(ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	if d := sameTask(got, fullTask("t1")); d != "" {
		t.Fatalf("the stored task changed with the caller's copy: %s", d)
	}
}

func testTaskDeleteExpired(t *testing.T, s TaskStore) {
	ctx := context.Background()
	now := taskBase.Add(2 * time.Hour)
	tasks := map[string]time.Time{
		"expired":   now.Add(-time.Second),
		"at-now":    now,
		"later":     now.Add(time.Nanosecond * 1000),
		"no-expiry": {},
	}
	for id, exp := range tasks {
		task := fullTask(id)
		task.ExpiresAt = exp
		if err := s.CreateTask(ctx, task, 0); err != nil {
			t.Fatal(err)
		}
	}
	n, err := s.DeleteExpiredTasks(ctx, now)
	if err != nil || n != 2 {
		t.Fatalf("DeleteExpiredTasks = %d, %v; want 2", n, err)
	}
	for id := range tasks {
		_, err := s.GetTask(ctx, id)
		gone := errors.Is(err, store.ErrNotFound)
		if wantGone := id == "expired" || id == "at-now"; gone != wantGone {
			t.Errorf("%s: gone %v, want %v (%v)", id, gone, wantGone, err)
		}
	}
}

// liveTask is a task of principal with status, created at taskBase,
// expiring at expires (zero: never).
func liveTask(id, principal string, status mcp.TaskStatus, expires time.Time) *store.Task {
	task := fullTask(id)
	task.Principal, task.Status, task.ExpiresAt = principal, status, expires
	return task
}

// testTaskLiveLimit: CreateTask with a limit counts the principal's live
// tasks at the new task's CreatedAt (working or input_required, not
// expired; other users' do not count) and refuses one over it with a
// *store.TaskLimitError that writes nothing; limit <= 0 is none.
func testTaskLiveLimit(t *testing.T, s TaskStore) {
	ctx := context.Background()
	later := taskBase.Add(time.Hour)
	for _, task := range []*store.Task{
		liveTask("w1", "alice", mcp.TaskWorking, later),
		liveTask("w2", "alice", mcp.TaskWorking, time.Time{}),
		liveTask("i1", "alice", mcp.TaskInputRequired, later),
		liveTask("done", "alice", mcp.TaskCompleted, later),
		liveTask("failed", "alice", mcp.TaskFailed, later),
		liveTask("gone", "alice", mcp.TaskCancelled, later),
		liveTask("expired", "alice", mcp.TaskWorking, taskBase.Add(-time.Second)),
		liveTask("at-now", "alice", mcp.TaskInputRequired, taskBase), // expires as the new task is created
		liveTask("b1", "bob", mcp.TaskWorking, later),
		liveTask("b2", "bob", mcp.TaskWorking, later),
	} {
		if err := s.CreateTask(ctx, task, 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.CreateTask(ctx, liveTask("a4", "alice", mcp.TaskWorking, later), 4); err != nil {
		t.Fatalf("the 4th live task under a limit of 4: %v", err)
	}
	for _, tt := range []struct {
		id    string
		limit int
		live  int
	}{{"a5", 4, 4}, {"a6", 2, 4}, {"a7", 1, 4}} {
		err := s.CreateTask(ctx, liveTask(tt.id, "alice", mcp.TaskWorking, later), tt.limit)
		var over *store.TaskLimitError
		if !errors.As(err, &over) || !errors.Is(err, store.ErrTaskLimit) || over.Live != tt.live || over.Limit != tt.limit {
			t.Fatalf("%s under a limit of %d: %v, want a TaskLimitError with %d live", tt.id, tt.limit, err, tt.live)
		}
		if _, err := s.GetTask(ctx, tt.id); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("the refused task %s was stored: %v", tt.id, err)
		}
	}
	// Another user, and no limit.
	if err := s.CreateTask(ctx, liveTask("b3", "bob", mcp.TaskWorking, later), 4); err != nil {
		t.Fatalf("bob's 3rd task: %v", err)
	}
	for _, limit := range []int{0, -1} {
		if err := s.CreateTask(ctx, liveTask(fmt.Sprint("free", limit), "alice", mcp.TaskWorking, later), limit); err != nil {
			t.Fatalf("limit %d: %v", limit, err)
		}
	}
	// A task that ends frees room.
	if _, err := s.UpdateTask(ctx, "w1", func(t *store.Task) error { t.Status = mcp.TaskCompleted; return nil }); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateTask(ctx, liveTask("a8", "alice", mcp.TaskWorking, later), 6); err != nil {
		t.Fatalf("after a task ended: %v", err)
	}
}

// testTaskLiveLimitConcurrent: 50 creations at once by a user one task
// short of the limit store exactly one; another user's creations at the
// same time are not held back.
func testTaskLiveLimitConcurrent(t *testing.T, s TaskStore) {
	ctx := context.Background()
	const limit, racers = 5, 50
	later := taskBase.Add(time.Hour)
	for i := range limit - 1 {
		if err := s.CreateTask(ctx, liveTask(fmt.Sprint("a", i), "alice", mcp.TaskWorking, later), 0); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for range racers { // warm up: a pooled store has its connections open, so the creations really overlap
		wg.Go(func() { _, _ = s.GetTask(ctx, "a0") })
	}
	wg.Wait()
	var created, refused, bobs atomic.Int32
	for i := range racers {
		wg.Go(func() {
			err := s.CreateTask(ctx, liveTask(fmt.Sprint("race", i), "alice", mcp.TaskWorking, later), limit)
			switch {
			case err == nil:
				created.Add(1)
			case errors.Is(err, store.ErrTaskLimit):
				refused.Add(1)
			default:
				t.Error(err)
			}
		})
		if i < limit {
			wg.Go(func() {
				if err := s.CreateTask(ctx, liveTask(fmt.Sprint("bob", i), "bob", mcp.TaskWorking, later), limit); err != nil {
					t.Errorf("bob: %v", err)
				}
				bobs.Add(1)
			})
		}
	}
	wg.Wait()
	t.Logf("%d creations at once at %d of %d live tasks: %d created, %d refused", racers, limit-1, limit, created.Load(), refused.Load())
	if created.Load() != 1 || refused.Load() != racers-1 || bobs.Load() != limit {
		t.Fatalf("created %d, refused %d (want 1, %d); bob's %d (want %d)", created.Load(), refused.Load(), racers-1, bobs.Load(), limit)
	}
}
