package mcpserver

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcp-elicit/elicit/store"
)

// liveCount is how many tasks of principal st holds that are live now.
func liveCount(st *MemoryTaskStore, principal string, now time.Time) int {
	st.mu.Lock()
	defer st.mu.Unlock()
	n := 0
	for _, t := range st.tasks {
		if t.Principal == principal && !t.Status.Terminal() && (t.ExpiresAt.IsZero() || t.ExpiresAt.After(now)) {
			n++
		}
	}
	return n
}

// wantTaskLimit checks that r is the refusal of a task over the limit: a
// tool error saying how many tasks the user has and what frees room
// (the default TTL, an hour, among it), no task. It does not tell the
// user to cancel a task: they have no way to list them.
func wantTaskLimit(t *testing.T, r map[string]any, live int) {
	t.Helper()
	msg := text(r)
	if r["resultType"] != "complete" || r["isError"] != true || r["taskId"] != nil ||
		!strings.Contains(msg, fmt.Sprintf("you have %d tasks in progress", live)) ||
		!strings.Contains(msg, "when the client following it cancels it, or at the latest 1 hour after it started") || strings.Contains(msg, "you cancel") {
		t.Fatalf("over the limit: %v", r)
	}
}

// TestTaskLimitText: what the refusal says frees room, by TTL: the TTL
// in words when there is one, nothing about expiry without it.
func TestTaskLimitText(t *testing.T) {
	for _, c := range []struct {
		live int
		ttl  time.Duration
		want string
	}{
		{1, time.Hour, "you have 1 task in progress (working or waiting for your input), and 2 is the most one user may have at a time. A task ends when it finishes, when the client following it cancels it, or at the latest 1 hour after it started; then make the call again."},
		{2, 3 * time.Hour, "you have 2 tasks in progress (working or waiting for your input), and 2 is the most one user may have at a time. A task ends when it finishes, when the client following it cancels it, or at the latest 3 hours after it started; then make the call again."},
		{2, 90 * time.Minute, "or at the latest 90 minutes after it started;"},
		{2, time.Minute, "or at the latest 1 minute after it started;"},
		{2, 90 * time.Second, "or at the latest 1m30s after it started;"},
		{2, -1, "you have 2 tasks in progress (working or waiting for your input), and 2 is the most one user may have at a time. A task ends when it finishes or when the client following it cancels it; then make the call again."},
	} {
		got := taskLimitText(&store.TaskLimitError{Live: c.live, Limit: 2}, c.ttl)
		if !strings.Contains(got, c.want) || !strings.HasPrefix(got, "Not started: ") {
			t.Errorf("TTL %v: %q\nwant it to hold %q", c.ttl, got, c.want)
		}
	}
}

// TestTaskLimitDefault: with the default options one user may have 100
// live tasks; the 101st call gets a tool error and no task is created,
// while another user still starts one.
func TestTaskLimitDefault(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := NewMemoryTaskStore()
		s, _ := taskServer(t, &TaskOptions{Store: st})
		alice := rpc{s, "alice"}
		for range 100 {
			startTask(t, alice, "two_questions", `{}`) // each waits for input: live
		}
		synctest.Wait()
		r := mustCall(t, alice, toolCallArgs("two_questions", `{}`, tasksCaps))
		wantTaskLimit(t, r, 100)
		if n := liveCount(st, "alice", time.Now()); n != 100 {
			t.Fatalf("alice has %d live tasks, want 100", n)
		}
		startTask(t, rpc{s, "bob"}, "two_questions", `{}`)
		s.WaitTasks()
	})
}

// TestTaskLimit: TaskOptions.MaxTasksPerUser bounds a user's live tasks,
// TaskRequired tools too; a task that ends (cancelled, completed) makes
// room; a negative limit is none.
func TestTaskLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := NewMemoryTaskStore()
		s, _ := taskServer(t, &TaskOptions{Store: st, MaxTasksPerUser: 3})
		alice := rpc{s, "alice"}
		var ids []string
		for range 3 {
			ids = append(ids, startTask(t, alice, "two_questions", `{}`))
		}
		synctest.Wait()
		for _, tool := range []string{"two_questions", "required"} {
			wantTaskLimit(t, mustCall(t, alice, toolCallArgs(tool, `{}`, tasksCaps)), 3)
		}
		startTask(t, rpc{s, "bob"}, "two_questions", `{}`) // another user's room is their own
		mustCall(t, alice, taskReq("tasks/cancel", ids[0], tasksCaps, ""))
		startTask(t, alice, "two_questions", `{}`)
		wantTaskLimit(t, mustCall(t, alice, toolCallArgs("two_questions", `{}`, tasksCaps)), 3)
		mustUpdate(t, alice, ids[1])(`{"a":` + yes + `,"b":` + yes + `}`)
		synctest.Wait()
		if g := getTask(t, alice, ids[1]); g["status"] != "completed" {
			t.Fatalf("the answered task: %v", g)
		}
		startTask(t, alice, "two_questions", `{}`)
		// A call that is no task is not counted.
		if r := mustCall(t, alice, toolCall("sleepy", `{}`, "")); r["isError"] == true || text(r) != "slept in call" {
			t.Fatalf("a call that is no task: %v", r)
		}
		s.WaitTasks()
	})
	synctest.Test(t, func(t *testing.T) {
		s, _ := taskServer(t, &TaskOptions{MaxTasksPerUser: -1})
		for range 150 {
			startTask(t, rpc{s, "alice"}, "two_questions", `{}`)
		}
		s.WaitTasks()
	})
}

// TestTaskLimitConcurrent: 50 calls at once by a user one task short of
// the limit start one task; the others get the tool error.
func TestTaskLimitConcurrent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := NewMemoryTaskStore()
		s, _ := taskServer(t, &TaskOptions{Store: st, MaxTasksPerUser: 5})
		alice := rpc{s, "alice"}
		for range 4 {
			startTask(t, alice, "two_questions", `{}`)
		}
		var created, refused atomic.Int32
		var wg sync.WaitGroup
		for range 50 {
			wg.Go(func() {
				r, err := alice.call(t, toolCallArgs("two_questions", `{}`, tasksCaps))
				switch {
				case err != nil:
					t.Error(err)
				case r["resultType"] == "task":
					created.Add(1)
				case r["isError"] == true:
					refused.Add(1)
				}
			})
		}
		wg.Wait()
		synctest.Wait()
		t.Logf("50 calls at once at 4 of 5 live tasks: %d tasks created, %d refused", created.Load(), refused.Load())
		if created.Load() != 1 || refused.Load() != 49 || liveCount(st, "alice", time.Now()) != 5 {
			t.Fatalf("created %d, refused %d, live %d; want 1, 49, 5", created.Load(), refused.Load(), liveCount(st, "alice", time.Now()))
		}
		s.WaitTasks()
	})
}

// TestMemoryTaskStoreDropsExpired: without SweepTasks, the default store
// drops expired tasks as new ones come, so it holds at most about twice
// the tasks that have not expired; SweepTasks still deletes them.
func TestMemoryTaskStoreDropsExpired(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := NewMemoryTaskStore()
		var now atomic.Int64
		now.Store(time.Date(2026, 7, 28, 9, 0, 0, 0, time.UTC).UnixNano())
		s, _ := taskServer(t, &TaskOptions{Store: st, TTL: time.Minute, Now: func() time.Time { return time.Unix(0, now.Load()) }})
		size := func() int {
			st.mu.Lock()
			defer st.mu.Unlock()
			return len(st.tasks)
		}
		const wave = 300
		most := 0
		for w := range 5 { // each wave expires before the next
			for i := range wave {
				startTask(t, rpc{s, fmt.Sprint("user", w, "-", i)}, "two_questions", `{}`)
				most = max(most, size())
			}
			synctest.Wait()
			now.Add(int64(2 * time.Minute))
		}
		t.Logf("%d tasks in %d waves, each expired before the next: the store held at most %d", 5*wave, 5, most)
		if most > 2*wave+memorySweepFloor {
			t.Fatalf("the store held %d tasks, want at most %d", most, 2*wave+memorySweepFloor)
		}
		n, err := s.SweepTasks(context.Background())
		if err != nil || n == 0 || size() != 0 {
			t.Fatalf("SweepTasks: %d, %v; %d left", n, err, size())
		}
		s.WaitTasks()
	})
}
