package mcpserver

import (
	"context"
	"sync"
	"time"

	"github.com/mcp-elicit/elicit/store"
)

// TaskStore keeps the tasks of the tasks extension (EnableTasks), as
// store.Task records. It is defined here, where it is used; MemoryTaskStore is one, and a durable
// store (SQLite, PostgreSQL) implements the same four methods so that any
// instance sharing it can answer tasks/get, tasks/update and tasks/cancel
// and a restart loses no task.
//
// The contract every implementation keeps:
//
//   - CreateTask stores a copy of t. store.ErrConflict (possibly wrapped)
//     when the id is taken; nothing is written then.
//   - GetTask returns a copy of the record, or store.ErrNotFound (possibly
//     wrapped). It does not filter by user or expiry: the server does
//     (another user's task and an expired one read as unknown).
//   - UpdateTask reads the record, calls update on a copy and stores the
//     copy when update returns nil, atomically: no other UpdateTask of the
//     same id interleaves (a transaction with a row lock, or a mutex), so
//     concurrent updates are serialized and each sees the previous one's
//     result. It returns the stored record. When update returns an error,
//     nothing is written and UpdateTask returns that error unchanged;
//     store.ErrNotFound when the id is absent. update may be called more
//     than once (a retried transaction) and must only change its argument.
//   - DeleteExpiredTasks deletes every record whose ExpiresAt is set and
//     not after now, and returns how many it deleted.
//
// Records round-trip exactly: every field written is read back equal
// (times to the microsecond, in UTC; nil and empty maps may read back
// either way). The server relies on it for LeaseUntil, which it compares
// for equality: it is the token of a run's lease. Other errors mean the store could not be reached; the
// client then gets a retryable error when they say so (ErrUnavailable).
type TaskStore interface {
	CreateTask(ctx context.Context, t *store.Task) error
	GetTask(ctx context.Context, id string) (*store.Task, error)
	UpdateTask(ctx context.Context, id string, update func(*store.Task) error) (*store.Task, error)
	DeleteExpiredTasks(ctx context.Context, now time.Time) (int, error)
}

// MemoryTaskStore is a TaskStore in this process's memory: tasks live as
// long as the process, and only this instance sees them. For one
// instance, tests and examples; several instances need a shared store.
type MemoryTaskStore struct {
	mu    sync.Mutex
	tasks map[string]*store.Task
}

// NewMemoryTaskStore returns an empty MemoryTaskStore.
func NewMemoryTaskStore() *MemoryTaskStore {
	return &MemoryTaskStore{tasks: map[string]*store.Task{}}
}

// CreateTask implements TaskStore.
func (m *MemoryTaskStore) CreateTask(_ context.Context, t *store.Task) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.tasks[t.ID]; ok {
		return store.ErrConflict
	}
	m.tasks[t.ID] = t.Clone()
	return nil
}

// GetTask implements TaskStore.
func (m *MemoryTaskStore) GetTask(_ context.Context, id string) (*store.Task, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.tasks[id]
	if !ok {
		return nil, store.ErrNotFound
	}
	return t.Clone(), nil
}

// UpdateTask implements TaskStore.
func (m *MemoryTaskStore) UpdateTask(_ context.Context, id string, update func(*store.Task) error) (*store.Task, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.tasks[id]
	if !ok {
		return nil, store.ErrNotFound
	}
	c := t.Clone()
	if err := update(c); err != nil {
		return nil, err
	}
	c.ID = id
	m.tasks[id] = c.Clone()
	return c, nil
}

// DeleteExpiredTasks implements TaskStore.
func (m *MemoryTaskStore) DeleteExpiredTasks(_ context.Context, now time.Time) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for id, t := range m.tasks {
		if !t.ExpiresAt.IsZero() && !t.ExpiresAt.After(now) {
			delete(m.tasks, id)
			n++
		}
	}
	return n, nil
}

func cloneBytes[T ~[]byte](b T) T {
	if b == nil {
		return nil
	}
	return append(T(nil), b...)
}
