package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpserver"
	"github.com/mcp-elicit/elicit/store"
)

func TestSealingKey(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	key := func(id string, created, activates time.Time) *store.StateKey {
		return &store.StateKey{ID: id, Sealed: []byte{1}, CreatedAt: created, ActivatesAt: activates}
	}
	// Newest first, as StateKeys returns them.
	ring := []*store.StateKey{
		key("c", t0.Add(time.Minute), t0.Add(time.Hour)),
		key("b", t0, time.Time{}), // zero: seals from creation
		key("a", t0.Add(-time.Hour), time.Time{}),
	}
	allPending := []*store.StateKey{key("y", t0, t0.Add(2*time.Hour)), key("x", t0, t0.Add(time.Hour))}
	tests := []struct {
		name string
		keys []*store.StateKey
		now  time.Time
		want int
	}{
		{"empty", nil, t0, -1},
		{"before c activates", ring, t0.Add(59 * time.Minute), 1},
		{"when c activates", ring, t0.Add(time.Hour), 0},
		{"before b", ring, t0.Add(-time.Second), 2},
		{"all pending: the oldest", allPending, t0, 1},
		{"an older key activating later is passed over", []*store.StateKey{key("n", t0, time.Time{}), key("o", t0, t0.Add(time.Hour))}, t0.Add(2 * time.Hour), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := store.SealingKey(tt.keys, tt.now); got != tt.want {
				t.Fatalf("SealingKey = %d, want %d", got, tt.want)
			}
		})
	}
}

func ExampleSealingKey() {
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	ring := []*store.StateKey{ // newest first
		{ID: "k2", Sealed: []byte{1}, CreatedAt: t0, ActivatesAt: t0.Add(2 * time.Minute)},
		{ID: "k1", Sealed: []byte{1}, CreatedAt: t0.Add(-24 * time.Hour)},
	}
	for _, at := range []time.Duration{0, 2 * time.Minute} {
		fmt.Printf("+%v: %s seals\n", at, ring[store.SealingKey(ring, t0.Add(at))].ID)
	}
	// Output:
	// +0s: k1 seals
	// +2m0s: k2 seals
}

// CreateTask with a limit refuses a user's task past that many live ones
// (working or input_required, not expired) with a *store.TaskLimitError;
// nothing is written. Every store keeps this contract (here the
// in-memory one mcpserver has).
func ExampleTaskLimitError() {
	ctx := context.Background()
	st := mcpserver.NewMemoryTaskStore()
	now := time.Date(2026, 7, 28, 9, 0, 0, 0, time.UTC)
	task := func(id string, status mcp.TaskStatus) *store.Task {
		return &store.Task{ID: id, Principal: "alice", Tool: "export", Status: status, CreatedAt: now, UpdatedAt: now,
			ExpiresAt: now.Add(time.Hour), OperationID: id}
	}
	for i, status := range []mcp.TaskStatus{mcp.TaskCompleted, mcp.TaskWorking, mcp.TaskInputRequired} {
		if err := st.CreateTask(ctx, task(fmt.Sprint("t", i), status), 2); err != nil {
			fmt.Println(err)
		}
	}
	err := st.CreateTask(ctx, task("t3", mcp.TaskWorking), 2)
	var over *store.TaskLimitError
	if errors.As(err, &over) {
		fmt.Println(over.Live, over.Limit, errors.Is(err, store.ErrTaskLimit))
	}
	_, err = st.GetTask(ctx, "t3")
	fmt.Println(errors.Is(err, store.ErrNotFound))
	// Output:
	// 2 2 true
	// true
}

// A task is live while it works or waits for input and has not expired;
// live tasks count towards a user's limit (CreateTask).
func ExampleTask_Live() {
	now := time.Date(2026, 7, 28, 9, 0, 0, 0, time.UTC)
	for _, t := range []*store.Task{
		{Status: mcp.TaskInputRequired, ExpiresAt: now.Add(time.Minute)},
		{Status: mcp.TaskWorking}, // no expiry
		{Status: mcp.TaskWorking, ExpiresAt: now},
		{Status: mcp.TaskCompleted, ExpiresAt: now.Add(time.Minute)},
	} {
		fmt.Println(t.Status, t.Live(now))
	}
	// Output:
	// input_required true
	// working true
	// working false
	// completed false
}
